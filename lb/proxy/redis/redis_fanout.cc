// RedisSession's commands that are not about keys: those that address every server (FLUSHDB,
// FLUSHALL, DBSIZE, SCRIPT LOAD|EXISTS|FLUSH), sent to every backend when the listener has
// `fanout = true` and merged into the one reply a single server would give, and server
// metadata that is the same on every server (COMMAND, TIME, LOLWUT), which one usable server
// answers. mcrouter broadcasts the first kind to a pool (AllSyncRoute); twemproxy refuses
// them, which leaves clients such as redis-py's flushdb() and script_load() without a way
// through the proxy.
//
// A part that fails (refused, reset, timed out) does not end the command at once: every
// server is waited for, and the reply names each one that failed, so that an operator knows
// which servers kept their data or lack a script.
#include <cstdio>
#include <cstring>

#include "lb/proxy/redis/redis_replies.h"
#include "lb/proxy/redis/redis_session.h"
#include "lb/proxy/redis/resp.h"

namespace lb {

namespace {

// How the parts of a fanned-out command merge (its CacheCommand::kind), after the first
// server error, which is the reply as it would have been from that server.
enum FanKind : uint8_t {
  kFanOk = 16,       // FLUSHDB, FLUSHALL, SCRIPT FLUSH: +OK once every server said +OK
  kFanSum = 17,      // DBSIZE: the integers summed
  kFanSame = 18,     // SCRIPT LOAD: every server's sha, which must be one
  kFanAnd = 19,      // SCRIPT EXISTS: 1 for a script only where every server has it
};

// The command's name for the reply's error texts (CacheCommand::flags).
enum FanCommand : uint8_t { kFlushDb, kFlushAll, kDbSize, kScriptLoad, kScriptExists, kScriptFlush };
constexpr const char* kFanNames[] = {"FLUSHDB", "FLUSHALL", "DBSIZE", "SCRIPT LOAD",
                                     "SCRIPT EXISTS", "SCRIPT FLUSH"};

// FLUSHDB|FLUSHALL [ASYNC|SYNC], SCRIPT FLUSH [ASYNC|SYNC]: the mode, when there is one, is
// one Redis knows (its own arity errors are the servers' to give).
bool flushMode(const std::vector<std::string_view>& args, size_t at) noexcept {
  return args.size() <= at ||
         (args.size() == at + 1 &&
          (resp::equalsLower(args[at], "async") || resp::equalsLower(args[at], "sync")));
}

// ":<n>\r\n" into *v.
bool integerReply(const FragmentReply& part, int64_t* v) noexcept {
  if (part.bytes == nullptr || part.len < 4 || part.bytes[0] != ':') return false;
  return resp::parseInteger({part.bytes + 1, part.len - 3}, v);
}

// The element count of an array reply "*<n>\r\n...", with where its elements start.
bool arrayOf(const FragmentReply& part, int64_t* count, uint32_t* first) noexcept {
  if (part.bytes == nullptr || part.len < 4 || part.bytes[0] != '*') return false;
  const char* nl = static_cast<const char*>(memchr(part.bytes, '\n', part.len));
  if (nl == nullptr || nl - part.bytes < 2) return false;
  *first = static_cast<uint32_t>(nl - part.bytes + 1);
  return resp::parseInteger({part.bytes + 1, static_cast<size_t>(nl - part.bytes - 2)}, count) &&
         *count >= 0;
}

}  // namespace

void RedisSession::routeEveryServer(CacheCommand* cmd, std::string_view raw) noexcept {
  const std::vector<std::string_view>& args = cache().scratch().args;
  uint8_t kind = kFanOk;
  uint8_t reply_kind = redis::kOkReply;
  FanCommand which;
  if (resp::equalsLower(args[0], "flushdb") || resp::equalsLower(args[0], "flushall")) {
    which = resp::equalsLower(args[0], "flushdb") ? kFlushDb : kFlushAll;
    if (!flushMode(args, 1)) {
      answerError(cmd, CacheErrorReason::kProtocol, "-ERR syntax error\r\n");
      return;
    }
  } else if (resp::equalsLower(args[0], "dbsize")) {
    which = kDbSize;
    kind = kFanSum;
    reply_kind = redis::kIntegerReply;
    if (args.size() != 1) {
      wrongArity(cmd);
      return;
    }
  } else {   // SCRIPT
    if (args.size() < 2) {
      wrongArity(cmd);
      return;
    }
    reply_kind = redis::kAnyReply;
    if (resp::equalsLower(args[1], "load") && args.size() == 3) {
      which = kScriptLoad;
      kind = kFanSame;
    } else if (resp::equalsLower(args[1], "exists") && args.size() >= 3) {
      which = kScriptExists;
      kind = kFanAnd;
    } else if (resp::equalsLower(args[1], "flush") && flushMode(args, 2)) {
      which = kScriptFlush;
      reply_kind = redis::kOkReply;
    } else {
      refuse(cmd, CacheErrorReason::kUnsupported,
             "SCRIPT takes LOAD, EXISTS and FLUSH through lb (KILL and DEBUG address one "
             "server; connect to it directly)");
      return;
    }
  }
  if (!listener().config->fanout) {
    char what[96];
    snprintf(what, sizeof what, "%s needs fanout = true on the listener", kFanNames[which]);
    refuse(cmd, CacheErrorReason::kUnsupported, what);
    return;
  }
  cmd->flags = which;
  if (which == kFlushDb || which == kFlushAll) near().flush();
  fanOut(cmd, kind, reply_kind, [&](ByteChain& out) {
    resp::appendCommand(out, raw, inline_, args);
  });
}

// COMMAND and its subcommands, TIME, LOLWUT: the same answer from any server (the same
// version across a fleet), so the one the command's name routes to answers, through the pick
// (health, bounded loads), as a key would.
void RedisSession::routeAnyServer(CacheCommand* cmd, std::string_view raw) noexcept {
  const std::vector<std::string_view>& args = cache().scratch().args;
  char lower[16];
  const size_t n = args[0].size() < sizeof lower ? args[0].size() : sizeof lower;
  for (size_t i = 0; i < n; ++i)
    lower[i] = args[0][i] >= 'A' && args[0][i] <= 'Z' ? static_cast<char>(args[0][i] + 32)
                                                      : args[0][i];
  uint32_t host;
  if (!pickHashed(routeHash({lower, n}), &host)) {
    refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available");
    return;
  }
  sendRaw(cmd, host, raw, redis::kAnyReply);
}

void RedisSession::emitFanOut(CacheCommand& cmd, ByteChain& out) noexcept {
  const char* name = kFanNames[cmd.flags < std::size(kFanNames) ? cmd.flags : 0];
  char names[64];
  const std::string_view failed = fanOutFailures(cmd, names, sizeof names);
  if (!failed.empty()) {
    out.append("-ERR lb: ");
    out.append(name);
    out.append(" failed on ");
    out.append(failed);
    out.append("\r\n");
    return;
  }
  // A server's own error is the reply, as that server gave it (the first in host order).
  for (uint16_t i = 0; i < cmd.fragment_count; ++i) {
    const FragmentReply& part = cmd.parts[i];
    if (part.bytes == nullptr) {
      out.append(kOutOfMemory);
      return;
    }
    if (part.len > 0 && part.bytes[0] == '-') {
      out.append(part.bytes, part.len);
      return;
    }
  }
  auto differ = [&] {
    out.append("-ERR lb: ");
    out.append(name);
    out.append(" answered differently on different servers\r\n");
  };
  const FragmentReply& first = cmd.parts[0];
  switch (cmd.kind) {
    case kFanOk:
      for (uint16_t i = 0; i < cmd.fragment_count; ++i)
        if (std::string_view(cmd.parts[i].bytes, cmd.parts[i].len) != "+OK\r\n") return differ();
      out.append("+OK\r\n");
      return;
    case kFanSum: {
      int64_t sum = 0;
      for (uint16_t i = 0; i < cmd.fragment_count; ++i) {
        int64_t v = 0;
        if (!integerReply(cmd.parts[i], &v) || v < 0) return differ();
        sum += v;
      }
      out.append(":");
      out.appendDecimal(sum);
      out.append("\r\n");
      return;
    }
    case kFanSame:
      // The sha1 of one script is one everywhere; two answers mean two different servers.
      for (uint16_t i = 1; i < cmd.fragment_count; ++i)
        if (std::string_view(cmd.parts[i].bytes, cmd.parts[i].len) !=
            std::string_view(first.bytes, first.len))
          return differ();
      out.append(first.bytes, first.len);
      return;
    case kFanAnd: {
      // Each an array of :0 or :1 of one length: element k is 1 where every server has it.
      int64_t count = 0;
      uint32_t pos0 = 0;
      if (!arrayOf(first, &count, &pos0)) return differ();
      std::vector<uint32_t>& pos = cache().scratch().cursor;
      try {
        pos.assign(cmd.fragment_count, 0);
      } catch (...) {
        out.append(kOutOfMemory);
        return;
      }
      // Every part is checked whole before a byte of the reply is written.
      for (uint16_t i = 0; i < cmd.fragment_count; ++i) {
        int64_t c = 0;
        if (!arrayOf(cmd.parts[i], &c, &pos[i]) || c != count ||
            cmd.parts[i].len != pos[i] + 4 * static_cast<uint64_t>(count))
          return differ();
        for (int64_t k = 0; k < count; ++k) {   // ":0\r\n" or ":1\r\n", four bytes each
          const char* e = cmd.parts[i].bytes + pos[i] + 4 * k;
          if (e[0] != ':' || (e[1] != '0' && e[1] != '1') || e[2] != '\r' || e[3] != '\n')
            return differ();
        }
      }
      out.append(first.bytes, pos0);
      for (int64_t k = 0; k < count; ++k) {
        bool all = true;
        for (uint16_t i = 0; i < cmd.fragment_count; ++i)
          all = all && cmd.parts[i].bytes[pos[i] + 4 * k + 1] == '1';
        out.append(all ? ":1\r\n" : ":0\r\n");
      }
      return;
    }
  }
  differ();
}

}  // namespace lb
