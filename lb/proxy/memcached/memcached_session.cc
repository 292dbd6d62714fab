#include "lb/proxy/memcached/memcached_session.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "lb/proxy/memcached/memcached_forward.h"
#include "lb/proxy/memcached/memcached_replies.h"
#include "lb/proxy/cache/cache_worker.h"
#include "lb/runtime/worker_env.h"

namespace lb {

using mc::Command;
using mc::kLoud;
using mc::kNoreply;
using mc::kQuietGet;
using mc::kQuietMath;
using mc::kQuietStore;

MemcachedSession::MemcachedSession(WorkerEnv& env, const std::shared_ptr<const Snapshot>& snapshot,
                                   uint32_t listener) noexcept
    : CacheSession(env, snapshot, listener, memcachedWire()) {}

void MemcachedSession::accept(WorkerEnv& env, uv_stream_t* server,
                              const std::shared_ptr<const Snapshot>& snapshot, uint32_t listener,
                              Admission admission) noexcept {
  auto* s = new (std::nothrow) MemcachedSession(env, snapshot, listener);
  if (s == nullptr) return;
  if (s->acceptFrom(server)) s->start(admission);
}

ReplyUse MemcachedSession::useReply(const CacheCommand& cmd, const char* p, size_t n) noexcept {
  if (cmd.kind == kGetMerge) return ReplyUse::kStore;
  return mc::dropReply(static_cast<uint8_t>(cmd.flags), p, n) ? ReplyUse::kDrop : ReplyUse::kPass;
}

void MemcachedSession::emitMerged(CacheCommand& cmd, ByteChain& out) noexcept {
  mc::mergeValues(cmd.parts, cmd.fragment_count, static_cast<const char*>(cmd.plan), cmd.keys,
                  cache().scratch().cursor, out);
}

std::string_view MemcachedSession::overLimitReply() const noexcept {
  return "ERROR Too many open connections\r\n";
}

std::string_view MemcachedSession::tooLargeReply() const noexcept {
  return "CLIENT_ERROR lb: request too large (over limits.max_request_bytes)\r\n";
}

size_t MemcachedSession::parse(const char* p, size_t n) noexcept {
  CacheScratch& sc = cache().scratch();
  size_t used = 0;
  try {
    while (used < n && serving() && canAccept()) {
      const mc::Request r = mc::parseRequest(p + used, n - used, limits().max_request_bytes,
                                             limits().max_arguments, sc.args, scanned_);
      switch (r.status) {
        case mc::Parse::kIncomplete:
          scanned_ = r.line_missing ? n - used : 0;
          needBytes(r.need);
          return used;
        case mc::Parse::kBinary: {
          // A binary client reads a binary answer: "not supported", then the connection
          // closes (nothing after the header could be read as text).
          if (CacheCommand* cmd = beginCommand(kPass)) {
            constexpr std::string_view kMessage =
                "lb speaks memcached's text protocol only; the binary protocol is not supported";
            char out[24 + kMessage.size()];
            const size_t len = mc::binaryRefusal(reinterpret_cast<const unsigned char*>(p + used),
                                                 kMessage, out);
            answerError(cmd, CacheErrorReason::kUnsupported, {out, len});
          }
          finish(CacheOutcome::kProtocolError);
          return n;
        }
        case mc::Parse::kError: {
          scanned_ = 0;
          if (CacheCommand* cmd = beginCommand(kPass)) {
            const std::string_view text(r.error);
            const CacheErrorReason reason =
                text.starts_with("SERVER_ERROR object too large") || text.find("too long") != text.npos ||
                        text.find("too many") != text.npos
                    ? CacheErrorReason::kTooLarge
                    : CacheErrorReason::kProtocol;
            // A noreply command's error is counted, not sent (memcached's out_string skips
            // it too): its client reads no reply for it.
            answerError(cmd, reason, r.noreply ? std::string_view() : text);
          }
          if (r.close) {
            finish(CacheOutcome::kProtocolError);
            return n;
          }
          used += r.length;
          if (r.skip > 0) {
            skipInput(r.skip);
            return used;
          }
          continue;
        }
        case mc::Parse::kCommand:
          scanned_ = 0;
          dispatch(r, p + used);
          used += r.length;
          continue;
      }
    }
  } catch (...) {   // scratch growth failed: out of memory
    finish(CacheOutcome::kProtocolError);
    return n;
  }
  return used;
}

void MemcachedSession::refuse(CacheCommand* cmd, CacheErrorReason reason,
                              std::string_view what) noexcept {
  // A noreply command gets no bytes, whatever happened: its client reads none, and one
  // would shift every later answer by one (memcached's out_string skips errors under
  // noreply too). The refusal is still counted.
  if (cmd->flags == kNoreply) {
    answerError(cmd, reason, {});
    return;
  }
  char text[512];
  int len = snprintf(text, sizeof text, "%s lb: %.*s\r\n",
                     reason == CacheErrorReason::kUnsupported ? "CLIENT_ERROR" : "SERVER_ERROR",
                     static_cast<int>(what.size()), what.data());
  if (len < 0 || static_cast<size_t>(len) >= sizeof text) len = sizeof text - 1;
  answerError(cmd, reason, {text, static_cast<size_t>(len)});
}

void MemcachedSession::answerFailure(CacheCommand* cmd, CacheErrorReason reason,
                                     std::string_view text) noexcept {
  // noreply: nothing (refuse says why). Quiet meta commands get their errors, as
  // memcached's out_errstring sends them.
  refuse(cmd, reason, text);
}

void MemcachedSession::dispatch(const mc::Request& r, const char* p) noexcept {
  const std::vector<std::string_view>& tokens = cache().scratch().args;
  CacheCommand* cmd = beginCommand(kPass);
  if (cmd == nullptr) return;
  switch (r.command) {
    case Command::kGet:
    case Command::kGets:
    case Command::kGat:
    case Command::kGats:
      routeRetrieval(cmd, r);
      return;
    case Command::kMetaNoop:
      answerStatic(cmd, "MN\r\n");
      return;
    case Command::kVersion:
      // The protocol level lb speaks (the text and meta commands of 1.6), and lb's own.
      answerStatic(cmd, "VERSION 1.6.0 lb-" LB_VERSION "\r\n");
      return;
    case Command::kQuit:
      answerStatic(cmd, {});
      finish(CacheOutcome::kQuit);
      return;
    case Command::kRefused: {
      char what[160];
      snprintf(what, sizeof what, "%.*s is not supported: it addresses one server, not a key",
               static_cast<int>(tokens[0].size() > 32 ? 32 : tokens[0].size()), tokens[0].data());
      refuse(cmd, CacheErrorReason::kUnsupported, what);
      return;
    }
    case Command::kUnknown:
      answerError(cmd, CacheErrorReason::kUnknownCommand, "ERROR\r\n");
      return;
    default:
      routeKey(cmd, r, p);
      return;
  }
}

// get/gets/gat/gats k1 k2 ...: one owner gets the whole line; several get one line each
// with their own keys, and the client gets every hit in the order of its keys. Linear in
// the keys: they are grouped by owner with a counting sort (as RedisSession::splitByOwner).
void MemcachedSession::routeRetrieval(CacheCommand* cmd, const mc::Request& r) noexcept {
  CacheScratch& sc = cache().scratch();
  const std::vector<std::string_view>& tokens = sc.args;
  const size_t keys = tokens.size() - r.first_key;
  sc.hosts.resize(keys);
  bool one_owner = true;
  for (size_t k = 0; k < keys; ++k) {
    const std::string_view key = tokens[r.first_key + k];
    if (!pickHost(key, &sc.hosts[k])) {
      refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for this key");
      return;
    }
    one_owner = one_owner && sc.hosts[k] == sc.hosts[0];
  }
  if (one_owner) {
    mc::writeRetrieval(r, tokens, nullptr, keys, openFragment(sc.hosts[0]));
    sendFragment(cmd, sc.hosts[0], mc::kReplyValues);
    return;
  }
  std::vector<int32_t>& frag_of_host = sc.fragment_of_host;
  std::vector<uint32_t>& host_of = sc.fragment_hosts;
  std::vector<uint32_t>& start = sc.cursor;   // per fragment: where its keys start in order
  host_of.clear();
  start.clear();
  uint16_t fragments = 0;
  for (size_t k = 0; k < keys; ++k) {
    int32_t& f = frag_of_host[sc.hosts[k]];
    if (f < 0) {
      f = fragments++;
      host_of.push_back(sc.hosts[k]);
      start.push_back(0);
    }
    ++start[static_cast<size_t>(f)];
  }
  cmd->kind = kGetMerge;
  cmd->keys = static_cast<uint32_t>(keys);
  // The plan names each key, so that the merge can tell a hit from a miss by key.
  std::vector<std::string_view>& plan_keys = sc.keys;
  std::vector<uint16_t>& plan_fragments = sc.key_fragments;
  plan_keys.assign(tokens.begin() + static_cast<ptrdiff_t>(r.first_key), tokens.end());
  plan_fragments.resize(keys);
  for (size_t k = 0; k < keys; ++k)
    plan_fragments[k] = static_cast<uint16_t>(frag_of_host[sc.hosts[k]]);
  // Counting sort: each fragment's keys, in the client's order, one run after another.
  uint32_t at = 0;
  for (uint16_t f = 0; f < fragments; ++f) {
    const uint32_t c = start[f];
    start[f] = at;
    at += c;
  }
  sc.order.resize(keys);
  for (size_t k = 0; k < keys; ++k) sc.order[start[plan_fragments[k]]++] = static_cast<uint32_t>(k);
  const bool ok = merge(cmd, fragments, mc::planSize(plan_keys));
  if (ok) {
    mc::writePlan(plan_keys, plan_fragments.data(), static_cast<char*>(cmd->plan));
    uint32_t from = 0;
    for (uint16_t f = 0; f < fragments; ++f) {   // start[f] is now where run f ends
      mc::writeRetrieval(r, tokens, sc.order.data() + from, start[f] - from,
                         openFragment(host_of[f]));
      sendFragment(cmd, host_of[f], mc::kReplyValues);
      from = start[f];
    }
  } else {
    cmd->merged = false;
    answerStatic(cmd, "SERVER_ERROR lb: out of memory\r\n");
  }
  for (uint32_t h : host_of) frag_of_host[h] = -1;
}

// One key, one owner. noreply and q are lb's to keep: the command goes on without them, in
// its canonical form, and useReply drops the answer the client did not want.
void MemcachedSession::routeKey(CacheCommand* cmd, const mc::Request& r, const char* p) noexcept {
  const std::vector<std::string_view>& tokens = cache().scratch().args;
  std::string_view key = tokens[1];
  char decoded[mc::kMaxKeyLength];
  if (r.base64_key) key = {decoded, mc::decodeBase64Key(tokens[1], decoded)};
  uint8_t quiet = kLoud;
  if (r.noreply) {
    quiet = kNoreply;
  } else if (r.quiet) {
    quiet = r.command == Command::kMetaGet          ? kQuietGet
            : r.command == Command::kMetaArithmetic ? kQuietMath
                                                    : kQuietStore;
  }
  cmd->flags = quiet;   // before any refusal: a noreply command gets none
  uint32_t host;
  if (!pickHost(key, &host)) {
    refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for this key");
    return;
  }
  mc::writeForwarded(r, tokens, p, openFragment(host));
  sendFragment(cmd, host, mc::replyKindOf(r.command));
}

}  // namespace lb
