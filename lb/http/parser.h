// llhttp, driven for a proxy: parse a message head in place (header spans are offsets into
// the caller's buffer, so nothing is copied), pause after the head so the caller can route and
// rewrite it, then pass the body through with its original framing, pausing again at the end
// of the message so pipelined bytes stay unparsed in the buffer.
#pragma once

#include <llhttp.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lb/core/http_fields.h"

namespace lb {

struct Span {
  uint32_t off = 0;
  uint32_t len = 0;
  std::string_view in(const char* base) const noexcept { return {base + off, len}; }
};

struct HeaderSpan {
  Span name;
  Span value;
};

// One parsed head. Offsets are relative to the buffer start the caller passed to feed().
struct ParsedHead {
  static constexpr int kMaxHeaders = 128;
  Span method;               // requests
  Span url;                  // requests
  Span reason;               // responses: the reason phrase
  int status = 0;            // responses
  uint8_t http_major = 1;
  uint8_t http_minor = 1;
  uint32_t header_count = 0;
  HeaderSpan headers[kMaxHeaders];

  void clear() noexcept {
    method = url = reason = {};
    status = 0;
    header_count = 0;
  }
};

// Receives a message's body as llhttp decodes it (chunk framing removed), piece by piece from
// inside feed(). For the HTTP server helper (lb/http/server_conn.h), whose handlers read
// bodies; the proxy passes bodies through with their framing and sets none.
class HttpBodySink {
 public:
  virtual void onBody(const char* data, size_t len) noexcept = 0;

 protected:
  ~HttpBodySink() = default;
};

class HttpParser {
 public:
  enum class Result {
    kNeedMore,          // every byte consumed, the message goes on
    kHeadComplete,      // paused right after the head: call resumeAfterHead()
    kMessageComplete,   // paused right after the message: call nextMessage() before feeding more
    kError,             // malformed: error() / errorReason() say why
  };
  enum class Error { kNone, kMalformed, kTooManyHeaders, kBodyTooLarge };

  // With a `body` sink, every body byte is also reported to it (it must outlive the parser).
  explicit HttpParser(llhttp_type_t type, HttpBodySink* body = nullptr);
  HttpParser(const HttpParser&) = delete;
  HttpParser& operator=(const HttpParser&) = delete;

  // Feeds [p, p + n), which lies inside the buffer starting at `base` (header offsets are
  // taken against it, so the caller must not move the head's bytes until it is done with
  // them). *consumed: bytes accepted before the parser stopped. Never throws.
  Result feed(const char* base, const char* p, size_t n, size_t* consumed) noexcept;
  // After kHeadComplete. skip_body: the response to a HEAD request has no body whatever its
  // headers say (llhttp's F_SKIPBODY, as returning 1 from on_headers_complete would do).
  void resumeAfterHead(bool skip_body) noexcept;
  // After kMessageComplete: ready for the next message on the same connection.
  void nextMessage() noexcept;
  // Full reset (a new connection).
  void reset() noexcept;
  // The peer closed: for a response delimited by EOF this completes the message.
  bool finishAtEof() noexcept;

  const ParsedHead& head() const noexcept { return head_; }
  Error error() const noexcept { return error_; }
  const char* errorReason() const noexcept { return llhttp_get_error_reason(&parser_); }
  bool inHead() const noexcept { return started_ && !head_done_; }
  bool headDone() const noexcept { return head_done_; }
  bool messageDone() const noexcept { return completed_; }
  bool started() const noexcept { return started_; }

  // Valid once the head is complete.
  uint8_t method() const noexcept { return parser_.method; }
  bool keepAlive() const noexcept { return keep_alive_; }   // llhttp_should_keep_alive at head
  // llhttp_should_keep_alive now (after resumeAfterHead(skip_body) it knows about HEAD).
  bool keepAliveNow() const noexcept { return llhttp_should_keep_alive(&parser_) != 0; }
  bool needsEof() const noexcept { return llhttp_message_needs_eof(&parser_) != 0; }
  bool chunked() const noexcept { return (parser_.flags & F_CHUNKED) != 0; }
  bool hasContentLength() const noexcept { return (parser_.flags & F_CONTENT_LENGTH) != 0; }
  uint64_t contentLength() const noexcept { return content_length_; }
  bool upgrade() const noexcept { return parser_.upgrade != 0; }
  // True when the message has a body to pass through (chunked, or a non-zero length, or a
  // response read until EOF).
  bool hasBody() const noexcept { return has_body_; }

 private:
  static int onMessageBegin(llhttp_t* p);
  static int onMethod(llhttp_t* p, const char* at, size_t len);
  static int onUrl(llhttp_t* p, const char* at, size_t len);
  static int onStatus(llhttp_t* p, const char* at, size_t len);
  static int onHeaderField(llhttp_t* p, const char* at, size_t len);
  static int onHeaderFieldComplete(llhttp_t* p);
  static int onHeaderValue(llhttp_t* p, const char* at, size_t len);
  static int onHeaderValueComplete(llhttp_t* p);
  static int onHeadersComplete(llhttp_t* p);
  static int onMessageComplete(llhttp_t* p);
  static int onBody(llhttp_t* p, const char* at, size_t len);
  static const llhttp_settings_t* settings(bool with_body) noexcept;

  void extend(Span* s, bool* open, const char* at, size_t len) noexcept;

  llhttp_t parser_;
  HttpBodySink* body_sink_;
  ParsedHead head_;
  const char* base_ = nullptr;
  Error error_ = Error::kNone;
  bool started_ = false;
  bool head_done_ = false;
  bool completed_ = false;
  bool keep_alive_ = false;
  bool has_body_ = false;
  uint64_t content_length_ = 0;
  bool method_open_ = false, url_open_ = false, reason_open_ = false;
  bool field_open_ = false, value_open_ = false;
};

// True for methods whose repetition has no further effect (RFC 9110 §9.2.2).
bool isIdempotentMethod(uint8_t llhttp_method) noexcept;

}  // namespace lb
