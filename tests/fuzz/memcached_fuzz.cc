// libFuzzer target for lb's memcached request parsing and forwarding (lb/proxy/memcached:
// mc::parseRequest, memcached_forward.h), with a differential check against an independent
// strict reading of what memcached 1.6.18 makes of the bytes (tests/fuzz/strict_memcached.h):
//
//   - every command lb forwards must read, for memcached, as exactly one command taking all
//     of the forwarded bytes, with the same name, key(s) and data block, loud (lb keeps
//     noreply and q: its one reply per forwarded command must be memcached's one reply);
//   - a command lb accepts must be one memcached accepts too, with the same length, noreply
//     and quiet flag, read from the client's own bytes;
//   - the same bytes arriving in pieces (the `scanned` argument) parse to the same result;
//   - a retrieval split by owner forwards each part as a command of its keys.
//
// Built and run by `make fuzz FUZZ_TARGETS=memcached FUZZ_SECONDS=60`.
// Seeds: tests/fuzz/corpus/memcached/, one per finding of the hostile-input run (memcached_hostile_test.cc) and a few plain commands.
// Input layout: byte 0 = how the bytes are cut into reads (0: all at once); the rest is the
// client's byte stream.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "lb/proxy/memcached/memcached_forward.h"
#include "lb/proxy/memcached/memcached_text.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/strict_memcached.h"

namespace {

using lb::mc::Command;
using lb::mc::Parse;
using lb::mc::Request;

constexpr size_t kMaxBytes = 1 << 20;
constexpr size_t kMaxKeys = 64;

[[noreturn]] void mismatch(const char* what, std::string_view detail) {
  fuzz::mismatch("memcached_fuzz", what, detail);
}

void check(bool ok, const char* what, std::string_view detail) {
  if (!ok) mismatch(what, detail);
}

bool forwards(Command c) {
  return c != Command::kMetaNoop && c != Command::kVersion && c != Command::kQuit &&
         c != Command::kRefused && c != Command::kUnknown;
}

// flush_all and verbosity (sent to every server with fanout), which the reference reader
// does not know: forwarded as their words without noreply, each a token of the line, and
// nothing else (no second line a server could run as a command).
bool wholeServer(Command c) { return c == Command::kFlushAll || c == Command::kVerbosity; }

void checkWholeServer(const Request& r, const std::vector<std::string_view>& tokens,
                      const char* p) {
  std::string fwd;
  lb::mc::writeForwarded(r, tokens, p, fwd);
  std::string want(tokens[0]);
  const size_t words = tokens.size() - (r.noreply ? 1 : 0);
  check(words <= 2, "a whole-server command with more than one argument", fwd);
  if (words == 2) {
    for (char c : tokens[1]) check(c == '-' || (c >= '0' && c <= '9'), "a non-numeric argument", fwd);
    want += " " + std::string(tokens[1]);
  }
  check(fwd == want + "\r\n", "a whole-server command forwarded in another form", fwd);
}

bool isRetrieval(Command c) {
  return c == Command::kGet || c == Command::kGets || c == Command::kGat || c == Command::kGats;
}

// The forwarded bytes read by memcached: one loud command with lb's name, keys and block.
void checkForwarded(const std::string& fwd, std::string_view name,
                    const std::vector<std::string>& keys, std::string_view data) {
  const strict_memcached::Command ref = strict_memcached::read(fwd);
  check(ref.complete && ref.consumed == fwd.size(), "forwarded bytes are not one command", fwd);
  check(!ref.error, "memcached refuses what lb forwards", fwd);
  check(!ref.noreply && !ref.quiet, "a forwarded command is not loud", fwd);
  check(ref.name == name, "memcached reads another command name", fwd);
  check(ref.keys == keys, "memcached reads other keys", fwd);
  check(ref.data == data, "memcached reads another data block", fwd);
}

void checkCommand(const Request& r, const std::vector<std::string_view>& tokens, const char* p,
                  size_t n) {
  const std::string_view in(p, n);
  if (wholeServer(r.command)) {
    checkWholeServer(r, tokens, p);
    return;
  }
  if (!forwards(r.command)) return;
  // The client's own bytes: memcached takes the same command, as long and as quiet.
  const strict_memcached::Command orig = strict_memcached::read(in);
  check(orig.complete && !orig.error, "lb accepts a command memcached refuses", in.substr(0, r.length));
  check(orig.consumed == r.length, "memcached reads a command of another length", in.substr(0, r.length));
  check(orig.noreply == r.noreply, "memcached reads noreply differently", in.substr(0, r.line));
  check(orig.quiet == r.quiet, "memcached reads the q flag differently", in.substr(0, r.line));

  const std::string name(tokens[0]);
  std::string fwd;
  if (isRetrieval(r.command)) {
    std::vector<std::string> keys(tokens.begin() + static_cast<ptrdiff_t>(r.first_key), tokens.end());
    lb::mc::writeRetrieval(r, tokens, nullptr, 0, fwd);
    checkForwarded(fwd, name, keys, "");
    // A split: every other key, as routeRetrieval sends one owner's share.
    std::vector<uint32_t> index;
    std::vector<std::string> part;
    for (uint32_t k = 0; k < keys.size(); k += 2) {
      index.push_back(k);
      part.push_back(keys[k]);
    }
    fwd.clear();
    lb::mc::writeRetrieval(r, tokens, index.data(), index.size(), fwd);
    checkForwarded(fwd, name, part, "");
    return;
  }
  std::string key(tokens[1]);
  if (r.base64_key) {
    char decoded[lb::mc::kMaxKeyLength];
    key.assign(decoded, lb::mc::decodeBase64Key(tokens[1], decoded));
  }
  lb::mc::writeForwarded(r, tokens, p, fwd);
  const std::string_view data =
      r.data_length >= 2 ? std::string_view(p + r.data, r.data_length - 2) : std::string_view();
  checkForwarded(fwd, name, {key}, data);
}

// parseRequest fed `cut` more bytes at a time, as the session feeds it: the same result as
// all at once.
Request inPieces(const char* p, size_t n, size_t cut, std::vector<std::string_view>& tokens) {
  size_t avail = cut < n ? cut : n;
  size_t scanned = 0;
  for (;;) {
    Request r = lb::mc::parseRequest(p, avail, kMaxBytes, kMaxKeys, tokens, scanned);
    if (r.status != Parse::kIncomplete || avail == n) return r;
    scanned = r.line_missing ? avail : 0;
    avail = avail + cut < n ? avail + cut : n;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t cut = data[0];
  const char* p = reinterpret_cast<const char*>(data + 1);
  const size_t n = size - 1;
  std::vector<std::string_view> tokens, piece_tokens;
  size_t used = 0;
  while (used < n) {
    const Request r = lb::mc::parseRequest(p + used, n - used, kMaxBytes, kMaxKeys, tokens);
    if (cut > 0) {
      const Request q = inPieces(p + used, n - used, cut, piece_tokens);
      // (A line lb closes on ends the stream: how much of it was there does not matter.)
      check(q.status == r.status && (r.close || q.length == r.length) && q.command == r.command,
            "a command arriving in pieces parses differently", {p + used, n - used});
    }
    if (r.status == Parse::kIncomplete || r.status == Parse::kBinary) break;
    if (r.status == Parse::kError) {
      if (r.close) break;
      used += r.length + r.skip;
      continue;
    }
    checkCommand(r, tokens, p + used, n - used);
    used += r.length;
  }
  return 0;
}
