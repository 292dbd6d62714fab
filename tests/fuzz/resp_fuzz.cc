// libFuzzer target for lb's RESP parsing (lb/proxy/redis/resp.h), with a differential check
// against an independent model of Redis 7.0 (tests/fuzz/strict_resp.h):
//
//   requests   a client byte stream through resp::parseRequest, all at once and again in
//              pieces (with a RequestProgress, as the session feeds it); the two must agree.
//              Every command lb accepts, the model must read as exactly the same argv from
//              exactly as many bytes (and an empty command as empty); lb must refuse what the
//              model refuses; and the bytes lb would forward (resp::appendCommand) must read,
//              for the model, as that same argv in exactly their length. What
//              resp::matchGet (the session's GET shortcut) takes must be the same GET for
//              parseRequest. Then the next pipelined command the same way.
//   replies    a backend byte stream through resp::scanValue in pieces: every reply lb frames
//              must be one the model frames with the same length, and every reply the model
//              frames lb must frame the same.
//   merges     the replies the model frames, as the parts of a split MGET, DEL or MSET, through
//              redis::mergeReplies: the client gets an error, or exactly what one server
//              holding every key would have answered (each part checked against its keys).
//
// Built and run by `make fuzz` (see the Makefile): make fuzz FUZZ_TARGETS=resp FUZZ_SECONDS=60
// Seeds: tests/fuzz/corpus/resp/ (byte 0 = flags, then the bytes).
//
// Input layout: byte 0 = flags (bit 0: the client has not authenticated on a password
// listener; bit 1: a backend's replies, not a client's commands; bit 2: with bit 1, merges:
// then byte 1 = the merge kind (mod 3, + 1), byte 2 = fragments (mod 4, + 1), byte 3 = keys
// (mod 32, + 1), then one byte per key (its fragment, mod fragments), then the replies; bits
// 4-7: how the bytes are cut into reads, 0 = all at once); the rest is the byte stream.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "lb/proxy/redis/redis_replies.h"
#include "lb/proxy/redis/resp.h"
#include "lb/proxy/cache/cache_worker.h"
#include "lb/net/buffer_pool.h"
#include "lb/proxy/cache/byte_chain.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/strict_resp.h"

