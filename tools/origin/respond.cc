// lb-origin's answers: which behaviour a request asked for (tools/origin/main.cc lists them) and
// the response head and body that follow from it. OriginConn members; tools/origin/conn.cc
// has the rest of the handler.
#include <llhttp.h>
#include <strings.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cstring>
#include <optional>
#include <string_view>

#include "lb/core/http_fields.h"
#include "lb/core/strings.h"
#include "lb/http/status.h"
#include "tools/origin/conn.h"

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

void OriginConn::onRequest(HttpServerConn& conn, const HttpRequestHead& head) {
  ++exchanges_;
  shared_->requests_served.fetch_add(1);
  ex_ = Exchange{};
  ex_.method = head.method();
  ex_.url = head.target();
  for (uint32_t i = 0; i < head.headerCount(); ++i)
    ex_.headers.emplace_back(head.headerName(i), head.headerValue(i));
  ex_.method_code = head.methodCode();
  ex_.http_major = head.httpMajor();
  ex_.http_minor = head.httpMinor();
  ex_.has_body = head.chunked() || head.contentLength() > 0;
  ex_.chunked_in = head.chunked();
  ex_.content_length = head.contentLength();
  ex_.upgrade = head.upgrade();
  if (param(ex_.url, ex_.headers, "close") == "1") {
    conn.reset();
    return;
  }
  uint64_t delay_ms =
      std::min(parseU64(param(ex_.url, ex_.headers, "delay_ms")).value_or(0), kMaxDelayMs);
  if (delay_ms > 0) {
    conn.pause();   // the body too waits for the answer
    conn.startTimer(delay_ms);   // onTimer answers
    return;
  }
  startResponse(conn);
}

void OriginConn::startResponse(HttpServerConn& conn) {
  Exchange& ex = ex_;
  const auto& url = ex.url;
  std::string_view path = lb::targetPath(url);
  bool http10 = ex.http_major == 1 && ex.http_minor == 0;
  bool is_head = ex.method_code == HTTP_HEAD;
  bool is_connect = ex.method_code == HTTP_CONNECT;

  if (const std::string* expect = findHeaderIn(ex.headers, "expect");
      expect != nullptr && lb::equalsNoCase(*expect, "100-continue") && ex.has_body && !http10)
    conn.write("HTTP/1.1 100 Continue\r\n\r\n");

  std::string head;
  auto common = [&] {
    head += "X-Backend: " + shared_->name + "\r\nX-Connection-Id: " + std::to_string(id_) +
            "\r\nX-Request-Number: " + std::to_string(exchanges_) + "\r\n";
    for (std::string_view name : kEchoed)
      for (const auto& [k, v] : ex.headers)
        if (lb::equalsNoCase(k, name))
          head.append("X-Echo-").append(name).append(": ").append(v).append("\r\n");
  };

  if (ex.upgrade) {
    const std::string* upgrade = findHeaderIn(ex.headers, "upgrade");
    if (upgrade != nullptr && strcasestr(upgrade->c_str(), "websocket") != nullptr &&
        !is_connect) {
      head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n";
      common();
      conn.write(head + "\r\n");
      ex.answer_done = true;
      conn.startTunnel();   // every byte after the request is echoed raw from now on
      return;
    }
    // Other upgrades and CONNECT: answered, then the connection ends (the server decided
    // so; conn.keepAlive() is false).
  }

  const int sticky = stickyStatus().load(std::memory_order_relaxed);
  if (auto set = parseU64(param(url, ex.headers, "set_status")))
    stickyStatus().store(*set >= 200 && *set <= 599 ? static_cast<int>(*set) : 0,
                         std::memory_order_relaxed);
  int status = static_cast<int>(
      parseU64(param(url, ex.headers, "status")).value_or(sticky != 0 ? sticky : 200));
  if (status < 200 || status > 599) status = 200;
  if (is_connect) status = 405;
  bool no_body = is_head || status == 204 || status == 304;
  bool close_after_headers = param(url, ex.headers, "close_after_headers") == "1";
  if (close_after_headers) conn.closeAfterAnswer();

  std::string body;
  uint64_t length = 0;
  if (path == "/stats") {
    body = "{\"name\":\"" + shared_->name + "\",\"connections_accepted\":" +
           std::to_string(shared_->connections_accepted.load()) + ",\"connections_active\":" +
           std::to_string(shared_->connections_active.load()) + ",\"requests_served\":" +
           std::to_string(shared_->requests_served.load()) + "}\n";
  } else if (path == "/headers") {
    body = ex.method + " " + url + " HTTP/" + std::to_string(ex.http_major) + "." +
           std::to_string(ex.http_minor) + "\r\n";
    for (const auto& [k, v] : ex.headers) body += k + ": " + v + "\r\n";
  } else if (path == "/bytes") {
    ex.mode = Mode::kBytes;
    ex.bytes_left = parseU64(param(url, ex.headers, "n")).value_or(0);
    ex.chunked_out = param(url, ex.headers, "chunked") == "1" && !http10;
  } else if (ex.has_body && !no_body && !close_after_headers) {
    ex.mode = Mode::kEcho;
    ex.chunked_out = ex.chunked_in;
  } else {
    body = shared_->name + "\n";
  }
  length = ex.mode == Mode::kBytes ? ex.bytes_left
         : ex.mode == Mode::kEcho  ? ex.content_length
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
  if (!conn.keepAlive()) head += "Connection: close\r\n";
  else if (http10) head += "Connection: keep-alive\r\n";
  head += "\r\n";

  if (close_after_headers) {
    conn.write(std::move(head));
    finishResponse(conn);   // and closes: the promised body never comes, a truncation
    return;
  }
  if (no_body) {
    conn.write(std::move(head));
    ex.mode = Mode::kFixed;   // a request body is read and dropped
    finishResponse(conn);
    return;
  }
  switch (ex.mode) {
    case Mode::kFixed:
      conn.write(head + body);
      finishResponse(conn);
      break;
    case Mode::kEcho:
      conn.write(std::move(head));   // the body follows from onBody, the end from onRequestComplete
      break;
    case Mode::kBytes:
      conn.write(std::move(head));
      sendBytesChunk(conn);
      break;
  }
}

void OriginConn::sendBytesChunk(HttpServerConn& conn) {
  if (ex_.bytes_left == 0) {
    if (ex_.chunked_out) conn.write("0\r\n\r\n");
    finishResponse(conn);
    return;
  }
  size_t n = static_cast<size_t>(std::min<uint64_t>(ex_.bytes_left, kBytesChunk));
  ex_.bytes_left -= n;
  std::string_view chunk(bytesPattern(), n);
  if (ex_.chunked_out) conn.write(hexSize(n) + "\r\n", chunk, "\r\n");
  else conn.write({}, chunk, {});
}

}  // namespace lb::origin
