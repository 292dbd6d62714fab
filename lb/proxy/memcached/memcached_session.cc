#include "lb/proxy/memcached/memcached_session.h"

#include <cstdio>
#include <cstring>

#include "lb/core/log.h"
#include "lb/proxy/memcached/memcached_forward.h"
#include "lb/proxy/memcached/memcached_replies.h"
#include "lb/runtime/worker_env.h"

namespace lb {

using mc::Command;
using mc::kLoud;
using mc::kNoreply;
using mc::kQuietGet;
using mc::kQuietMath;
using mc::kQuietStore;

namespace {

// A command line as mc::write* builds it, on the stack, for a read that asks the owner again
// (handover): at most kMaxLine bytes, what lb accepts of a line (a retrieval line of one key
// or an mg has no data block).
class LineBuffer {
 public:
  void append(const char* p, size_t n) noexcept {
    if (n > sizeof bytes_ - len_) {
      overflow_ = true;
      return;
    }
    memcpy(bytes_ + len_, p, n);
    len_ += n;
  }
  bool fits() const noexcept { return !overflow_; }
  std::string_view view() const noexcept { return {bytes_, len_}; }

 private:
  char bytes_[mc::kMaxLine + 2];
  size_t len_ = 0;
  bool overflow_ = false;
};

}  // namespace

MemcachedSession::MemcachedSession(WorkerEnv& env, const std::shared_ptr<const Snapshot>& snapshot,
                                   uint32_t listener) noexcept
    : CacheProtocolSession(env, snapshot, listener, memcachedWire()) {}

ReplyUse MemcachedSession::useReply(const CacheCommand& cmd, const char* p, size_t n) noexcept {
  if (cmd.kind != kPass) return ReplyUse::kStore;
  return mc::dropReply(static_cast<uint8_t>(cmd.flags), p, n) ? ReplyUse::kDrop : ReplyUse::kPass;
}

void MemcachedSession::emitMerged(CacheCommand& cmd, ByteChain& out) noexcept {
  if (cmd.fan_out) {
    emitFanOk(cmd, out);
    return;
  }
  mc::mergeValues(cmd.parts, cmd.fragment_count, static_cast<const char*>(cmd.plan), cmd.keys,
                  cache().scratch().cursor, out, cmd.handover_keys, cmd.handover_key_count);
}

ParseStep MemcachedSession::parseOne(const char* p, size_t n) {
  const mc::Request r = mc::parseRequest(p, n, limits().max_request_bytes,
                                         limits().max_arguments, cache().scratch().args, scanned_);
  switch (r.status) {
    case mc::Parse::kIncomplete:
      scanned_ = r.line_missing ? n : 0;
      return ParseStep::wait(r.need);
    case mc::Parse::kBinary: {
      // A binary client reads a binary answer: "not supported", then the connection
      // closes (nothing after the header could be read as text).
      if (CacheCommand* cmd = beginCommand(kPass)) {
        constexpr std::string_view kMessage =
            "lb speaks memcached's text protocol only; the binary protocol is not supported";
        char out[24 + kMessage.size()];
        const size_t len =
            mc::binaryRefusal(reinterpret_cast<const unsigned char*>(p), kMessage, out);
        answerError(cmd, CacheErrorReason::kUnsupported, {out, len});
      }
      return ParseStep::close();
    }
    case mc::Parse::kError: {
      scanned_ = 0;
      if (CacheCommand* cmd = beginCommand(kPass)) {
        const std::string_view text(r.error);
        const bool too_large = text.starts_with("SERVER_ERROR object too large") ||
                               text.find("too long") != text.npos ||
                               text.find("too many") != text.npos;
        const CacheErrorReason reason =
            too_large ? CacheErrorReason::kTooLarge : CacheErrorReason::kProtocol;
        // A noreply command's error is counted, not sent (memcached's out_string skips
        // it too): its client reads no reply for it.
        answerError(cmd, reason, r.noreply ? std::string_view() : text);
      }
      if (r.close) return ParseStep::close();
      if (r.skip > 0) {   // the refused command's data block goes before the next command
        skipInput(r.skip);
        return ParseStep::pause(r.length);
      }
      return ParseStep::next(r.length);
    }
    case mc::Parse::kCommand:
      scanned_ = 0;
      dispatch(r, p);
      return ParseStep::next(r.length);
  }
  return ParseStep::close();   // not reached: every status is handled above
}

// flush_all or verbosity sent to every server: OK once all said OK; a server's own error
// (flush_all disabled there: "CLIENT_ERROR flush_all not allowed") as it said it; servers
// that failed named. Nothing at all under noreply, as from memcached.
void MemcachedSession::emitFanOk(CacheCommand& cmd, ByteChain& out) noexcept {
  if (cmd.flags == kNoreply) return;
  char names[48];
  const std::string_view failed = fanOutFailures(cmd, names, sizeof names);
  if (!failed.empty()) {
    out.append(cmd.kind == kFanFlushAll ? "SERVER_ERROR lb: flush_all failed on "
                                        : "SERVER_ERROR lb: verbosity failed on ");
    out.append(failed);
    out.append("\r\n");
    return;
  }
  for (uint16_t i = 0; i < cmd.fragment_count; ++i) {
    const FragmentReply& part = cmd.parts[i];
    const std::string_view reply(part.bytes != nullptr ? part.bytes : "", part.len);
    if (reply != "OK\r\n") {
      out.append(reply.empty() ? std::string_view("SERVER_ERROR lb: out of memory\r\n") : reply);
      return;
    }
  }
  out.append("OK\r\n");
}

void MemcachedSession::refuse(CacheCommand* cmd, CacheErrorReason reason,
                              std::string_view what) noexcept {
  // A noreply command gets no bytes, whatever happened: its client reads none, and one
  // would shift every later answer by one (memcached's out_string skips errors under
  // noreply too). The refusal is still counted. Quiet meta commands (q) get their errors,
  // as memcached's out_errstring sends them.
  if (cmd->flags == kNoreply) {
    answerError(cmd, reason, {});
    return;
  }
  // Clients read an error line into a small buffer (memcapable: 80 bytes, CRLF included);
  // a longer one is cut to fit, the whole text is in the debug log.
  constexpr size_t kMaxLine = 80;
  char text[kMaxLine + 1];
  int len = snprintf(text, kMaxLine - 1, "%s lb: %.*s",
                     reason == CacheErrorReason::kUnsupported ? "CLIENT_ERROR" : "SERVER_ERROR",
                     static_cast<int>(what.size()), what.data());
  if (len < 0) len = 0;
  if (static_cast<size_t>(len) > kMaxLine - 2) {
    LB_DEBUG("memcached: error line cut to %zu bytes: %.*s", kMaxLine,
             static_cast<int>(what.size()), what.data());
    len = static_cast<int>(kMaxLine - 2);
  }
  text[len++] = '\r';
  text[len++] = '\n';
  answerError(cmd, reason, {text, static_cast<size_t>(len)});
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
    case Command::kFlushAll:
    case Command::kVerbosity: {
      if (r.noreply) cmd->flags = kNoreply;
      const bool flush = r.command == Command::kFlushAll;
      if (!listener().config->fanout) {
        refuse(cmd, CacheErrorReason::kUnsupported,
               flush ? "flush_all needs fanout = true on the listener"
                     : "verbosity needs fanout = true on the listener");
        return;
      }
      if (flush) near().flush();
      // The line as parsed, noreply left to lb (every server answers; lb drops the reply).
      fanOut(cmd, flush ? kFanFlushAll : kFanVerbosity, mc::kReplyOk,
             [&](ByteChain& out) { mc::writeForwarded(r, tokens, p, out); });
      return;
    }
    case Command::kRefused: {
      // Kept short: some clients read an error line into 80 bytes (memcapable).
      if (r.noreply) cmd->flags = kNoreply;
      char what[80];
      snprintf(what, sizeof what, "%.*s addresses every server, not a key",
               static_cast<int>(tokens[0].size() > 20 ? 20 : tokens[0].size()), tokens[0].data());
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
// with their own keys (grouped by owner in one pass: key_groups.h), and the client gets
// every hit in the order of its keys.
void MemcachedSession::routeRetrieval(CacheCommand* cmd, const mc::Request& r) noexcept {
  CacheScratch& sc = cache().scratch();
  const std::vector<std::string_view>& tokens = sc.args;
  const size_t keys = tokens.size() - r.first_key;
  if (near().enabled()) {
    // gat and gats change the item's exptime (a time in the past expires it): writes, for
    // the near cache, forwarded always and never stored.
    if (r.command == Command::kGat || r.command == Command::kGats) {
      near().writeBegin(cmd, keys);
      for (size_t k = 0; k < keys; ++k) near().write(cmd, tokens[r.first_key + k]);
    }
  }
  if (keys == 1 && (near().enabled() || handover().enabled())) {
    routeOneRetrieval(cmd, r);
    return;
  }
  const Owners owners =
      pickOwners(cmd, r.first_key, 1, keys, "no backend is available for this key", true);
  if (owners == Owners::kAnswered) return;
  // A retrieval of several keys inside a handover window reads the keys its owners miss
  // through (handover_reads.h), which the merge does: it is merged even with one owner.
  const bool reads_through = mergedReadsThrough();
  if (owners == Owners::kOne && !reads_through) {
    sendFragment(cmd, sc.hosts[0], mc::kReplyValues, [&](ByteChain& chain) {
      mc::writeRetrieval(r, tokens, nullptr, keys, chain);
    });
    return;
  }
  // The plan names each key, so that the merge can tell a hit from a miss by key.
  std::vector<std::string_view>& plan_keys = sc.keys;
  plan_keys.assign(tokens.begin() + static_cast<ptrdiff_t>(r.first_key), tokens.end());
  if (!beginSplit(cmd, kGetMerge, keys, mc::planSize(plan_keys))) return;
  mc::writePlan(plan_keys, sc.key_fragments.data(), static_cast<char*>(cmd->plan));
  if (reads_through) {
    if (r.command == Command::kGet) {
      handover().readMerged(cmd, plan_keys);
    } else {
      // gets, gat, gats: each hit asked of its owner again, alone (its CAS unique, the
      // exptime gat sets there).
      LineBuffer again;
      again.append(tokens[0].data(), tokens[0].size());
      again.append(" ", 1);
      if (r.first_key == 2) {   // gat, gats: the exptime first
        again.append(tokens[1].data(), tokens[1].size());
        again.append(" ", 1);
      }
      if (again.fits()) handover().readMerged(cmd, plan_keys, again.view(), mc::kReplyValues);
    }
  }
  sendSplit(cmd, mc::kReplyValues, [&](ByteChain& out, const uint32_t* key, uint32_t count) {
    mc::writeRetrieval(r, tokens, key, count, out);
  });
}

// get, gets, gat or gats of one key with the near cache or a handover on: get is the plain
// read the near cache serves and fills (its reply carries no cas unique, so the bytes are
// the same for every client); the others are forwarded, a hot key's counted as bypass. A
// handover reads each through: get answered with the previous host's item, the others asked
// of the owner again behind the copy (their CAS unique and exptime are the owner's).
void MemcachedSession::routeOneRetrieval(CacheCommand* cmd, const mc::Request& r) noexcept {
  const std::vector<std::string_view>& tokens = cache().scratch().args;
  const std::string_view key = tokens[r.first_key];
  const uint64_t hash = countKey(key);
  const bool plain = r.command == Command::kGet;
  if (plain && near().read(cmd, key, hash)) return;
  if (!plain) near().bypass(hash);
  uint32_t host, from;
  if (!pickHashed(hash, &host, &from)) {
    refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for this key");
    return;
  }
  if (plain) {
    near().sent(cmd, host);
    handover().read(cmd, key, host, from);
  } else if (readsThrough(from)) {
    LineBuffer again;
    mc::writeRetrieval(r, tokens, nullptr, 1, again);
    if (again.fits()) handover().read(cmd, key, host, from, again.view(), mc::kReplyValues);
  }
  sendFragment(cmd, host, mc::kReplyValues, [&](ByteChain& chain) {
    mc::writeRetrieval(r, tokens, nullptr, 1, chain);
  });
}

// A get's reply worth keeping: its one VALUE item and END, or a bare END (a miss), never an
// error line.
bool MemcachedSession::nearCacheable(const char* p, size_t n) const noexcept {
  const std::string_view reply(p, n);
  return reply == "END\r\n" || (reply.starts_with("VALUE ") && reply.ends_with("\r\nEND\r\n"));
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
  // Every one of these may change the key but me (debug), mg included: its flags can touch,
  // vivify or invalidate the item. noreply changes nothing here: the backend still answers
  // lb, whose reply moves the stripe again.
  if (near().enabled() && r.command != Command::kMetaDebug) {
    near().writeBegin(cmd, 1);
    near().write(cmd, key);
  }
  if (replicas() > 1 && r.command != Command::kMetaGet && r.command != Command::kMetaDebug) {
    replicateKey(cmd, r, p, key);
    return;
  }
  uint32_t host, from = Pick::kNoHost;
  // mg reads through, answered by the owner asked again behind the copy, so that every
  // flag it has means what it means at the owner. A base64 key's bytes cannot go in the
  // text read at the previous host.
  const bool reads = r.command == Command::kMetaGet && !r.base64_key && handover().enabled();
  if (!(reads ? pickHashed(countKey(key), &host, &from) : pickHost(key, &host))) {
    refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for this key");
    return;
  }
  if (reads && readsThrough(from)) {
    LineBuffer again;
    mc::writeForwarded(r, tokens, p, again);
    if (again.fits())
      handover().read(cmd, key, host, from, again.view(), mc::replyKindOf(r.command));
  }
  sendFragment(cmd, host, mc::replyKindOf(r.command), [&](ByteChain& chain) {
    mc::writeForwarded(r, tokens, p, chain);
  });
  // A write of a moved key is followed by a delete where it was served before; mg and me
  // read (an mg that touches or vivifies does not make a stale copy newer).
  // A base64 key (meta b) may hold bytes a text delete cannot carry: it is not followed.
  if (r.command != Command::kMetaGet && r.command != Command::kMetaDebug && !r.base64_key)
    handover().wrote(key, host);
}

namespace {

// A compare-and-swap: cas, or a meta command with the C flag (ms, md, ma). It holds the CAS
// unique of one copy, which no other copy shares.
bool comparesCas(const mc::Request& r, const std::vector<std::string_view>& tokens) noexcept {
  if (r.command == Command::kCas) return true;
  if (r.command != Command::kMetaSet && r.command != Command::kMetaDelete &&
      r.command != Command::kMetaArithmetic)
    return false;
  for (size_t i = 2; i < tokens.size(); ++i)
    if (!tokens[i].empty() && tokens[i][0] == 'C') return true;
  return false;
}

}  // namespace

// A write of a key kept on several hosts (replicas): the same command to each copy, the
// client answered by the first copy's reply in the key's order (cache_session_replicas.cc).
// A compare-and-swap goes to the primary alone, whose CAS unique the client read, and the
// other copies are deleted behind it: a read there then misses and reads the new value
// through from the next copy, instead of a stale copy answering. incr, decr, append and
// prepend go to every copy like any write; docs/operations.md says what a copy that missed
// one leaves behind.
void MemcachedSession::replicateKey(CacheCommand* cmd, const mc::Request& r, const char* p,
                                    std::string_view key) noexcept {
  const std::vector<std::string_view>& tokens = cache().scratch().args;
  const uint64_t hash = countKey(key);
  const uint8_t kind = mc::replyKindOf(r.command);
  uint32_t hosts[kMaxCopies];
  if (comparesCas(r, tokens)) {
    const uint32_t copies = copiesOf(hash, hosts);
    if (copies == 0) {
      refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for this key");
      return;
    }
    sendFragment(cmd, hosts[0], kind, [&](ByteChain& chain) {
      mc::writeForwarded(r, tokens, p, chain);
    });
    if (!r.base64_key)
      for (uint32_t i = 1; i < copies; ++i) handover().deleteAt(key, hosts[i]);
    return;
  }
  const uint32_t copies = beginReplicated(cmd, hash, hosts);
  if (copies == 0) {
    refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for this key");
    return;
  }
  for (uint32_t i = 0; i < copies; ++i)
    sendFragment(cmd, hosts[i], kind, [&](ByteChain& chain) {
      mc::writeForwarded(r, tokens, p, chain);
    });
  if (!r.base64_key) handover().wrote(key, hosts[0]);
}

// A part of a get of several keys that failed, as if its server had none of them: END.
std::string_view MemcachedSession::mergedMissReply(CacheCommand* cmd, uint16_t) noexcept {
  return cmd->kind == kGetMerge ? std::string_view("END\r\n") : std::string_view();
}

uint32_t MemcachedSession::handoverMisses(const CacheCommand& cmd, uint32_t* positions,
                                          uint32_t cap) noexcept {
  if (cmd.kind != kGetMerge) return 0;
  return mc::missedKeys(cmd.parts, cmd.fragment_count, static_cast<const char*>(cmd.plan),
                        cmd.keys, cache().scratch().cursor, positions, cap);
}

// A get's hit at the previous host ("VA" and the data), as the owner would have answered
// the get: one VALUE item and END (for a get of several keys, the merge takes the item).
std::string_view MemcachedSession::handoverReply(CacheCommand* cmd, const HandoverFound& found,
                                                 std::string_view key) noexcept {
  char head[320];
  const int len = snprintf(head, sizeof head, "VALUE %.*s %u %zu\r\n", static_cast<int>(key.size()),
                           key.data(), found.flags, found.value.size());
  if (len <= 0 || static_cast<size_t>(len) >= sizeof head) return {};
  const size_t total = static_cast<size_t>(len) + found.value.size() + 7;
  char* out = arena().allocate(total, cmd->seq);
  if (out == nullptr) return {};
  memcpy(out, head, static_cast<size_t>(len));
  memcpy(out + len, found.value.data(), found.value.size());
  memcpy(out + len + found.value.size(), "\r\nEND\r\n", 7);
  return {out, total};
}

}  // namespace lb
