#include "lb/http/parser.h"

#include <algorithm>
#include <cstring>

#include "lb/core/strings.h"
#include "lb/http/message_checks.h"

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
    t.on_url_complete = [](llhttp_t* p) -> int {
      self(p)->url_done_ = true;
      return 0;
    };
    t.on_chunk_header = &HttpParser::onChunkHeader;
    t.on_chunk_complete = &HttpParser::onChunkComplete;
    t.on_chunk_extension_name = &HttpParser::onChunkExtension;
    t.on_chunk_extension_value = &HttpParser::onChunkExtensionValue;
    t.on_chunk_extension_name_complete = &HttpParser::onChunkExtensionComplete;
    t.on_chunk_extension_value_complete = &HttpParser::onChunkExtensionComplete;
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
  reason_ = nullptr;
  started_ = head_done_ = keep_alive_ = has_body_ = completed_ = false;
  in_chunk_data_ = false;
  last_chunk_ = 0;
  content_length_ = 0;
  pos_ = last_end_ = scanned_ = 0;
  section_ = Section::kNone;
  last_piece_ = Piece::kNone;
}

void HttpParser::nextMessage() noexcept {
  // Paused at on_message_complete: resuming runs llhttp's after-message step, which keeps
  // the connection's state (an HTTP/1.0 close is still enforced).
  if (llhttp_get_errno(&parser_) == HPE_PAUSED) llhttp_resume(&parser_);
  head_.clear();
  started_ = head_done_ = keep_alive_ = has_body_ = completed_ = false;
  in_chunk_data_ = false;
  last_chunk_ = 0;
  content_length_ = 0;
}