namespace {

using lb::resp::Parse;
using lb::resp::Request;

constexpr size_t kMaxBulk = 1 << 20;
constexpr size_t kMaxArgs = 4096;

[[noreturn]] void mismatch(const char* what, std::string_view detail = {}) {
  fuzz::mismatch("resp_fuzz", what, detail);
}

using fuzz::Cuts;

std::vector<std::string> copyArgs(const std::vector<std::string_view>& args) {
  return {args.begin(), args.end()};
}

std::string chainText(lb::ByteChain& out) {
  std::string s;
  uv_buf_t bufs[64];
  size_t skip = 0;
  while (skip < out.size()) {
    const int n = out.buffers(bufs, 64, skip);
    for (int i = 0; i < n; ++i) {
      s.append(bufs[i].base, bufs[i].len);
      skip += bufs[i].len;
    }
  }
  return s;
}

void checkCommands(const std::string& stream, bool unauthenticated, Cuts cuts) {
  lb::BufferPool pool;
  std::vector<std::string_view> args;
  std::string text;
  size_t off = 0;
  while (off < stream.size()) {
    const std::string rest = stream.substr(off);
    const Request r = lb::resp::parseRequest(rest.data(), rest.size(), kMaxBulk, kMaxArgs, args,
                                             text, !unauthenticated, nullptr);
    const std::vector<std::string> argv = copyArgs(args);
    // The redis session's GET shortcut (resp::matchGet, for a client that has
    // authenticated): what it takes must be this very GET.
    if (!unauthenticated) {
      std::string_view key;
      const size_t got = lb::resp::matchGet(rest.data(), rest.size(), kMaxBulk, &key);
      if (got > 0 && (r.status != Parse::kCommand || r.length != got || r.inline_form ||
                      argv.size() != 2 || !lb::resp::equalsLower(argv[0], "get") ||
                      argv[1] != key))
        mismatch("matchGet took what parseRequest reads otherwise", rest);
    }

    // The same bytes in pieces, with the progress kept between calls, as the session does.
    lb::resp::RequestProgress progress;
    size_t n = cuts.next(rest.size());
    Request piece;
    for (;;) {
      piece = lb::resp::parseRequest(rest.data(), n, kMaxBulk, kMaxArgs, args, text,
                                     !unauthenticated, &progress);
      if (piece.status != Parse::kIncomplete || n == rest.size()) break;
      // The session calls again only once `need` bytes are here; calling sooner (at the end
      // of the input) must still say incomplete, or `need` claimed too much.
      size_t want = n + cuts.next(rest.size() - n);
      if (piece.need > want) want = piece.need;
      n = want < rest.size() ? want : rest.size();
    }
    if (piece.status != Parse::kIncomplete || r.status != Parse::kIncomplete) {
      if (piece.status != r.status) mismatch("a parse in pieces ends differently", rest);
      if (r.status == Parse::kCommand &&
          (piece.length != r.length || copyArgs(args) != argv || piece.inline_form != r.inline_form))
        mismatch("a parse in pieces reads another command", rest);
      if (r.status == Parse::kEmpty && piece.length != r.length)
        mismatch("a parse in pieces reads another empty command", rest);
      if (r.status == Parse::kError && std::string_view(piece.error) != r.error)
        mismatch("a parse in pieces fails differently", rest);
    }
    if (piece.status != Parse::kIncomplete && progress.pos != 0)
      mismatch("the progress outlived its command", rest);

    const strict_resp::Command ref = strict_resp::readCommand(rest, unauthenticated);
    if (ref.status == strict_resp::Status::kError && r.status != Parse::kError)
      mismatch("lb did not refuse what Redis refuses", rest);
    if (r.status == Parse::kEmpty) {
      if (ref.status != strict_resp::Status::kEmpty || ref.consumed != r.length)
        mismatch("lb read an empty command where Redis does not", rest);
    }
    if (r.status != Parse::kCommand) {
      if (r.status == Parse::kEmpty) {
        off += r.length;
        continue;
      }
      return;
    }
    if (ref.status != strict_resp::Status::kCommand)
      mismatch("lb accepted a command Redis does not read", rest);
    if (ref.consumed != r.length) mismatch("lb and Redis read commands of different lengths", rest);
    if (ref.argv != argv) mismatch("lb and Redis read different arguments", rest);

    // What lb forwards must be that command for Redis too, and canonical for lb.
    // args were overwritten by the parse in pieces: parse again for what lb forwards.
    lb::resp::parseRequest(rest.data(), rest.size(), kMaxBulk, kMaxArgs, args, text,
                           !unauthenticated, nullptr);
    lb::ByteChain fwd(pool);
    lb::resp::appendCommand(fwd, {rest.data(), r.length}, r.inline_form, args);
    const std::string sent = chainText(fwd);
    const strict_resp::Command back = strict_resp::readCommand(sent, false);
    if (back.status != strict_resp::Status::kCommand || back.consumed != sent.size() ||
        back.argv != argv)
      mismatch("what lb forwards reads otherwise for Redis", sent);
    // And exactly the canonical array of those arguments, whichever form the client used.
    lb::ByteChain canonical(pool);
    lb::resp::appendArrayHeader(canonical, args.size());
    for (std::string_view a : args) lb::resp::appendBulk(canonical, a);
    if (chainText(canonical) != sent) mismatch("what lb forwards is not the canonical array", sent);
    std::vector<std::string_view> again;
    std::string again_text;
    const Request fr = lb::resp::parseRequest(sent.data(), sent.size(), kMaxBulk, kMaxArgs,
                                              again, again_text, true, nullptr);
    if (fr.status != Parse::kCommand || fr.length != sent.size() || fr.inline_form ||
        copyArgs(again) != argv)
      mismatch("what lb forwards is not a canonical command for lb", sent);
    off += r.length;
  }
}

void checkReplies(const std::string& stream, Cuts cuts) {
  size_t off = 0;
  while (off < stream.size()) {
    const std::string rest = stream.substr(off);
    lb::ReplyScan scan;
    size_t n = cuts.next(rest.size());
    int64_t len = 0;
    for (;;) {
      len = lb::resp::scanValue(rest.data(), n, scan);
      if (len != 0 || n == rest.size()) break;
      n += cuts.next(rest.size() - n);
    }
    const long long ref = strict_resp::readReply(rest, 0);
    if (len > 0 && ref != len) mismatch("lb framed a reply Redis does not write so", rest);
    if (ref > 0 && len != ref) mismatch("lb did not frame a reply Redis writes", rest);
    if (len <= 0) return;
    off += static_cast<size_t>(len);
  }
}

void checkMerge(const std::string& in) {
  if (in.size() < 3) return;
  const uint8_t kind = static_cast<uint8_t>(1 + static_cast<uint8_t>(in[0]) % 3);
  const uint16_t fragments = static_cast<uint16_t>(1 + static_cast<uint8_t>(in[1]) % 4);
  const uint32_t keys = 1 + static_cast<uint8_t>(in[2]) % 32;
  if (in.size() < 3 + keys) return;
  std::vector<uint16_t> plan(keys);
  std::vector<uint32_t> per(fragments, 0);
  for (uint32_t k = 0; k < keys; ++k) {
    plan[k] = static_cast<uint16_t>(static_cast<uint8_t>(in[3 + k]) % fragments);
    ++per[plan[k]];
  }
  for (uint32_t c : per)
    if (c == 0) return;   // lb never makes a fragment without keys
  std::vector<std::string> parts;
  size_t at = 3 + keys;
  const std::string stream = in.substr(at);
  size_t pos = 0;
  while (parts.size() < fragments) {
    const long long end = strict_resp::readReply(stream, pos);
    if (end <= 0) return;
    parts.push_back(stream.substr(pos, static_cast<size_t>(end) - pos));
    pos = static_cast<size_t>(end);
  }
  std::vector<lb::FragmentReply> replies;
  for (const auto& p : parts) replies.push_back({p.data(), static_cast<uint32_t>(p.size())});
  lb::redis::MergeInput m;
  m.kind = kind;
  m.parts = replies.data();
  m.fragment_count = fragments;
  m.plan = plan.data();
  m.keys = keys;
  lb::CacheScratch sc;
  lb::BufferPool pool;
  lb::ByteChain out(pool);
  lb::redis::mergeReplies(m, sc, out);
  const std::string got = chainText(out);
  if (got.empty() || strict_resp::readReply(got, 0) != static_cast<long long>(got.size()))
    mismatch("a merge is not one reply", got);
  for (const auto& p : parts)
    if (p[0] == '-') {
      if (got[0] != '-') mismatch("a merge hid a part's error", got);
      return;
    }
  if (got[0] == '-') return;   // refused: fine, as long as no wrong merge got through
  // What one server holding every key would have answered.
  if (kind == lb::redis::kAllOk) {
    for (const auto& p : parts)
      if (p != "+OK\r\n") mismatch("MSET merged a part that was not +OK", got);
    if (got != "+OK\r\n") mismatch("MSET merged to something else", got);
    return;
  }
  if (kind == lb::redis::kSum) {
    long long total = 0;
    for (uint16_t f = 0; f < fragments; ++f) {
      long long v = 0;
      if (parts[f][0] != ':' ||
          !strict_resp::string2ll(parts[f].data() + 1, parts[f].size() - 3, &v) || v < 0 ||
          v > static_cast<long long>(per[f]))
        mismatch("a sum merged a part that is not a count of its keys", got);
      total += v;
    }
    if (got != ":" + std::to_string(total) + "\r\n") mismatch("a sum is wrong", got);
    return;
  }
  // MGET: each part an array of exactly its keys' values, merged in key order.
  std::vector<std::vector<std::string>> values(fragments);
  for (uint16_t f = 0; f < fragments; ++f) {
    const std::string& p = parts[f];
    const size_t cr = p.find('\r');
    long long count = 0;
    if (p[0] != '*' || !strict_resp::string2ll(p.data() + 1, cr - 1, &count) ||
        count != static_cast<long long>(per[f]))
      mismatch("MGET merged a part of the wrong length", got);
    size_t e = cr + 2;
    for (long long i = 0; i < count; ++i) {
      const long long end = strict_resp::readReply(p, e);
      if (p[e] != '$') mismatch("MGET merged a value that is not a bulk string", got);
      values[f].push_back(p.substr(e, static_cast<size_t>(end) - e));
      e = static_cast<size_t>(end);
    }
  }
  std::string want = "*" + std::to_string(keys) + "\r\n";
  std::vector<size_t> next(fragments, 0);
  for (uint32_t k = 0; k < keys; ++k) want += values[plan[k]][next[plan[k]]++];
  if (got != want) mismatch("MGET merged out of key order", got);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  const std::string stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  Cuts cuts{static_cast<unsigned>(flags >> 4), static_cast<unsigned>(size)};
  if ((flags & 6) == 6)
    checkMerge(stream);
  else if (flags & 2)
    checkReplies(stream, cuts);
  else
    checkCommands(stream, (flags & 1) != 0, cuts);
  return 0;
}
