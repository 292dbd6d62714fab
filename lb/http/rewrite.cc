#include "lb/http/rewrite.h"

#include <array>
#include <cstring>
#include <iterator>
#include <string>

#include "lb/core/strings.h"
#include "lb/http/status.h"

namespace lb {

void HeadWriter::put(std::string_view s) noexcept {
  if (overflow_ || s.size() > cap_ - len_) {
    overflow_ = true;
    return;
  }
  memcpy(out_ + len_, s.data(), s.size());
  len_ += s.size();
}

void HeadWriter::putUint(uint64_t v) noexcept {
  char tmp[24];
  int n = 0;
  do {
    tmp[sizeof tmp - 1 - n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  put({tmp + sizeof tmp - n, static_cast<size_t>(n)});
}

bool ConnectionTokens::has(std::string_view name) const noexcept {
  for (int i = 0; i < count; ++i)
    if (equalsNoCase(tok[i], name)) return true;
  return false;
}

namespace {

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

void putVersion(HeadWriter& w, const ParsedHead& h) {
  char v[8] = {'H', 'T', 'T', 'P', '/', static_cast<char>('0' + h.http_major % 10), '.',
               static_cast<char>('0' + h.http_minor % 10)};
  w.put({v, 8});
}

bool isNamed(std::string_view name, std::string_view want) { return equalsNoCase(name, want); }

// A header the message cannot lose on the way: its framing (RFC 9112 §6) and, for a request,
// Host. A Connection header that names one ("Connection: content-length") is a request to drop
// it that no proxy may grant: the body would then reach the next hop as another message.
bool mustPass(std::string_view n) {
  switch (n.size()) {
    case 4: return isNamed(n, "host");
    case 14: return isNamed(n, "content-length");
    case 17: return isNamed(n, "transfer-encoding");
    default: return false;
  }
}

// Headers that stop at lb: hop-by-hop by definition, or named in Connection (framing excepted).
bool dropped(std::string_view name, const ConnectionTokens& conn) {
  return isHopByHop(name) || (conn.has(name) && !mustPass(name));
}

}  // namespace

ConnectionTokens connectionTokens(const ParsedHead& head, const char* base) noexcept {
  ConnectionTokens t;
  for (uint32_t i = 0; i < head.header_count; ++i) {
    if (!isNamed(head.headers[i].name.in(base), "connection")) continue;
    std::string_view v = head.headers[i].value.in(base);
    while (!v.empty()) {
      size_t comma = v.find(',');
      std::string_view tok = trim(v.substr(0, comma));
      if (!tok.empty()) {
        if (t.count < ConnectionTokens::kMax)
          t.tok[t.count++] = tok;
        else
          t.overflow = true;
      }
      if (comma == std::string_view::npos) break;
      v.remove_prefix(comma + 1);
    }
  }
  return t;
}

bool isHopByHop(std::string_view n) noexcept {
  switch (n.size()) {
    case 2: return isNamed(n, "te");
    case 7: return isNamed(n, "trailer") || isNamed(n, "upgrade");
    case 10: return isNamed(n, "connection") || isNamed(n, "keep-alive");
    case 16: return isNamed(n, "proxy-connection");
    default: return false;
  }
}

HttpRequestView requestView(const ParsedHead& head, const char* base,
                            HttpHeader* headers) noexcept {
  for (uint32_t i = 0; i < head.header_count; ++i)
    headers[i] = {head.headers[i].name.in(base), head.headers[i].value.in(base)};
  return {head.method.in(base), head.url.in(base), {headers, head.header_count}};
}

size_t writeUpstreamRequest(const ParsedHead& head, const char* base,
                            const UpstreamRequestOptions& opt, char* out, size_t cap) noexcept {
  HeadWriter w(out, cap);
  ConnectionTokens conn = connectionTokens(head, base);
  if (conn.overflow) return 0;   // a header it names could pass: never forward that
  w.put(head.method.in(base));
  w.put(" ");
  w.put(head.url.in(base));
  w.put(" ");
  putVersion(w, head);
  w.put("\r\n");
  std::string_view upgrade_value;
  bool xff_done = false;
  for (uint32_t i = 0; i < head.header_count; ++i) {
    std::string_view name = head.headers[i].name.in(base);
    std::string_view value = head.headers[i].value.in(base);
    if (opt.upgrade && isNamed(name, "upgrade")) {
      upgrade_value = value;
      continue;
    }
    if (dropped(name, conn) || isNamed(name, "x-forwarded-proto")) continue;
    if (isNamed(name, "x-forwarded-for")) {
      // Several X-Forwarded-For lines form one list (RFC 9110 §5.3): the first carries the
      // merged list, later ones are folded into it.
      if (xff_done) continue;
      xff_done = true;
      w.put("X-Forwarded-For: ");
      bool first = true;
      for (uint32_t j = i; j < head.header_count; ++j) {
        if (!isNamed(head.headers[j].name.in(base), "x-forwarded-for")) continue;
        if (!first) w.put(", ");
        w.put(trim(head.headers[j].value.in(base)));
        first = false;
      }
      w.put(", ");
      w.put(opt.client_ip);
      w.put("\r\n");
      continue;
    }
    w.put(name);
    w.put(": ");
    w.put(value);
    w.put("\r\n");
  }
  if (!xff_done) {
    w.put("X-Forwarded-For: ");
    w.put(opt.client_ip);
    w.put("\r\n");
  }
  w.put("X-Forwarded-Proto: http\r\n");
  if (opt.upgrade) {
    w.put("Connection: upgrade\r\nUpgrade: ");
    w.put(upgrade_value);
    w.put("\r\n");
  } else if (head.http_major == 1 && head.http_minor == 0) {
    w.put("Connection: keep-alive\r\n");
  }
  w.put("\r\n");
  return w.overflow() ? 0 : w.size();
}

size_t writeDownstreamResponse(const ParsedHead& head, const char* base,
                               const DownstreamResponseOptions& opt, char* out,
                               size_t cap) noexcept {
  HeadWriter w(out, cap);
  ConnectionTokens conn = connectionTokens(head, base);
  if (conn.overflow) return 0;
  putVersion(w, head);
  w.put(" ");
  w.putUint(static_cast<uint64_t>(head.status));
  w.put(" ");
  w.put(head.reason.in(base));
  w.put("\r\n");
  std::string_view upgrade_value;
  for (uint32_t i = 0; i < head.header_count; ++i) {
    std::string_view name = head.headers[i].name.in(base);
    std::string_view value = head.headers[i].value.in(base);
    if (opt.upgrade && isNamed(name, "upgrade")) {
      upgrade_value = value;
      continue;
    }
    if (dropped(name, conn)) continue;
    w.put(name);
    w.put(": ");
    w.put(value);
    w.put("\r\n");
  }
  if (opt.cookie != nullptr && opt.cookie->set) {
    w.put("Set-Cookie: ");
    w.put(opt.cookie->name);
    w.put("=");
    w.put({opt.cookie->value, opt.cookie->value_len});
    w.put("; Max-Age=");
    w.putUint(static_cast<uint64_t>(opt.cookie->ttl.count() / 1000));
    w.put("; Path=/; HttpOnly\r\n");
  }
  if (opt.upgrade) {
    w.put("Connection: upgrade\r\nUpgrade: ");
    w.put(upgrade_value);
    w.put("\r\n");
  } else if (!opt.keep_alive) {
    w.put("Connection: close\r\n");
  } else if (opt.client_http10) {
    w.put("Connection: keep-alive\r\n");
  }
  w.put("\r\n");
  return w.overflow() ? 0 : w.size();
}

std::string_view errorResponse(int status) noexcept {
  // Built once from the reason-phrase table, so that answering an error never allocates.
  static constexpr int kStatuses[] = {400, 408, 413, 414, 431, 502, 503, 504, 505, 500};
  static const auto kResponses = [] {
    std::array<std::string, std::size(kStatuses)> all;
    for (size_t i = 0; i < all.size(); ++i) all[i] = closingResponse(kStatuses[i]);
    return all;
  }();
  size_t i = 0;
  while (kStatuses[i] != status && kStatuses[i] != 500) ++i;   // 500 for any other
  return kResponses[i];
}

}  // namespace lb
