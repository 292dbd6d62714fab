// H2Stream, the request's way up: its header block (fields, cookie crumbs, what lb checks on
// top of nghttp2), the HTTP/1.1 head written from it, and the body as DATA arrives, with the
// window opened only as the backend takes the bytes.
#include <charconv>
#include <cstdio>
#include <cstring>

#include "lb/proxy/h2/h2_stream.h"

namespace lb {

// ---- the request's header block ------------------------------------------------------------

bool H2Stream::onField(std::string_view name, std::string_view value, bool trailer) noexcept {
  if (trailer) {
    // Trailers go up only in a chunked body, which has a place for them (RFC 9112 §7.1.2);
    // a body framed by content-length has none, and they are dropped, as nginx does.
    if (!chunked_up_ || phase_ == Phase::kAnswered || name.empty() || name[0] == ':')
      return true;
    bool ok = end_written_ || up_q_.append("0\r\n", 3);
    end_written_ = true;
    ok = ok && up_q_.append(name.data(), name.size()) && up_q_.append(": ", 2) &&
         up_q_.append(value.data(), value.size()) && up_q_.append("\r\n", 2);
    if (!ok) reset(NGHTTP2_INTERNAL_ERROR);
    return true;
  }
  if (phase_ != Phase::kHeaders) return true;
  list_bytes_ += name.size() + value.size() + 32;
  // An HPACK bomb: a few bytes on the wire naming big fields of the dynamic table again and
  // again. Past kBombFactor times the limit it is no confused client: the connection ends
  // now, before nghttp2 decodes the rest of the block.
  if (list_bytes_ > kBombFactor * lst_->config->h2.max_header_list) return false;
  if (oversized_) return true;
  if (fields_ == nullptr) fields_ = conn_->worker().buffers().get();
  if (list_bytes_ > lst_->config->h2.max_header_list ||
      fields_len_ + name.size() + value.size() > BufferPool::kBlockSize ||
      (name[0] != ':' && header_count_ == ParsedHead::kMaxHeaders)) {
    oversized_ = true;
    return true;
  }
  char* n = fields_ + fields_len_;
  memcpy(n, name.data(), name.size());
  char* v = n + name.size();
  memcpy(v, value.data(), value.size());
  fields_len_ += static_cast<uint32_t>(name.size() + value.size());
  const std::string_view nv(n, name.size()), vv(v, value.size());
  if (nv == ":method")
    method_ = vv;
  else if (nv == ":path")
    path_ = vv;
  else if (nv == ":authority")
    authority_ = vv;
  else if (nv == ":scheme")
    scheme_ = vv;
  else if (nv[0] != ':')
    headers_[header_count_++] = {nv, vv};
  return true;
}

std::string_view H2Stream::fieldValue(std::string_view name) const noexcept {
  for (uint32_t i = 0; i < header_count_; ++i)
    if (headers_[i].name == name) return headers_[i].value;
  return {};
}

// The block is whole (nghttp2 has checked RFC 9113 §8.2-8.3: lowercase names, no
// connection-specific fields, `te: trailers` only, the pseudo-header fields a request needs).
// What lb adds: a request names its authority, lb does not tunnel CONNECT, the cookie crumbs
// are joined, and the HTTP/1.1 head is written now, so that DATA in the same read follows it.
void H2Stream::onHeadersEnd(bool end_stream) noexcept {
  if (phase_ != Phase::kHeaders) return;
  has_body_ = !end_stream;
  request_ended_ = end_stream;
  if (oversized_) {
    answer(431, HttpErrorReason::kHeaderTooLarge);
    conn_->noteOversizedHeaders();   // last: it may end the connection, and this stream
    return;
  }
  if (authority_.empty()) authority_ = fieldValue("host");
  if (authority_.empty() || method_ == "CONNECT" || path_.empty()) {
    answer(400, HttpErrorReason::kMalformed);
    return;
  }
  // RFC 9113 §8.2.3: a client may split cookie into crumbs; HTTP/1.1 wants one field.
  uint32_t first_cookie = header_count_, crumbs = 0;
  for (uint32_t i = 0; i < header_count_; ++i) {
    if (headers_[i].name != "cookie") continue;
    if (crumbs++ == 0) first_cookie = i;
  }
  if (crumbs > 1) {
    const uint32_t start = fields_len_;
    for (uint32_t i = first_cookie; i < header_count_; ++i) {
      if (headers_[i].name != "cookie") continue;
      const std::string_view v = headers_[i].value;
      if (fields_len_ + v.size() + 2 > BufferPool::kBlockSize) {
        answer(431, HttpErrorReason::kHeaderTooLarge);
        return;
      }
      if (fields_len_ > start) {
        memcpy(fields_ + fields_len_, "; ", 2);
        fields_len_ += 2;
      }
      memcpy(fields_ + fields_len_, v.data(), v.size());
      fields_len_ += static_cast<uint32_t>(v.size());
    }
    headers_[first_cookie].value = {fields_ + start, fields_len_ - start};
    uint32_t out = first_cookie + 1;
    for (uint32_t i = first_cookie + 1; i < header_count_; ++i)
      if (headers_[i].name != "cookie") headers_[out++] = headers_[i];
    header_count_ = out;
  }
  const std::string_view cl = fieldValue("content-length");
  chunked_up_ = has_body_ && cl.empty();
  // nghttp2 has checked it is digits (and will check the DATA against it).
  if (has_body_ && !cl.empty()) std::from_chars(cl.data(), cl.data() + cl.size(), body_declared_);
  if (!writeRequestHead()) {
    answer(431, HttpErrorReason::kHeaderTooLarge);
    return;
  }
  phase_ = Phase::kReady;
}

// The HTTP/1.1 request head: the request line from :method and :path, Host from
// :authority, the fields in order (cookie joined, x-forwarded-* replaced), and the body's
// framing: its content-length, else chunked, else none (content-length: 0 for a method
// that usually has a body). `put` takes each piece in order and says whether it was taken.
template <typename Put>
bool H2Stream::requestHead(Put&& put) const noexcept {
  bool ok = put(method_) && put(" ") && put(path_) && put(" HTTP/1.1\r\nhost: ") &&
            put(authority_) && put("\r\n");
  std::string_view xff;
  for (uint32_t i = 0; ok && i < header_count_; ++i) {
    const HttpHeader& h = headers_[i];
    if (h.name == "host" || h.name == "te" || h.name == "x-forwarded-proto") continue;
    if (h.name == "x-forwarded-for") {
      xff = h.value;
      continue;
    }
    ok = put(h.name) && put(": ") && put(h.value) && put("\r\n");
  }
  ok = ok && put("x-forwarded-for: ");
  if (ok && !xff.empty()) ok = put(xff) && put(", ");
  ok = ok && put(conn_->clientIp()) && put("\r\nx-forwarded-proto: ") &&
       put(conn_->tls() ? "https" : "http") && put("\r\n");
  if (chunked_up_) {
    ok = ok && put("transfer-encoding: chunked\r\n");
  } else if (!has_body_ && fieldValue("content-length").empty() &&
             (method_ == "POST" || method_ == "PUT" || method_ == "PATCH")) {
    ok = ok && put("content-length: 0\r\n");
  }
  return ok && put("\r\n");
}

// Measured first, so that a head that fits the queue's tail block (every head that fits a
// block, the queue being empty) is copied there piece by piece with no bookkeeping between;
// a longer one goes through append().
bool H2Stream::writeRequestHead() noexcept {
  size_t len = 0;
  requestHead([&](std::string_view s) {
    len += s.size();
    return true;
  });
  if (char* out = up_q_.reserve(len)) {
    char* p = out;
    requestHead([&](std::string_view s) {
      memcpy(p, s.data(), s.size());
      p += s.size();
      return true;
    });
    up_q_.commit(len);
    return true;
  }
  return requestHead([&](std::string_view s) { return up_q_.append(s.data(), s.size()); });
}

void H2Stream::onData(const uint8_t* data, size_t len) noexcept {
  body_in_ += len;
  owed_ += len;
  if (phase_ == Phase::kAnswered) {   // lb answered already: the rest is read and dropped
    openWindow();
    return;
  }
  bool ok = true;
  if (chunked_up_) {
    char size[24];
    const int k = snprintf(size, sizeof size, "%zx\r\n", len);
    ok = up_q_.append(size, static_cast<size_t>(k)) &&
         up_q_.append(reinterpret_cast<const char*>(data), len) && up_q_.append("\r\n", 2);
  } else {
    size_t take = len;
    if (body_in_ == body_declared_) {   // the declared end: its last byte waits for END_STREAM
      held_byte_ = static_cast<char>(data[len - 1]);
      byte_held_ = true;
      --take;
    }
    ok = up_q_.append(reinterpret_cast<const char*>(data), take);
  }
  if (!ok)   // past the window lb gave: the client ignored flow control
    reset(NGHTTP2_FLOW_CONTROL_ERROR);
}

void H2Stream::onDataFrameEnd(bool end_stream) noexcept {
  if (end_stream)
    onRequestEnd();
  else if (phase_ == Phase::kExchange)
    pumpUp();
}

void H2Stream::onRequestEnd() noexcept {
  request_ended_ = true;
  if (phase_ == Phase::kAnswered) return;
  if (byte_held_) {
    up_q_.append(&held_byte_, 1);
    byte_held_ = false;
  }
  if (chunked_up_) {
    if (!end_written_) up_q_.append("0\r\n", 3);
    end_written_ = true;
    up_q_.append("\r\n", 2);
  }
  if (phase_ == Phase::kExchange) pumpUp();
}
// ---- the request's way up -------------------------------------------------------------------

void H2Stream::pumpUp() noexcept {
  while (up_ != nullptr && phase_ == Phase::kExchange && !up_->writing() && !up_q_.empty()) {
    const std::string_view f = up_q_.front();
    const int w = up_->write(f.data(), f.size());
    if (w < 0) {
      upstreamFailed(false);
      return;
    }
    if (w == 1) {   // the rest is queued: onWritten takes it off the queue
      up_inflight_ = f.size();
      break;
    }
    up_q_.consume(f.size());
  }
  openWindow();
}

// The client may send as much more as the backend has taken: WINDOW_UPDATE for what left.
void H2Stream::openWindow() noexcept {
  if (owed_ == 0 || up_q_.size() >= kBodyHigh) return;
  nghttp2_session_consume(conn_->session(), id_, owed_);
  owed_ = 0;
  conn_->wantWrite();
}

void H2Stream::onWritten(Connection&, ConnectionWrite*, int status) noexcept {
  if (status < 0) {
    if (status != UV_ECANCELED) upstreamFailed(false);
    return;
  }
  up_q_.consume(up_inflight_);
  up_inflight_ = 0;
  if (response_done_) {   // the answer came first; the request's rest was on its way
    releaseUpstream(false);
    return;
  }
  pumpUp();
}

}  // namespace lb
