// llhttp, driven for a proxy: parse a message head in place (header spans are offsets into
// the caller's buffer, so nothing is copied), pause after the head so the caller can route and
// rewrite it, then pass the body through with its original framing, pausing again at the end
// of the message so pipelined bytes stay unparsed in the buffer.
//
// Strict, for an edge that must never read a message differently from the server behind it:
// llhttp is built with LLHTTP_STRICT_MODE=1 (the Makefile; CRLF after chunk data, tokens in
// field names, no control characters in the target) and no lenient flag is ever set. On top of
// it the parser refuses what llhttp 8.1 lets through or leaves to its caller:
// - obs-fold and any other line break inside a field line (RFC 9112 §5.2), in the head and in
//   trailers: each piece of the head llhttp reports must be separated from the one before by
//   exactly the line breaks its place allows (HttpParser::notePiece);
// - a chunked message whose trailer section ends in a bare LF ("0\r\n\n": llhttp takes it);
// - an empty field name; a version other than HTTP/1.0 and HTTP/1.1 (Error::kVersion for a
//   request: 505);
// - Transfer-Encoding in an HTTP/1.0 message, an empty one, one that is not a list of tokens,
//   chunked twice, a request whose final coding is not chunked (RFC 9112 §6.3), and
//   Content-Length beside it; chunk extensions over kMaxChunkExtensionBytes per chunk, or
//   with an empty name or value, or anything but CRLF after a token value;
// - requests: not exactly one Host in HTTP/1.1 (at most one in 1.0), a Host value that is not
//   an authority, a target in none of RFC 9112 §3.2's forms (asterisk-form only with OPTIONS,
//   absolute-form only http(s) and agreeing with Host) (lb/http/message_checks.h);
// - responses: a status outside 100-599, control characters in the reason, a 1xx or 204 that
//   declares a body; and a 1xx, 204 or 304 is read without a body whatever its headers say
//   (llhttp 8.1 would wait for a 304's Content-Length).
#pragma once

#include <llhttp.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lb/core/http_fields.h"
#include "lb/http/message_checks.h"

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

// Receives a chunked message's trailer fields, piece by piece from inside feed(): a name or
// value may come in several pieces when the section spans feeds. llhttp has dropped the
// value's leading whitespace; trailing whitespace is the receiver's to drop. For the HTTP/2
// proxy, which sends them on as a HEADERS frame of their own; the HTTP/1.1 proxy passes
// trailers through with the body's framing and sets none.
class HttpTrailerSink {
 public:
  virtual void onTrailerName(const char* data, size_t len) noexcept = 0;
  virtual void onTrailerValue(const char* data, size_t len) noexcept = 0;
  virtual void onTrailerFieldEnd() noexcept = 0;

 protected:
  ~HttpTrailerSink() = default;
};

class HttpParser {
 public:
  enum class Result {
    kNeedMore,          // every byte consumed, the message goes on
    kHeadComplete,      // paused right after the head: call resumeAfterHead()
    kMessageComplete,   // paused right after the message: call nextMessage() before feeding more
    kError,             // malformed: error() / errorReason() say why
  };
  enum class Error {
    kNone,
    kMalformed,       // a request: 400; a response: 502
    kTooManyHeaders,  // 431
    kBodyTooLarge,    // 413
    kVersion,         // a request in a version other than HTTP/1.0 or 1.1: 505
  };
  // Bytes of chunk extensions (names and values) one chunk may carry. Nothing lb fronts uses
  // them; the bound keeps a client from streaming an endless chunk-size line (Node.js bounds
  // them too since CVE-2024-22019).
  static constexpr uint32_t kMaxChunkExtensionBytes = 4096;

  // With a `body` sink, every body byte is also reported to it (it must outlive the parser).
  explicit HttpParser(llhttp_type_t type, HttpBodySink* body = nullptr);
  HttpParser(const HttpParser&) = delete;
  HttpParser& operator=(const HttpParser&) = delete;

  // Feeds [p, p + n), which lies inside the buffer starting at `base` (header offsets are
  // taken against it, so the caller must not move the head's bytes until it is done with
  // them). *consumed: bytes accepted before the parser stopped. Never throws.
  Result feed(const char* base, const char* p, size_t n, size_t* consumed) noexcept;
  // Trailer fields go to `sink` from now on (null: none); it must outlive the parser.
  void setTrailerSink(HttpTrailerSink* sink) noexcept { trailer_sink_ = sink; }
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
  const char* errorReason() const noexcept {
    return reason_ != nullptr ? reason_ : llhttp_get_error_reason(&parser_);
  }
  bool inHead() const noexcept { return started_ && !head_done_; }
  bool headDone() const noexcept { return head_done_; }
  bool messageDone() const noexcept { return completed_; }
  bool started() const noexcept { return started_; }
  // Requests: the request-target is complete. A head that outgrows its limit before this is
  // 414 (URI Too Long, RFC 9112 §3), after it 431.
  bool urlComplete() const noexcept { return url_done_; }

