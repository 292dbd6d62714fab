#include "lb/proxy/memcached/memcached_session.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "lb/proxy/memcached/memcached_replies.h"
#include "lb/runtime/cache_worker.h"
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
            answerError(cmd, reason, text);
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
  char text[512];
  int len = snprintf(text, sizeof text, "%s lb: %.*s\r\n",
                     reason == CacheErrorReason::kUnsupported ? "CLIENT_ERROR" : "SERVER_ERROR",
                     static_cast<int>(what.size()), what.data());
  if (len < 0 || static_cast<size_t>(len) >= sizeof text) len = sizeof text - 1;
  answerError(cmd, reason, {text, static_cast<size_t>(len)});
}

void MemcachedSession::answerFailure(CacheCommand* cmd, CacheErrorReason reason,
                                     std::string_view text) noexcept {
  // Errors come through noreply and quiet mode too, as memcached sends its own.
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
      routeRetrieval(cmd, r, {p, r.length});
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

// get/gets/gat/gats k1 k2 ...: one owner gets the line as it came; several get one line
// each with their own keys, and the client gets every hit in the order of its keys.
void MemcachedSession::routeRetrieval(CacheCommand* cmd, const mc::Request& r,
                                      std::string_view raw) noexcept {
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
    openFragment(sc.hosts[0]).append(raw);
    sendFragment(cmd, sc.hosts[0], mc::kReplyValues);
    return;
  }
  std::vector<int32_t>& frag_of_host = sc.fragment_of_host;
  std::vector<uint32_t>& host_of = sc.fragment_hosts;
  host_of.clear();
  uint16_t fragments = 0;
  for (size_t k = 0; k < keys; ++k) {
    int32_t& f = frag_of_host[sc.hosts[k]];
    if (f < 0) {
      f = fragments++;
      host_of.push_back(sc.hosts[k]);
    }
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
  const bool ok = merge(cmd, fragments, mc::planSize(plan_keys));
  if (ok) {
    mc::writePlan(plan_keys, plan_fragments.data(), static_cast<char*>(cmd->plan));
    for (uint16_t f = 0; f < fragments; ++f) {
      ByteChain& out = openFragment(host_of[f]);
      out.append(tokens[0]);
      if (r.first_key == 2) {   // gat, gats: the expiry first
        out.append(" ", 1);
        out.append(tokens[1]);
      }
      for (size_t k = 0; k < keys; ++k) {
        if (sc.hosts[k] != host_of[f]) continue;
        out.append(" ", 1);
        out.append(tokens[r.first_key + k]);
      }
      out.append("\r\n", 2);
      sendFragment(cmd, host_of[f], mc::kReplyValues);
    }
  } else {
    cmd->merged = false;
    answerStatic(cmd, "SERVER_ERROR lb: out of memory\r\n");
  }
  for (uint32_t h : host_of) frag_of_host[h] = -1;
}

// One key, one owner. noreply and q are lb's to keep: the line goes on without them, and
// useReply drops the answer the client did not want.
void MemcachedSession::routeKey(CacheCommand* cmd, const mc::Request& r, const char* p) noexcept {
  const std::vector<std::string_view>& tokens = cache().scratch().args;
  std::string_view key = tokens[1];
  char decoded[mc::kMaxKeyLength];
  if (r.base64_key) key = {decoded, mc::decodeBase64Key(tokens[1], decoded)};
  uint32_t host;
  if (!pickHost(key, &host)) {
    refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for this key");
    return;
  }
  uint8_t quiet = kLoud;
  if (r.noreply) {
    quiet = kNoreply;
  } else if (r.quiet) {
    quiet = r.command == Command::kMetaGet          ? kQuietGet
            : r.command == Command::kMetaArithmetic ? kQuietMath
            : r.command == Command::kMetaDebug      ? kLoud
                                                    : kQuietStore;
  }
  cmd->flags = quiet;
  ByteChain& out = openFragment(host);
  if (!r.noreply && !r.quiet) {
    out.append(p, r.length);
  } else {
    // The line without "noreply" (the last token) or without the q flag, then the data
    // block as it came.
    bool first = true;
    const size_t last = r.noreply ? tokens.size() - 1 : tokens.size();
    for (size_t i = 0; i < last; ++i) {
      if (r.quiet && i >= 2 && tokens[i] == "q") continue;
      if (!first) out.append(" ", 1);
      out.append(tokens[i]);
      first = false;
    }
    out.append("\r\n", 2);
    if (r.data_length > 0) out.append(p + r.data, r.data_length);
  }
  sendFragment(cmd, host, mc::kReplyLine);
}

}  // namespace lb