// Inside chunk data llhttp waits in its consume state (or just before it), which takes its
// remaining count from content_length each time it runs: lowering it is exactly what reading
// n data bytes would have done, and a count of 0 makes the next byte fed the CRLF check.
void HttpParser::skipChunkData(uint64_t n) noexcept {
  if (!in_chunk_data_ || n == 0) return;
  n = std::min<uint64_t>(n, parser_.content_length);
  parser_.content_length -= n;
  pos_ += n;
  // The CRLF CRLF check at the message's end looks at the last 4 bytes fed; at least 7
  // (CRLF, "0", CRLF, CRLF) follow a data chunk, so the skipped bytes are never among them.
  tail_ = 0;
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
  feed_p_ = p;
  feed_end_ = p + n;
  llhttp_errno_t rc = llhttp_execute(&parser_, p, n);
  Result result;
  switch (rc) {
    case HPE_OK:
      *consumed = n;
      result = Result::kNeedMore;
      break;
    case HPE_PAUSED:
      *consumed = static_cast<size_t>(llhttp_get_error_pos(&parser_) - p);
      result = completed_ ? Result::kMessageComplete : Result::kHeadComplete;
      break;
    case HPE_PAUSED_UPGRADE:
      // The message before the other protocol is complete; the rest is not HTTP.
      *consumed = static_cast<size_t>(llhttp_get_error_pos(&parser_) - p);
      result = Result::kMessageComplete;
      break;
    default:
      *consumed = 0;
      if (error_ == Error::kNone) {
        const char* reason = llhttp_get_error_reason(&parser_);
        bool overflow = reason != nullptr && strstr(reason, "overflow") != nullptr;
        // llhttp's words for a well-formed HTTP/D.D it does not know (1.2 to 1.9, 3.x, ...),
        // as opposed to a malformed version ("Expected dot", "Invalid minor version").
        // "PRI * HTTP/2.0" and the rest of the HTTP/2 preface: llhttp pauses for an h2
        // upgrade lb does not speak, which is the same 505.
        bool version = parser_.type == HTTP_REQUEST &&
                       (rc == HPE_PAUSED_H2_UPGRADE ||
                        (rc == HPE_INVALID_VERSION && reason != nullptr &&
                         strcmp(reason, "Invalid HTTP version") == 0));
        error_ = overflow && (rc == HPE_INVALID_CONTENT_LENGTH || rc == HPE_INVALID_CHUNK_SIZE)
                     ? Error::kBodyTooLarge
                 : version ? Error::kVersion
                           : Error::kMalformed;
      }
      return Result::kError;
  }
  const char* end = p + *consumed;
  if (section_ != Section::kNone && last_piece_ != Piece::kNone) {
    uint32_t breaks = lineBreaksUpTo(end);
    // A section ends with the CRLF of its last line and the empty line: exactly two line
    // breaks after its last piece. More is a fold of nothing but whitespace.
    bool ended = (section_ == Section::kHead && result == Result::kHeadComplete) ||
                 (section_ == Section::kTrailers && result == Result::kMessageComplete);
    if (ended && breaks != 2) {
      *consumed = 0;
      error_ = Error::kMalformed;
      reason_ = "line folding (obs-fold) at the end of a header section";
      return Result::kError;
    }
  }
  if ((parser_.flags & F_CHUNKED) && !(parser_.flags & F_SKIPBODY) && head_done_) {
    // llhttp 8.1, strict or not, takes a bare LF as the empty line that ends the trailer
    // section ("0\r\n\n"). lb passes chunked framing through as it came, so a backend that
    // wants CRLF would read on past where lb thinks the message ends: refuse it. Every other
    // line of the framing llhttp already holds to CRLF.
    for (const char* q = end - std::min<size_t>(*consumed, 4); q < end; ++q)
      tail_ = (tail_ << 8) | static_cast<unsigned char>(*q);
    if (result == Result::kMessageComplete && tail_ != 0x0d0a0d0a) {
      *consumed = 0;
      error_ = Error::kMalformed;
      reason_ = "a bare LF ends the chunked message's trailer section";
      return Result::kError;
    }
  }
  if (result != Result::kNeedMore) section_ = Section::kNone;
  pos_ += *consumed;
  return result;
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

// Out of line and cold: trailers are rare, and the field callbacks every head goes through
// stay as small as they were (GCC inlines notePiece into them only while they are).
void HttpParser::trailerPiece(Piece kind, const char* at, size_t len) noexcept {
  switch (kind) {
    case Piece::kField: trailer_sink_->onTrailerName(at, len); break;
    case Piece::kValue: trailer_sink_->onTrailerValue(at, len); break;
    default: trailer_sink_->onTrailerFieldEnd(); break;
  }
}

int HttpParser::fail(const char* reason, Error e) noexcept {
  error_ = e;
  reason_ = reason;
  llhttp_set_error_reason(&parser_, reason);
  return HPE_USER;
}

uint32_t HttpParser::lineBreaksUpTo(const char* end) noexcept {
  const uint64_t from = scanned_ > pos_ ? scanned_ : pos_;
  uint32_t breaks = gap_breaks_;
  for (const char* q = feed_p_ + (from - pos_); q < end; ++q) breaks += *q == '\n';
  gap_breaks_ = breaks;
  scanned_ = pos_ + static_cast<uint64_t>(end - feed_p_);
  return breaks;
}

bool HttpParser::notePiece(Piece kind, bool continuing, const char* at, size_t len) noexcept {
  if (section_ == Section::kNone) return true;
  const uint64_t start = pos_ + static_cast<uint64_t>(at - feed_p_);
  if (last_piece_ != Piece::kNone) {
    if (continuing) {
      // The same field, name or value going on: only across feeds, where llhttp reports
      // what it had at the end of one and the rest at the start of the next, with nothing
      // between. Anything between is the CRLF and whitespace of an obs-fold.
      if (start != last_end_) return false;
    } else {
      // Between the start line's parts and between a name and its value: no line break.
      // Before a new field name: the one that ended the line before.
      uint32_t want = kind == Piece::kField ? 1 : 0;
      if (lineBreaksUpTo(at) != want) return false;
    }
  }
  last_piece_ = kind;
  last_end_ = scanned_ = start + len;
  gap_breaks_ = 0;
  return true;
}

int HttpParser::onMessageBegin(llhttp_t* p) {
  HttpParser* h = self(p);
  h->head_.clear();
  h->started_ = true;
  h->head_done_ = false;
  h->completed_ = false;
  h->method_open_ = h->url_open_ = h->reason_open_ = h->field_open_ = h->value_open_ = false;
  h->url_done_ = false;
  h->reason_ = nullptr;
  h->section_ = Section::kHead;
  h->last_piece_ = Piece::kNone;
  h->gap_breaks_ = 0;
  // ext_piece_ too: a message that failed inside an extension leaves it counted, and a parser
  // reused for another message (the HTTP proxy's pooled exchanges) must not start from it.
  h->field_len_ = h->ext_bytes_ = h->ext_piece_ = 0;
  h->ext_quoted_ = false;
  h->hosts_ = h->host_index_ = 0;
  h->value_is_te_ = h->te_seen_ = h->te_bad_ = false;
  h->te_ = {};
  h->tail_ = 0;
  return 0;
}

int HttpParser::onMethod(llhttp_t* p, const char* at, size_t len) {
  HttpParser* h = self(p);
  if (!h->notePiece(Piece::kStartLine, h->method_open_, at, len))
    return h->fail("line break inside the request line");
  h->extend(&h->head_.method, &h->method_open_, at, len);
  return 0;
}

int HttpParser::onUrl(llhttp_t* p, const char* at, size_t len) {
  HttpParser* h = self(p);
  if (!h->notePiece(Piece::kStartLine, h->url_open_, at, len))
    return h->fail("line break inside the request line");
  h->extend(&h->head_.url, &h->url_open_, at, len);
  return 0;
}

int HttpParser::onStatus(llhttp_t* p, const char* at, size_t len) {
  HttpParser* h = self(p);
  if (!h->notePiece(Piece::kStartLine, h->reason_open_, at, len))
    return h->fail("line break inside the status line");
  h->extend(&h->head_.reason, &h->reason_open_, at, len);
  return 0;
}

int HttpParser::onHeaderField(llhttp_t* p, const char* at, size_t len) {
  HttpParser* h = self(p);
  if (!h->notePiece(Piece::kField, h->field_open_, at, len))
    return h->fail("line folding (obs-fold) or a bare line break in a field line");
  h->field_len_ += static_cast<uint32_t>(len);
  if (h->section_ != Section::kHead) {   // trailers pass through; only their syntax matters
    h->field_open_ = true;
    if (h->trailer_sink_ != nullptr) h->trailerPiece(Piece::kField, at, len);
    return 0;
  }
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
  HttpParser* h = self(p);
  h->field_open_ = false;
  if (h->field_len_ == 0) return h->fail("empty field name");
  h->field_len_ = 0;
  if (h->section_ != Section::kHead) return 0;
  const HeaderSpan& hs = h->head_.headers[h->head_.header_count];
  if (hs.name.len == 4 && equalsNoCase(hs.name.in(h->base_), "host")) {
    ++h->hosts_;
    h->host_index_ = h->head_.header_count;
  }
  h->value_is_te_ = hs.name.len == 17 && equalsNoCase(hs.name.in(h->base_), "transfer-encoding");
  return 0;
}

int HttpParser::onHeaderValue(llhttp_t* p, const char* at, size_t len) {
  HttpParser* h = self(p);
  // An empty value ("Host:\r\n") is reported as an empty piece where llhttp noticed it, past
  // the line break: no bytes to judge, and the next piece is judged against the field name.
  if (len == 0) return 0;
  if (!h->notePiece(Piece::kValue, h->value_open_, at, len))
    return h->fail("line folding (obs-fold) in a field value");
  if (h->section_ != Section::kHead) {
    h->value_open_ = true;
    if (h->trailer_sink_ != nullptr) h->trailerPiece(Piece::kValue, at, len);
    return 0;
  }
  HeaderSpan& hs = h->head_.headers[h->head_.header_count];
  h->extend(&hs.value, &h->value_open_, at, len);
  return 0;
}

int HttpParser::onHeaderValueComplete(llhttp_t* p) {
  HttpParser* h = self(p);
  h->value_open_ = false;
  if (h->section_ != Section::kHead) {
    if (h->trailer_sink_ != nullptr) h->trailerPiece(Piece::kNone, nullptr, 0);
    return 0;
  }
  // llhttp drops leading whitespace; trailing OWS is not part of the value either
  // (RFC 9110 §5.5), and key plugins must see "v" for "X-Key: v  ".
  HeaderSpan& hs = h->head_.headers[h->head_.header_count];
  while (hs.value.len > 0) {
    char c = h->base_[hs.value.off + hs.value.len - 1];
    if (c != ' ' && c != '\t') break;
    --hs.value.len;
  }
  if (h->value_is_te_) {
    h->te_seen_ = true;
    if (!addTransferCodings(hs.value.in(h->base_), &h->te_)) h->te_bad_ = true;
    h->value_is_te_ = false;
  }
  ++h->head_.header_count;
  return 0;
}

int HttpParser::onChunkHeader(llhttp_t* p) {
  HttpParser* h = self(p);
  if (p->content_length >= kMaxBodyLength) {
    h->error_ = Error::kBodyTooLarge;
    llhttp_set_error_reason(p, "chunk too large");
    return HPE_USER;
  }
  h->ext_bytes_ = h->ext_piece_ = 0;
  h->ext_quoted_ = false;
  h->in_chunk_data_ = p->content_length > 0;
  h->last_chunk_ = p->content_length;
  if (p->content_length == 0) {   // the last chunk: trailer fields may follow
    h->section_ = Section::kTrailers;
    h->last_piece_ = Piece::kNone;
    h->gap_breaks_ = 0;
  }
  return 0;
}

int HttpParser::onChunkComplete(llhttp_t* p) {
  self(p)->in_chunk_data_ = false;   // the CRLF after the data is read
  return 0;
}

int HttpParser::onChunkExtension(llhttp_t* p, const char* at, size_t len) {
  HttpParser* h = self(p);
  // Names and values; the one per piece counts the separators, so ";;;;" adds up too.
  h->ext_bytes_ += static_cast<uint32_t>(len) + 1;
  if (h->ext_bytes_ > kMaxChunkExtensionBytes) return h->fail("chunk extensions too long");
  // A name is a token (RFC 9112 §7.1.1); so is a value that did not open with a quote.
  // llhttp 8.1 lets a token value run into a quoted part ('b=i"x"'), which a backend that
  // reads the grammar as written refuses, and what it refuses lb must not forward.
  // A quoted value holds text only: llhttp 8.1 takes DEL there, which qdtext excludes.
  std::string_view piece(at, len);
  if (h->ext_quoted_ ? !isText(piece) : !std::all_of(piece.begin(), piece.end(), [](char c) {
        return isTokenChar(static_cast<unsigned char>(c));
      }))
    return h->fail("chunk extension is neither a token nor a quoted-string");
  h->ext_piece_ += static_cast<uint32_t>(len);
  return 0;
}

int HttpParser::onChunkExtensionValue(llhttp_t* p, const char* at, size_t len) {
  HttpParser* h = self(p);
  // A span may come in pieces across feeds; the first byte of the first piece says which of
  // the two forms the value takes.
  if (h->ext_piece_ == 0 && len > 0) h->ext_quoted_ = at[0] == '"';
  // llhttp 8.1 ends a token value at ';' and then wants CRLF or another ';' at once, so
  // "2;a=b;" CRLF passes with a dangling separator that a strict backend refuses (and
  // ";a=b;c=d" is refused by llhttp already). The final piece of a value span ends at the
  // byte that closed it, inside this feed.
  if (!h->ext_quoted_ && at + len < h->feed_end_ && at[len] == ';')
    return h->fail("chunk extension after a token value");
  return onChunkExtension(p, at, len);
}

int HttpParser::onChunkExtensionComplete(llhttp_t* p) {
  HttpParser* h = self(p);
  // A name and a value are a token or a quoted-string, never empty (RFC 9112 §7.1.1); llhttp
  // 8.1 takes ";=v" and ";n=", which a stricter backend would read otherwise.
  if (h->ext_piece_ == 0) return h->fail("empty chunk extension name or value");
  h->ext_piece_ = 0;
  h->ext_quoted_ = false;
  return 0;
}

int HttpParser::onHeadersComplete(llhttp_t* p) {
  HttpParser* h = self(p);
  h->head_done_ = true;
  h->head_.http_major = p->http_major;
  h->head_.http_minor = p->http_minor;
  h->head_.status = p->status_code;
  if (!h->checkHead()) return -1;
  h->keep_alive_ = llhttp_should_keep_alive(p) != 0;
  h->content_length_ = (p->flags & F_CONTENT_LENGTH) ? p->content_length : 0;
  if (h->content_length_ >= kMaxBodyLength) {
    h->error_ = Error::kBodyTooLarge;
    llhttp_set_error_reason(p, "content-length too large");
    return -1;
  }
  h->has_body_ = !(p->flags & F_SKIPBODY) &&
                 ((p->flags & F_CHUNKED) || h->content_length_ > 0 || llhttp_message_needs_eof(p));
  return HPE_PAUSED;
}

bool HttpParser::checkHead() noexcept {
  const bool request = parser_.type == HTTP_REQUEST;
  const ParsedHead& hd = head_;
  if (hd.http_major != 1 || hd.http_minor > 1) {
    fail("HTTP version not supported", request ? Error::kVersion : Error::kMalformed);
    return false;
  }
  // Transfer-Encoding (RFC 9112 §6.1, §6.3): the one framing header two parsers must read
  // alike, so anything short of a plain list that ends in one chunked is refused.
  if (te_seen_) {
    const char* bad = nullptr;
    if (hd.http_minor == 0)
      bad = "Transfer-Encoding in an HTTP/1.0 message";
    else if (te_bad_)
      bad = "Transfer-Encoding is not a list of transfer codings";
    else if (te_.codings == 0)
      bad = "empty Transfer-Encoding";
    else if (te_.chunked > 1)
      bad = "chunked applied twice";
    else if (te_.chunked == 1 && !te_.last_is_chunked)
      bad = "chunked is not the final transfer coding";
    else if (request && !te_.last_is_chunked)
      bad = "request with a Transfer-Encoding not ending in chunked";
    else if (parser_.flags & F_CONTENT_LENGTH)
      bad = "Content-Length with Transfer-Encoding";
    // The body is framed by what llhttp decided, so its reading and lb's must agree: llhttp
    // 8.1 does not take "chunked" followed by whitespace as chunked (found by the fuzz
    // target: the body would have been read as the next request).
    else if (te_.last_is_chunked != ((parser_.flags & F_CHUNKED) != 0))
      bad = "Transfer-Encoding read differently by llhttp";
    if (bad != nullptr) {
      fail(bad);
      return false;
    }
  }
  if (request) {
    // Host (RFC 9112 §3.2, RFC 9110 §7.2): exactly one in HTTP/1.1, at most one in 1.0, and
    // an authority, so that lb, its key plugins and the backend agree on it.
    if (hosts_ > 1 || (hosts_ == 0 && hd.http_minor == 1)) {
      fail(hosts_ > 1 ? "more than one Host" : "no Host in an HTTP/1.1 request");
      return false;
    }
    std::string_view host = hosts_ ? hd.headers[host_index_].value.in(base_) : std::string_view();
    if (!isValidHost(host)) {
      fail("Host is not a valid authority");
      return false;
    }
    std::string_view authority;
    switch (classifyTarget(hd.url.in(base_), parser_.method == HTTP_CONNECT, &authority)) {
      case TargetForm::kOrigin:
      case TargetForm::kAuthority:
        break;
      case TargetForm::kAsterisk:
        if (parser_.method != HTTP_OPTIONS) {
          fail("asterisk-form target without OPTIONS");
          return false;
        }
        break;
      case TargetForm::kAbsolute:
        // RFC 9112 §3.2.2 makes the target's authority win over Host; the backend may not
        // know that rule, and lb keys by what it reads, so both must say the same.
        if (hosts_ && !equalsNoCase(host, authority)) {
          fail("Host differs from the authority of an absolute-form target");
          return false;
        }
        break;
      case TargetForm::kInvalid:
        fail("invalid request-target");
        return false;
    }
    return true;
  }
  const int status = hd.status;
  if (status < 100 || status > 599) {
    fail("status code outside 100-599");
    return false;
  }
  if (!isValidReason(hd.reason.in(base_))) {
    fail("control character in the reason phrase");
    return false;
  }
  // RFC 9112 §6.3: a 1xx, 204 or 304 ends with its head. A 1xx or 204 may not even declare a
  // body (RFC 9110 §8.6, RFC 9112 §6.1): whoever reads it next would not agree on its end.
  if (status < 200 || status == 204) {
    if (te_seen_ || ((parser_.flags & F_CONTENT_LENGTH) && parser_.content_length > 0)) {
      fail("a 1xx or 204 response that declares a body");
      return false;
    }
  }
  if (status < 200 || status == 204 || status == 304) parser_.flags |= F_SKIPBODY;
  return true;
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
