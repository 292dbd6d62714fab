// libFuzzer target for the framing of memcached backend replies (mc::scanReply, the
// server connection's CacheWire::frameReply): the bytes arriving in pieces, with the scan's
// progress kept between reads as the server connection keeps it, frame exactly as they do
// all at once; a framed reply ends with "\r\n", frames alone to the same length, and is one
// line unless it carries data blocks (a get's VALUE items, mg's and ma's VA).
//
// Built and run by `make fuzz FUZZ_TARGETS=memcached_reply FUZZ_SECONDS=60`.
// Input layout: byte 0 = the reply kind (mc::ReplyKind, taken modulo 9); byte 1 = how the
// bytes are cut into reads (0: all at once); the rest is the backend's byte stream.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "lb/proxy/memcached/memcached_text.h"

namespace {

void check(bool ok, const char* what, std::string_view detail) {
  if (ok) return;
  fprintf(stderr, "memcached_reply_fuzz: %s\n%.*s\n", what, static_cast<int>(detail.size()),
          detail.data());
  abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t kind = data[0] % 9;
  const size_t cut = data[1];
  const char* p = reinterpret_cast<const char*>(data + 2);
  const size_t n = size - 2;
  const std::string_view in(p, n);
  lb::ReplyScan once;
  const int64_t whole = lb::mc::scanReply(kind, p, n, once);
  check(whole <= static_cast<int64_t>(n), "a reply longer than the bytes", in);
  if (cut > 0) {
    lb::ReplyScan scan;
    int64_t r = 0;
    for (size_t avail = cut < n ? cut : n;; avail = avail + cut < n ? avail + cut : n) {
      r = lb::mc::scanReply(kind, p, avail, scan);
      if (r != 0 || avail == n) break;
    }
    check(r == whole, "a reply arriving in pieces frames differently", in);
  }
  if (whole <= 0) return 0;
  const size_t len = static_cast<size_t>(whole);
  check(len >= 2 && p[len - 2] == '\r' && p[len - 1] == '\n', "a reply not ending in CRLF", in);
  lb::ReplyScan alone;
  check(lb::mc::scanReply(kind, p, len, alone) == whole, "a reply framed alone differs", in);
  const bool blocks = kind == lb::mc::kReplyValues || kind == lb::mc::kReplyMetaValue;
  const void* nl = memchr(p, '\n', len);
  check(blocks || static_cast<const char*>(nl) == p + len - 1, "a one-line reply of many lines", in);
  return 0;
}
