// lb-origin's answers: which behaviour a request asked for (tools/origin/main.cc lists them) and
// the response head and body that follow from it. OriginConn members; the connection
// mechanics are in tools/origin/conn.cc.
#include <strings.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cstring>
#include <optional>
#include <string_view>

#include "tools/origin/conn.h"
#include "lb/core/http_fields.h"
#include "lb/core/strings.h"

namespace lb::origin {
namespace {

constexpr size_t kBytesChunk = 65536;             // /bytes write size; a multiple of 16
constexpr uint64_t kMaxDelayMs = 60000;

// Request headers echoed back as X-Echo-<Name>, so a test can see what a proxy forwarded.
constexpr std::array<std::string_view, 13> kEchoed = {
    "Host", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Real-IP",
    "Forwarded", "Via", "Connection", "Upgrade", "TE", "Keep-Alive", "Proxy-Connection",
    "X-Request-Id"};

// /bytes content: byte i of the body is "0123456789abcdef"[i % 16], so a client can check
// every byte without the server holding n of them.
const char* bytesPattern() {
  static const std::array<char, kBytesChunk> pattern = [] {
    std::array<char, kBytesChunk> p{};
    for (size_t i = 0; i < p.size(); ++i) p[i] = "0123456789abcdef"[i % 16];
    return p;
  }();
  return pattern.data();
}

std::optional<uint64_t> parseU64(std::optional<std::string_view> s) {
  if (!s || s->empty()) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
  if (ec != std::errc() || end != s->data() + s->size()) return std::nullopt;
  return v;
}

// A behaviour switch: query parameter `name`, else request header `X-Origin-<name>` with '_'
// read as '-' (so X-Origin-Delay-Ms: 50 works like ?delay_ms=50).
std::optional<std::string_view> param(std::string_view url,
                                      const std::vector<std::pair<std::string, std::string>>& headers,
                                      std::string_view name) {
  if (auto q = lb::findQueryParam(url, name)) return q;
  std::string header = "x-origin-";
  for (char ch : name) header.push_back(ch == '_' ? '-' : ch);
  for (const auto& [k, v] : headers)
    if (lb::equalsNoCase(k, header)) return std::string_view(v);
  return std::nullopt;
}

// set_status=N (N in 200..599, or 0): from the next request on, every request of this process
// that names no status=N of its own is answered N; 0 goes back to 200. The request that sets
// it is answered as before. For tests of passive health and panic: one origin that fails
// every request, health checks included, switched on and off from outside the proxy.
std::atomic<int>& stickyStatus() {
  static std::atomic<int> status{0};
  return status;
}

const std::string* findHeaderIn(const std::vector<std::pair<std::string, std::string>>& headers,
                                std::string_view name) {
  for (const auto& h : headers)
    if (lb::equalsNoCase(h.first, name)) return &h.second;
  return nullptr;
}

}  // namespace

const char* reasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Status";
  }
}

std::string hexSize(uint64_t n) {
  char buf[17];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), n, 16);
  (void)ec;
  return std::string(buf, end);
}

int OriginConn::headersComplete() {
  Exchange& ex = ex_;
  ex.head_done = true;
  ++exchanges_;
  shared_->requests_served.fetch_add(1);
  ex.keep_alive = llhttp_should_keep_alive(&parser_) != 0;
  ex.is_head = parser_.method == HTTP_HEAD;
  if (param(ex.url, ex.headers, "close") == "1") {
    close(true);
    return HPE_PAUSED;
  }
  ex.delay_ms = std::min(parseU64(param(ex.url, ex.headers, "delay_ms")).value_or(0), kMaxDelayMs);
  if (ex.delay_ms > 0 && !ex.delayed) {
    uv_timer_start(&timer_, onTimer, ex.delay_ms, 0);
    return HPE_PAUSED;   // resumed by onTimer
  }
  startResponse();
  return closing_ ? HPE_PAUSED : 0;
}

void OriginConn::onTimer(uv_timer_t* t) {
  auto* c = static_cast<OriginConn*>(t->data);
  if (c->closing_) return;
  if (c->lingering_) {
    c->close();
    return;
  }
  c->ex_.delayed = true;
  c->startResponse();
  if (c->closing_ || c->close_after_writes_) return;
  c->paused_ = false;
  llhttp_resume(&c->parser_);
  c->drive();
}