  // Valid once the head is complete.
  uint8_t method() const noexcept { return parser_.method; }
  bool keepAlive() const noexcept { return keep_alive_; }   // llhttp_should_keep_alive at head
  // llhttp_should_keep_alive now (after resumeAfterHead(skip_body) it knows about HEAD).
  bool keepAliveNow() const noexcept { return llhttp_should_keep_alive(&parser_) != 0; }
  // A Content-Length body's bytes not yet fed (0 for any other framing): what a splice pump
  // may move past the parser, which is then done with this message.
  uint64_t lengthBodyLeft() const noexcept {
    return (parser_.flags & F_CONTENT_LENGTH) && !(parser_.flags & F_CHUNKED) && head_done_ &&
                   !completed_
               ? parser_.content_length
               : 0;
  }
  // A chunked body's current chunk: its data bytes not yet fed (0 outside chunk data, and
  // while the size line is read, when llhttp's count holds the digits so far). A splice pump
  // may move them past the parser; skipChunkData then says so, and feeding resumes at the
  // CRLF after them, which llhttp checks as if it had read the data.
  uint64_t chunkDataLeft() const noexcept { return in_chunk_data_ ? parser_.content_length : 0; }
  void skipChunkData(uint64_t n) noexcept;
  // The data size the last chunk-size line announced (0 before one): a body in large chunks
  // is likely to go on in large chunks.
  uint64_t lastChunkSize() const noexcept { return last_chunk_; }
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
  static int onChunkHeader(llhttp_t* p);
  static int onChunkComplete(llhttp_t* p);
  static int onChunkExtension(llhttp_t* p, const char* at, size_t len);
  static int onChunkExtensionValue(llhttp_t* p, const char* at, size_t len);
  static int onChunkExtensionComplete(llhttp_t* p);
  static const llhttp_settings_t* settings(bool with_body) noexcept;

  // What the last piece of a header section was (HttpParser::notePiece).
  enum class Piece : uint8_t { kNone, kStartLine, kField, kValue };
  enum class Section : uint8_t { kNone, kHead, kTrailers };

  void extend(Span* s, bool* open, const char* at, size_t len) noexcept;
  // Every data callback inside a header section: false when the bytes between the previous
  // piece and this one hold a line break where none may be (a fold) or not exactly one
  // between field lines. Positions are offsets into the whole stream fed so far, so that a
  // section split over several feeds (and buffers) is judged the same as one fed at once.
  bool notePiece(Piece kind, bool continuing, const char* at, size_t len) noexcept;
  // Line breaks between the last piece and `end` (a pointer into the current feed); moves
  // the scanned position there.
  uint32_t lineBreaksUpTo(const char* end) noexcept;
  // A trailer field's name piece (kField), value piece (kValue) or end (kNone) to the sink.
  [[gnu::cold, gnu::noinline]] void trailerPiece(Piece kind, const char* at, size_t len) noexcept;
  // The head is complete: what RFC 9110/9112 require that llhttp does not check.
  bool checkHead() noexcept;
  // Records the error (Error::kMalformed unless given) and returns HPE_USER for a callback.
  int fail(const char* reason, Error e = Error::kMalformed) noexcept;

  llhttp_t parser_;
  HttpBodySink* body_sink_;
  HttpTrailerSink* trailer_sink_ = nullptr;
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
  bool url_done_ = false;
  const char* reason_ = nullptr;   // lb's own reason for error_, when it has one

  // Stream positions, for notePiece.
  const char* feed_p_ = nullptr;   // the current feed's first byte
  const char* feed_end_ = nullptr; // just past its last byte
  uint64_t pos_ = 0;               // its offset in the stream
  uint64_t last_end_ = 0;          // just past the last piece of the current section
  uint64_t scanned_ = 0;           // line breaks are counted up to here
  uint32_t gap_breaks_ = 0;        // line breaks counted since the last piece
  Section section_ = Section::kNone;
  Piece last_piece_ = Piece::kNone;
  uint32_t field_len_ = 0;         // bytes of the current field name
  uint32_t ext_bytes_ = 0;         // chunk-extension bytes of the current chunk
  uint32_t ext_piece_ = 0;         // bytes of the current extension name or value
  bool ext_quoted_ = false;        // the current extension value opened with a quote
  uint32_t tail_ = 0;              // the last 4 bytes of a chunked body, for its CRLF CRLF end
  bool in_chunk_data_ = false;     // from a chunk's size line to the CRLF after its data
  uint64_t last_chunk_ = 0;        // lastChunkSize()

  // What the head's fields said, for checkHead.
  uint32_t hosts_ = 0;
  uint32_t host_index_ = 0;
  bool value_is_te_ = false;       // the current field is Transfer-Encoding
  bool te_seen_ = false;
  bool te_bad_ = false;
  TransferCodings te_;
};

// True for methods whose repetition has no further effect (RFC 9110 §9.2.2).
bool isIdempotentMethod(uint8_t llhttp_method) noexcept;

}  // namespace lb
