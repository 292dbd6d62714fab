// libFuzzer target for lb's HTTP parsing and head rewriting (lb/http/parser.h, rewrite.h),
// with a differential check: whatever lb would forward must parse, with a second and
// independent strict parser (tests/fuzz/strict_http.h), into exactly the message lb parsed.
//
//   requests   fed to HttpParser in pieces as the proxy feeds them; for every head it
//              accepts, writeUpstreamRequest's output must parse with strict_http into the
//              same method, target, version, the header fields lb keeps (hop-by-hop and
//              Connection-named ones dropped, X-Forwarded-For/-Proto as lb sets them) and the
//              same framing; the body bytes lb passes on must end, for strict_http, exactly
//              where lb says the message ends (and, when lb refuses a body midway, not before);
//              then the next pipelined request the same way.
//   responses  the same through writeDownstreamResponse (interim 1xx passed on, HEAD and
//              204/304 without a body, a body read until EOF).
//
// Built and run by `make fuzz` (see the Makefile): make fuzz FUZZ_TARGETS=http FUZZ_SECONDS=600
// Seeds: tests/fuzz/corpus/http/, one file per case of tests/integration/http/http_hostile_test.cc
// (byte 0 = 0: a whole request).
//
// Input layout: byte 0 = flags (bit 0: a response; bit 1: the response answers HEAD; bit 2:
// the client spoke HTTP/1.0; bit 3: lb keeps the client connection; bits 4-7: how the bytes
// are cut into reads, 0 = all at once); the rest is the byte stream.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "lb/core/strings.h"
#include "lb/http/parser.h"
#include "lb/http/rewrite.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/strict_http.h"

namespace {

using lb::HttpParser;

[[noreturn]] void mismatch(const char* what, std::string_view detail = {}) {
  fuzz::mismatch("http_fuzz", what, detail);
}

using fuzz::Cuts;

bool named(std::string_view n, std::string_view want) { return lb::equalsNoCase(n, want); }

bool hopByHop(std::string_view n) {
  return named(n, "connection") || named(n, "keep-alive") || named(n, "proxy-connection") ||
         named(n, "te") || named(n, "trailer") || named(n, "upgrade");
}

// The Connection tokens of a head, lower-cased.
std::vector<std::string> connectionTokens(const strict_http::Fields& fields) {
  std::vector<std::string> out;
  for (const auto& [name, value] : fields) {
    if (!named(name, "connection")) continue;
    std::string_view v = value;
    for (;;) {
      size_t comma = v.find(',');
      std::string_view t = strict_http::trimOws(v.substr(0, comma));
      if (!t.empty()) {
        std::string s;
        for (char c : t) s += strict_http::lower(c);
        out.push_back(s);
      }
      if (comma == std::string_view::npos) break;
      v.remove_prefix(comma + 1);
    }
  }
  return out;
}

bool listed(const std::vector<std::string>& tokens, std::string_view name) {
  for (const auto& t : tokens)
    if (named(t, name)) return true;
  return false;
}

bool framing(std::string_view n) {
  return named(n, "content-length") || named(n, "transfer-encoding") || named(n, "host");
}

// The fields lb parsed, as a list of (name, value).
strict_http::Fields parsedFields(const lb::ParsedHead& h, const char* base) {
  strict_http::Fields out;
  for (uint32_t i = 0; i < h.header_count; ++i)
    out.emplace_back(std::string(h.headers[i].name.in(base)),
                     std::string(h.headers[i].value.in(base)));
  return out;
}

// What the request's fields must be after lb: RFC 9110 §7.6.1 applied to what lb parsed,
// written here again rather than taken from rewrite.cc.
strict_http::Fields expectedUpstream(const strict_http::Fields& in, bool upgrade, bool http10) {
  strict_http::Fields out;
  std::vector<std::string> conn = connectionTokens(in);
  std::string xff, upgrade_value;
  bool xff_seen = false;
  size_t xff_at = 0;
  for (const auto& [name, value] : in) {
    if (upgrade && named(name, "upgrade")) {
      upgrade_value = value;
      continue;
    }
    if (hopByHop(name) || (listed(conn, name) && !framing(name)) ||
        named(name, "x-forwarded-proto"))
      continue;
    if (named(name, "x-forwarded-for")) {
      if (!xff_seen) xff_at = out.size();
      xff += (xff_seen ? ", " : "") + std::string(strict_http::trimOws(value));
      xff_seen = true;
      continue;
    }
    out.emplace_back(name, value);
  }
  std::string client = "127.0.0.1";
  if (xff_seen)
    out.insert(out.begin() + static_cast<long>(xff_at), {"X-Forwarded-For", xff + ", " + client});
  else
    out.emplace_back("X-Forwarded-For", client);
  out.emplace_back("X-Forwarded-Proto", "http");
  if (upgrade) {
    out.emplace_back("Connection", "upgrade");
    out.emplace_back("Upgrade", upgrade_value);
  } else if (http10) {
    out.emplace_back("Connection", "keep-alive");
  }
  return out;
}

strict_http::Fields expectedDownstream(const strict_http::Fields& in, bool keep_alive,
                                       bool client_http10) {
  strict_http::Fields out;
  std::vector<std::string> conn = connectionTokens(in);
  for (const auto& [name, value] : in)
    if (!hopByHop(name) && !(listed(conn, name) && !framing(name))) out.emplace_back(name, value);
  if (!keep_alive)
    out.emplace_back("Connection", "close");
  else if (client_http10)
    out.emplace_back("Connection", "keep-alive");
  return out;
}

void sameFields(const strict_http::Fields& got, const strict_http::Fields& want,
                std::string_view head) {
  if (got.size() != want.size()) mismatch("field count differs", head);
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i].first != want[i].first || got[i].second != want[i].second)
      mismatch("field differs", head);
}