void OriginConn::startResponse() {
  Exchange& ex = ex_;
  ex.response_started = true;
  const auto& url = ex.url;
  std::string_view path = lb::targetPath(url);
  bool has_body = (parser_.flags & F_CHUNKED) != 0 ||
                  ((parser_.flags & F_CONTENT_LENGTH) != 0 && parser_.content_length > 0);
  bool http10 = parser_.http_major == 1 && parser_.http_minor == 0;

  if (const std::string* expect = findHeaderIn(ex.headers, "expect");
      expect != nullptr && lb::equalsNoCase(*expect, "100-continue") && has_body && !http10)
    write("HTTP/1.1 100 Continue\r\n\r\n");

  std::string head;
  auto common = [&] {
    head += "X-Backend: " + shared_->name + "\r\nX-Connection-Id: " + std::to_string(id_) +
            "\r\nX-Request-Number: " + std::to_string(exchanges_) + "\r\n";
    for (std::string_view name : kEchoed)
      for (const auto& [k, v] : ex.headers)
        if (lb::equalsNoCase(k, name))
          head.append("X-Echo-").append(name).append(": ").append(v).append("\r\n");
  };

  if (parser_.upgrade) {
    const std::string* upgrade = findHeaderIn(ex.headers, "upgrade");
    if (upgrade != nullptr && strcasestr(upgrade->c_str(), "websocket") != nullptr &&
        parser_.method != HTTP_CONNECT) {
      ex.websocket = true;
      ex.mode = Mode::kTunnel;
      head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n";
      common();
      write(head + "\r\n");
      ex.response_done = true;
      return;
    }
    ex.keep_alive = false;   // other upgrades and CONNECT: answered, then the connection ends
  }

  const int sticky = stickyStatus().load(std::memory_order_relaxed);
  if (auto set = parseU64(param(url, ex.headers, "set_status")))
    stickyStatus().store(*set >= 200 && *set <= 599 ? static_cast<int>(*set) : 0,
                         std::memory_order_relaxed);
  int status = static_cast<int>(
      parseU64(param(url, ex.headers, "status")).value_or(sticky != 0 ? sticky : 200));
  if (status < 200 || status > 599) status = 200;
  if (parser_.method == HTTP_CONNECT) status = 405;
  bool no_body = ex.is_head || status == 204 || status == 304;
  bool close_after_headers = param(url, ex.headers, "close_after_headers") == "1";
  if (close_after_headers) ex.keep_alive = false;

  std::string body;
  uint64_t length = 0;
  if (path == "/stats") {
    body = "{\"name\":\"" + shared_->name + "\",\"connections_accepted\":" +
           std::to_string(shared_->connections_accepted.load()) + ",\"connections_active\":" +
           std::to_string(shared_->connections_active.load()) + ",\"requests_served\":" +
           std::to_string(shared_->requests_served.load()) + "}\n";
  } else if (path == "/headers") {
    body = std::string(llhttp_method_name(static_cast<llhttp_method_t>(parser_.method))) + " " +
           url + " HTTP/" + std::to_string(parser_.http_major) + "." +
           std::to_string(parser_.http_minor) + "\r\n";
    for (const auto& [k, v] : ex.headers) body += k + ": " + v + "\r\n";
  } else if (path == "/bytes") {
    ex.mode = Mode::kBytes;
    ex.bytes_left = parseU64(param(url, ex.headers, "n")).value_or(0);
    ex.chunked_out = param(url, ex.headers, "chunked") == "1" && !http10;
  } else if (has_body && !no_body && !close_after_headers) {
    ex.mode = Mode::kEcho;
    ex.chunked_out = (parser_.flags & F_CHUNKED) != 0;
  } else {
    body = shared_->name + "\n";
  }
  length = ex.mode == Mode::kBytes ? ex.bytes_left
         : ex.mode == Mode::kEcho  ? parser_.content_length
                                   : body.size();

  head = "HTTP/1.1 " + std::to_string(status) + " " + reasonPhrase(status) + "\r\n";
  common();
  if (ex.mode == Mode::kEcho && !ex.chunked_out)
    head += "X-Body-Bytes: " + std::to_string(length) + "\r\n";
  if (status != 204 && status != 304) {
    if (ex.chunked_out) {
      head += "Transfer-Encoding: chunked\r\n";
      if (ex.mode == Mode::kEcho) head += "Trailer: X-Body-Bytes\r\n";
    } else {
      head += "Content-Length: " + std::to_string(length) + "\r\n";
    }
  }
  if (!ex.keep_alive) head += "Connection: close\r\n";
  else if (http10) head += "Connection: keep-alive\r\n";
  head += "\r\n";

  if (close_after_headers) {
    write(std::move(head));
    ex.response_done = true;
    closeAfterWrites();   // the promised body never comes: the client sees a truncation
    return;
  }
  if (no_body) {
    write(std::move(head));
    if (ex.mode != Mode::kEcho) ex.mode = Mode::kFixed;
    ex.response_done = true;
    return;
  }
  switch (ex.mode) {
    case Mode::kFixed:
      write(head + body);
      ex.response_done = true;
      break;
    case Mode::kEcho:
      write(std::move(head));   // the body follows from onBody, the end from onMessageComplete
      break;
    case Mode::kBytes:
      write(std::move(head));
      sendBytesChunk();
      break;
    case Mode::kTunnel:
      break;
  }
}

void OriginConn::sendBytesChunk() {
  if (closing_) return;
  if (ex_.bytes_left == 0) {
    if (ex_.chunked_out) write("0\r\n\r\n");
    finishResponse();
    return;
  }
  size_t n = static_cast<size_t>(std::min<uint64_t>(ex_.bytes_left, kBytesChunk));
  ex_.bytes_left -= n;
  if (ex_.chunked_out) writeStatic(bytesPattern(), n, hexSize(n) + "\r\n", "\r\n", true);
  else writeStatic(bytesPattern(), n, {}, {}, true);
}

void OriginConn::finishResponse() {
  ex_.response_done = true;
  resumeIfReady();
}
}  // namespace lb::origin
