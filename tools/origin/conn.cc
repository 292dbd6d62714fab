// lb-origin's connection handler: how a streamed answer moves on (a delay's end, an echoed
// body, /bytes as writes drain, a tunnel's bytes). What a request asks for and the answer's
// head are in tools/origin/respond.cc; reading, parsing, writing and closing are lb's HTTP
// server's (lb/http/server_conn.h).
#include "tools/origin/conn.h"

#include <charconv>

namespace lb::origin {

OriginConn::OriginConn(OriginShared* shared)
    : shared_(shared), id_(shared->connections_accepted.fetch_add(1) + 1) {
  shared_->connections_active.fetch_add(1);
}

OriginConn::~OriginConn() { shared_->connections_active.fetch_sub(1); }

std::string hexSize(uint64_t n) {
  char buf[17];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), n, 16);
  (void)ec;
  return std::string(buf, end);
}

void OriginConn::onTimer(HttpServerConn& conn) {
  startResponse(conn);
  conn.resume();
}

void OriginConn::onBody(HttpServerConn& conn, std::string_view data) {
  ex_.body_bytes += data.size();
  if (ex_.mode != Mode::kEcho) return;
  // Copied: `data` lies in the connection's read buffer, which the next read reuses.
  if (ex_.chunked_out) conn.write(hexSize(data.size()) + "\r\n" + std::string(data) + "\r\n");
  else conn.write(std::string(data));
}

void OriginConn::onRequestComplete(HttpServerConn& conn) {
  if (ex_.mode != Mode::kEcho) return;
  if (ex_.chunked_out) conn.write("0\r\nX-Body-Bytes: " + std::to_string(ex_.body_bytes) + "\r\n\r\n");
  finishResponse(conn);
}

void OriginConn::onWritten(HttpServerConn& conn) {
  if (ex_.mode == Mode::kBytes && !ex_.answer_done) sendBytesChunk(conn);
}

void OriginConn::onTunnelData(HttpServerConn& conn, std::string_view data) {
  conn.write(std::string(data));   // the upgrade's protocol, echoed raw
}

void OriginConn::finishResponse(HttpServerConn& conn) {
  ex_.answer_done = true;
  conn.finish();
}

}  // namespace lb::origin