// Drives one stream through an HttpParser as the proxy does; checks each forwarded message.
class Stream {
 public:
  Stream(const uint8_t* data, size_t size, uint8_t flags)
      : s_(reinterpret_cast<const char*>(data), size),
        response_(flags & 1),
        head_request_(flags & 2),
        client_http10_(flags & 4),
        keep_alive_(flags & 8),
        cuts_{static_cast<unsigned>(flags >> 4), 7},
        parser_(response_ ? HTTP_RESPONSE : HTTP_REQUEST) {}

  void run() {
    for (int message = 0; message < 8 && pos_ < s_.size(); ++message)
      if (!oneMessage()) return;
  }

 private:
  // Feeds up to the next cut; the result and bytes consumed.
  HttpParser::Result feedNext(size_t* consumed, size_t* offered) {
    *offered = cuts_.next(s_.size() - pos_);
    return parser_.feed(s_.data(), s_.data() + pos_, *offered, consumed);
  }

  bool oneMessage() {
    // The head, as the proxy reads it: a head always starts at a message boundary.
    for (;;) {
      size_t consumed = 0, offered = 0;
      auto r = feedNext(&consumed, &offered);
      if (r == HttpParser::Result::kError) return false;   // refused: nothing forwarded
      if (r == HttpParser::Result::kNeedMore) {
        pos_ += offered;
        if (pos_ >= s_.size()) return false;   // incomplete: nothing forwarded
        continue;
      }
      if (r == HttpParser::Result::kMessageComplete) mismatch("message complete before a head");
      pos_ += consumed;
      break;
    }
    const lb::ParsedHead& h = parser_.head();
    const strict_http::Fields fields = parsedFields(h, s_.data());
    char out[1 << 16];
    size_t n;
    strict_http::Head ref;
    if (!response_) {
      if (parser_.method() == HTTP_CONNECT) return false;   // the proxy refuses it
      lb::UpstreamRequestOptions opt{"127.0.0.1", parser_.upgrade()};
      n = lb::writeUpstreamRequest(h, s_.data(), opt, out, sizeof out);
      if (n == 0) return false;
      std::string_view fwd(out, n);
      ref = strict_http::parseRequestHead(fwd);
      if (!ref.ok || ref.length != n) mismatch("lb forwards a request head strict_http refuses", fwd);
      if (ref.method != h.method.in(s_.data()) || ref.target != h.url.in(s_.data()))
        mismatch("request line differs", fwd);
      if (ref.major != h.http_major || ref.minor != h.http_minor) mismatch("version differs", fwd);
      bool http10 = h.http_minor == 0;
      sameFields(ref.fields, expectedUpstream(fields, parser_.upgrade(), http10), fwd);
    } else {
      const int status = h.status;
      bool interim = status >= 100 && status < 200 && status != 101;
      lb::DownstreamResponseOptions opt;
      opt.keep_alive = keep_alive_ && !interim;
      opt.client_http10 = client_http10_;
      opt.upgrade = status == 101;
      n = lb::writeDownstreamResponse(h, s_.data(), opt, out, sizeof out);
      if (n == 0) return false;
      std::string_view fwd(out, n);
      ref = strict_http::parseResponseHead(fwd, head_request_);
      if (!ref.ok || ref.length != n)
        mismatch("lb forwards a response head strict_http refuses", fwd);
      if (ref.status != status) mismatch("status differs", fwd);
      if (status == 101) return false;   // a tunnel follows
      if (!opt.upgrade) sameFields(ref.fields, expectedDownstream(fields, opt.keep_alive,
                                                                  client_http10_), fwd);
    }
    // Framing: the same kind, the same length (a response to HEAD has none, whatever it says).
    const bool skip = response_ && head_request_;
    const bool lb_chunked = parser_.chunked();
    if (!skip && parser_.hasBody()) {
      if (lb_chunked != (ref.framing == strict_http::Framing::kChunked))
        mismatch("chunked or not: the parsers differ");
      if (!lb_chunked && parser_.hasContentLength() &&
          ref.content_length != parser_.contentLength())
        mismatch("content length differs");
    }
    if (!skip && !parser_.hasBody() && ref.framing != strict_http::Framing::kNone)
      mismatch("strict_http expects a body lb does not read");
    // The body as lb passes it on.
    parser_.resumeAfterHead(skip);
    std::string body;
    for (;;) {
      size_t consumed = 0, offered = 0;
      auto r = feedNext(&consumed, &offered);
      if (r == HttpParser::Result::kError) {
        // lb stops here and closes the upstream connection: what it passed on must not be a
        // whole message already.
        size_t len = 0;
        if (strict_http::body(ref, body, false, &len) == strict_http::Body::kComplete)
          mismatch("lb refused a body strict_http found complete", body);
        return false;
      }
      const bool done = r == HttpParser::Result::kMessageComplete;
      size_t taken = done ? consumed : offered;
      body.append(s_.data() + pos_, taken);
      pos_ += taken;
      bool eof = !done && pos_ >= s_.size();
      if (eof && response_ && parser_.needsEof()) {
        if (!parser_.finishAtEof()) return false;
      } else if (!done) {
        if (eof) {
          size_t len = 0;
          auto b = strict_http::body(ref, body, false, &len);
          if (b == strict_http::Body::kComplete)
            mismatch("strict_http found a body complete that lb still reads", body);
          if (b == strict_http::Body::kBad) mismatch("lb passes on a body strict_http refuses", body);
          return false;
        }
        continue;
      }
      size_t len = 0;
      auto b = strict_http::body(ref, body, eof, &len);
      if (b != strict_http::Body::kComplete || len != body.size())
        mismatch("the parsers end the message at different bytes", body);
      break;
    }
    if (response_ && h.status >= 100 && h.status < 200) {
      // An interim response: the final one follows on the same parser.
      parser_.nextMessage();
      return true;
    }
    if (parser_.upgrade()) return false;   // the rest is another protocol
    parser_.nextMessage();
    return true;
  }

  std::string_view s_;
  bool response_, head_request_, client_http10_, keep_alive_;
  Cuts cuts_;
  HttpParser parser_;
  size_t pos_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  Stream(data + 1, size - 1, data[0]).run();
  return 0;
}
