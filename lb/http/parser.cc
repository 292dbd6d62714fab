#include "lb/http/parser.h"

#include <cstring>

#include "lb/core/strings.h"

namespace lb {

namespace {
// No body limit is configurable (the config has none), so lb refuses only what no cache fleet
// sends: a declared length or a chunk of 1 TiB or more (413), which also keeps every length
// far from llhttp's 64-bit overflow checks.
constexpr uint64_t kMaxBodyLength = 1ull << 40;

HttpParser* self(llhttp_t* p) { return static_cast<HttpParser*>(p->data); }
}  // namespace

bool isIdempotentMethod(uint8_t m) noexcept {
  switch (m) {
    case HTTP_GET: case HTTP_HEAD: case HTTP_OPTIONS: case HTTP_TRACE: case HTTP_PUT:
    case HTTP_DELETE:
      return true;
    default:
      return false;
  }
}

const llhttp_settings_t* HttpParser::settings(bool with_body) noexcept {
  static const llhttp_settings_t plain = [] {
    llhttp_settings_t t;
    llhttp_settings_init(&t);
    t.on_message_begin = &HttpParser::onMessageBegin;
    t.on_method = &HttpParser::onMethod;
    t.on_url = &HttpParser::onUrl;
    t.on_status = &HttpParser::onStatus;
    t.on_header_field = &HttpParser::onHeaderField;
    t.on_header_field_complete = &HttpParser::onHeaderFieldComplete;
    t.on_header_value = &HttpParser::onHeaderValue;
    t.on_header_value_complete = &HttpParser::onHeaderValueComplete;
    t.on_headers_complete = &HttpParser::onHeadersComplete;
    t.on_message_complete = &HttpParser::onMessageComplete;
    t.on_chunk_header = [](llhttp_t* p) -> int {
      if (p->content_length >= kMaxBodyLength) {
        self(p)->error_ = Error::kBodyTooLarge;
        llhttp_set_error_reason(p, "chunk too large");
        return HPE_USER;
      }
      return 0;
    };
    return t;
  }();
  // A separate set, so that a parser without a sink costs no call per body piece.
  static const llhttp_settings_t reporting = [] {
    llhttp_settings_t t = plain;
    t.on_body = &HttpParser::onBody;
    return t;
  }();
  return with_body ? &reporting : &plain;
}

HttpParser::HttpParser(llhttp_type_t type, HttpBodySink* body) : body_sink_(body) {
  llhttp_init(&parser_, type, settings(body != nullptr));
  parser_.data = this;
}

void HttpParser::reset() noexcept {
  llhttp_reset(&parser_);
  parser_.data = this;
  head_.clear();
  error_ = Error::kNone;
  started_ = head_done_ = keep_alive_ = has_body_ = completed_ = false;
  content_length_ = 0;
}

void HttpParser::nextMessage() noexcept {
  // Paused at on_message_complete: resuming runs llhttp's after-message step, which keeps
  // the connection's state (an HTTP/1.0 close is still enforced).
  if (llhttp_get_errno(&parser_) == HPE_PAUSED) llhttp_resume(&parser_);
  head_.clear();
  started_ = head_done_ = keep_alive_ = has_body_ = completed_ = false;
  content_length_ = 0;
}

void HttpParser::resumeAfterHead(bool skip_body) noexcept {
  if (skip_body) {
    parser_.flags |= F_SKIPBODY;
    has_body_ = false;
  }
  if (llhttp_get_errno(&parser_) == HPE_PAUSED) llhttp_resume(&parser_);
}

HttpParser::Result HttpParser::feed(const char* base, const char* p, size_t n,
                                    size_t* consumed) noexcept {
  base_ = base;
  llhttp_errno_t rc = llhttp_execute(&parser_, p, n);
  switch (rc) {
    case HPE_OK:
      *consumed = n;
      return Result::kNeedMore;
    case HPE_PAUSED: {
      *consumed = static_cast<size_t>(llhttp_get_error_pos(&parser_) - p);
      return completed_ ? Result::kMessageComplete : Result::kHeadComplete;
    }
    case HPE_PAUSED_UPGRADE:
      // The message before the other protocol is complete; the rest is not HTTP.
      *consumed = static_cast<size_t>(llhttp_get_error_pos(&parser_) - p);
      return Result::kMessageComplete;
    default:
      *consumed = 0;
      if (error_ == Error::kNone) {
        const char* reason = llhttp_get_error_reason(&parser_);
        bool overflow = reason != nullptr && strstr(reason, "overflow") != nullptr;
        error_ = overflow && (rc == HPE_INVALID_CONTENT_LENGTH || rc == HPE_INVALID_CHUNK_SIZE)
                     ? Error::kBodyTooLarge
                     : Error::kMalformed;
      }
      return Result::kError;
  }
}

bool HttpParser::finishAtEof() noexcept {
  // llhttp_finish runs on_message_complete, which pauses: that is success too.
  llhttp_errno_t rc = llhttp_finish(&parser_);
  return rc == HPE_OK || rc == HPE_PAUSED;
}

void HttpParser::extend(Span* s, bool* open, const char* at, size_t len) noexcept {
  if (!*open) {
    s->off = static_cast<uint32_t>(at - base_);
    s->len = 0;
    *open = true;
  }
  s->len += static_cast<uint32_t>(len);
}

int HttpParser::onMessageBegin(llhttp_t* p) {
  HttpParser* h = self(p);
  h->head_.clear();
  h->started_ = true;
  h->head_done_ = false;
  h->completed_ = false;
  h->method_open_ = h->url_open_ = h->reason_open_ = h->field_open_ = h->value_open_ = false;
  return 0;
}

int HttpParser::onMethod(llhttp_t* p, const char* at, size_t len) {
  HttpParser* h = self(p);
  h->extend(&h->head_.method, &h->method_open_, at, len);
  return 0;
}

int HttpParser::onUrl(llhttp_t* p, const char* at, size_t len) {
  HttpParser* h = self(p);
  h->extend(&h->head_.url, &h->url_open_, at, len);
  return 0;
}

int HttpParser::onStatus(llhttp_t* p, const char* at, size_t len) {
  HttpParser* h = self(p);
  h->extend(&h->head_.reason, &h->reason_open_, at, len);
  return 0;
}

int HttpParser::onHeaderField(llhttp_t* p, const char* at, size_t len) {
  HttpParser* h = self(p);
  if (h->head_.header_count >= ParsedHead::kMaxHeaders) {
    h->error_ = Error::kTooManyHeaders;
    llhttp_set_error_reason(p, "too many headers");
    return HPE_USER;
  }
  HeaderSpan& hs = h->head_.headers[h->head_.header_count];
  if (!h->field_open_) hs.value = {};
  h->extend(&hs.name, &h->field_open_, at, len);
  return 0;
}

int HttpParser::onHeaderFieldComplete(llhttp_t* p) {
  self(p)->field_open_ = false;
  return 0;
}

int HttpParser::onHeaderValue(llhttp_t* p, const char* at, size_t len) {
  HttpParser* h = self(p);
  HeaderSpan& hs = h->head_.headers[h->head_.header_count];
  h->extend(&hs.value, &h->value_open_, at, len);
  return 0;
}

int HttpParser::onHeaderValueComplete(llhttp_t* p) {
  HttpParser* h = self(p);
  h->value_open_ = false;
  // llhttp drops leading whitespace; trailing OWS is not part of the value either
  // (RFC 9110 §5.5), and key plugins must see "v" for "X-Key: v  ".
  HeaderSpan& hs = h->head_.headers[h->head_.header_count];
  while (hs.value.len > 0) {
    char c = h->base_[hs.value.off + hs.value.len - 1];
    if (c != ' ' && c != '\t') break;
    --hs.value.len;
  }
  ++h->head_.header_count;
  return 0;
}

int HttpParser::onHeadersComplete(llhttp_t* p) {
  HttpParser* h = self(p);
  h->head_done_ = true;
  h->head_.http_major = p->http_major;
  h->head_.http_minor = p->http_minor;
  h->head_.status = p->status_code;
  h->keep_alive_ = llhttp_should_keep_alive(p) != 0;
  h->content_length_ = (p->flags & F_CONTENT_LENGTH) ? p->content_length : 0;
  if (h->content_length_ >= kMaxBodyLength) {
    h->error_ = Error::kBodyTooLarge;
    llhttp_set_error_reason(p, "content-length too large");
    return -1;
  }
  h->has_body_ = (p->flags & F_CHUNKED) || h->content_length_ > 0 ||
                 llhttp_message_needs_eof(p);
  return HPE_PAUSED;
}

int HttpParser::onBody(llhttp_t* p, const char* at, size_t len) {
  // llhttp closes an open span at the end of every execute, so a feed of no new bytes in the
  // middle of a body reports an empty piece: not body, and an echo would write it as the
  // last chunk.
  if (len > 0) self(p)->body_sink_->onBody(at, len);
  return 0;
}

int HttpParser::onMessageComplete(llhttp_t* p) {
  HttpParser* h = self(p);
  h->completed_ = true;
  // keep-alive is final only now for a response read until EOF; flags reset right after.
  h->keep_alive_ = llhttp_should_keep_alive(p) != 0;
  return HPE_PAUSED;
}

}  // namespace lb
