#include "lb/proxy/redis/redis_session.h"

#include <cstdio>
#include <cstring>

#include "lb/proxy/redis/redis_replies.h"
#include "lb/proxy/redis/resp.h"
#include "lb/runtime/worker_env.h"

namespace lb {

using redis::CommandSpec;
using redis::kMget;
using redis::kPass;
using redis::Local;
using redis::Route;

namespace {

constexpr std::string_view kNoAuth = "-NOAUTH Authentication required.\r\n";
constexpr std::string_view kWrongPass =
    "-WRONGPASS invalid username-password pair or user is disabled.\r\n";
constexpr std::string_view kNoPasswordSet =
    "-ERR AUTH <password> called without any password configured for the default user. Are "
    "you sure your configuration is correct?\r\n";

// Compares without stopping at the first difference, so that the time an AUTH takes does not
// say how much of a guess was right.
bool samePassword(std::string_view a, std::string_view b) noexcept {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

// The upper-case name of a command for an error text, as Redis writes them.
void upper(std::string_view in, char* out, size_t cap) noexcept {
  size_t n = in.size() < cap - 1 ? in.size() : cap - 1;
  for (size_t i = 0; i < n; ++i) {
    char c = in[i];
    out[i] = c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A')
             : (c > ' ' && c < 127) ? c
                                    : '?';
  }
  out[n] = '\0';
}

}  // namespace

RedisSession::RedisSession(WorkerEnv& env, const std::shared_ptr<const Snapshot>& snapshot,
                           uint32_t listener) noexcept
    : CacheProtocolSession(env, snapshot, listener, redisWire()),
      authenticated_(snapshot->listeners[listener].config->password.empty()) {}

// A GET's reply worth keeping: a bulk string or nil ($-1), never an error (WRONGTYPE for a
// key that is not a string, a backend's -ERR).
bool RedisSession::nearCacheable(const char* p, size_t n) const noexcept {
  return n >= 5 && p[0] == '$';
}

ReplyUse RedisSession::useReply(const CacheCommand& cmd, const char*, size_t) noexcept {
  return cmd.kind == kPass ? ReplyUse::kPass : ReplyUse::kStore;
}

namespace {

// What the merge of a split command reads of it: its stored parts, its plan, and the values
// read through in a handover window.
redis::MergeInput mergeInputOf(const CacheCommand& cmd) noexcept {
  redis::MergeInput in;
  in.kind = cmd.kind;
  in.parts = cmd.parts;
  in.fragment_count = cmd.fragment_count;
  in.plan = static_cast<const uint16_t*>(cmd.plan);
  in.keys = cmd.keys;
  in.overrides = cmd.handover_keys;
  in.override_count = cmd.handover_key_count;
  return in;
}

}  // namespace

void RedisSession::emitMerged(CacheCommand& cmd, ByteChain& out) noexcept {
  if (cmd.fan_out) {
    emitFanOut(cmd, out);
    return;
  }
  redis::mergeReplies(mergeInputOf(cmd), cache().scratch(), out);
}

// An MGET part that failed, as if its server had every one of its keys missing: an array of
// as many nils as the part has keys.
std::string_view RedisSession::mergedMissReply(CacheCommand* cmd, uint16_t fragment) noexcept {
  if (cmd->kind != kMget || cmd->plan == nullptr) return {};
  const auto* plan = static_cast<const uint16_t*>(cmd->plan);
  uint32_t keys = 0;
  for (uint32_t k = 0; k < cmd->keys; ++k) keys += plan[k] == fragment;
  char head[16];
  const int len = snprintf(head, sizeof head, "*%u\r\n", keys);
  char* out = arena().allocate(static_cast<size_t>(len) + 5 * size_t{keys}, cmd->seq);
  if (out == nullptr) return {};
  memcpy(out, head, static_cast<size_t>(len));
  for (uint32_t k = 0; k < keys; ++k) memcpy(out + len + 5 * k, "$-1\r\n", 5);
  return {out, static_cast<size_t>(len) + 5 * size_t{keys}};
}

uint32_t RedisSession::handoverMisses(const CacheCommand& cmd, uint32_t* positions,
                                      uint32_t cap) noexcept {
  return redis::missedKeys(mergeInputOf(cmd), cache().scratch(), positions, cap);
}

ParseStep RedisSession::parseOne(const char* p, size_t n) {
  // GET key, the one command of a hot-key load, without the general parse and the command
  // table: resp::matchGet takes only what parseRequest reads the same, for a client that
  // has authenticated and with room for two arguments. Anything else, and a GET arriving in
  // pieces (progress_), is parseRequest's.
  if (authenticated_ && progress_.pos == 0 && limits().max_arguments >= 2) {
    std::string_view key;
    if (const size_t len = resp::matchGet(p, n, limits().max_request_bytes, &key); len > 0) {
      dispatchGet({p, len}, key);
      return ParseStep::next(len);
    }
  }
  CacheScratch& sc = cache().scratch();
  const resp::Request r = resp::parseRequest(p, n, limits().max_request_bytes,
                                             limits().max_arguments, sc.args, sc.text,
                                             authenticated_, &progress_);
  if (r.status == resp::Parse::kIncomplete) return ParseStep::wait(r.need);
  if (r.status == resp::Parse::kError) {
    // Redis answers and closes: nothing after a framing error can be trusted.
    if (CacheCommand* cmd = beginCommand(kPass)) {
      if (r.too_large) {   // lb's own limit, named as such rather than as bad framing
        answerError(cmd, CacheErrorReason::kTooLarge, tooLargeReply());
      } else {
        char text[160];
        // addReplyErrorFormat's "got '%c'", a CR or LF in it made a space as Redis does.
        const char got = r.got == '\r' || r.got == '\n' ? ' ' : r.got;
        int len = strcmp(r.error, "Protocol error: expected '$'") == 0
                      ? snprintf(text, sizeof text, "-ERR %s, got '%c'\r\n", r.error, got)
                      : snprintf(text, sizeof text, "-ERR %s\r\n", r.error);
        answerError(cmd, CacheErrorReason::kProtocol, {text, static_cast<size_t>(len)});
      }
    }
    return ParseStep::close();
  }
  if (r.status == resp::Parse::kCommand) dispatch({p, r.length}, r.inline_form);
  return ParseStep::next(r.length);
}

void RedisSession::refuse(CacheCommand* cmd, CacheErrorReason reason,
                          std::string_view what) noexcept {
  char text[512];
  int len = snprintf(text, sizeof text, "-ERR lb: %.*s\r\n", static_cast<int>(what.size()),
                     what.data());
  if (len < 0 || static_cast<size_t>(len) >= sizeof text) len = sizeof text - 1;
  answerError(cmd, reason, {text, static_cast<size_t>(len)});
}

void RedisSession::wrongArity(CacheCommand* cmd) noexcept {
  char name[32];
  char lower[32];
  std::string_view n = cache().scratch().args[0];
  upper(n, name, sizeof name);
  for (size_t i = 0; name[i] != '\0'; ++i)
    lower[i] = name[i] >= 'A' && name[i] <= 'Z' ? static_cast<char>(name[i] - 'A' + 'a') : name[i];
  lower[strlen(name)] = '\0';
  char text[96];
  int len = snprintf(text, sizeof text, "-ERR wrong number of arguments for '%s' command\r\n",
                     lower);
  answerError(cmd, CacheErrorReason::kProtocol, {text, static_cast<size_t>(len)});
}

void RedisSession::answerBulk(CacheCommand* cmd, std::string_view s) noexcept {
  char* out = arena().allocate(resp::bulkSize(s.size()), cmd->seq);
  if (out == nullptr) {
    answerStatic(cmd, kOutOfMemory);
    return;
  }
  answerStatic(cmd, {out, resp::writeBulk(out, s)});
}

// Never the client's bytes as they came unless they are the canonical array lb parsed: an
// inline command goes re-encoded (resp::appendCommand). The reply kind tells the server
// connection what this command can be answered with (redis::ReplyKind).
void RedisSession::sendRaw(CacheCommand* cmd, uint32_t host, std::string_view raw,
                           uint8_t reply_kind) noexcept {
  sendFragment(cmd, host, reply_kind, [&](ByteChain& chain) {
    resp::appendCommand(chain, raw, inline_, cache().scratch().args);
  });
}

void RedisSession::dispatch(std::string_view raw, bool inline_form) noexcept {
  const std::vector<std::string_view>& args = cache().scratch().args;
  inline_ = inline_form;
  CacheCommand* cmd = beginCommand(kPass);
  if (cmd == nullptr) return;
  const CommandSpec* spec = redis::findCommand(args[0]);
  if (!authenticated_ && !(spec && (spec->local == Local::kAuth || spec->local == Local::kQuit))) {
    answerError(cmd, CacheErrorReason::kNoAuth, kNoAuth);
    return;
  }
  if (spec == nullptr) {
    char name[40];
    upper(args[0], name, sizeof name);
    char what[80];
    snprintf(what, sizeof what, "unknown command '%s'", name);
    refuse(cmd, CacheErrorReason::kUnknownCommand, what);
    return;
  }
  if (near().enabled() && !spec->read_only) nearInvalidate(cmd, *spec);
  switch (spec->route) {
    case Route::kLocal:
      answerLocal(cmd, *spec);
      return;
    case Route::kEveryServer:
      routeEveryServer(cmd, raw);
      return;
    case Route::kAnyServer:
      routeAnyServer(cmd, raw);
      return;
    case Route::kRefused: {
      char name[40];
      upper(args[0], name, sizeof name);
      char what[256];
      snprintf(what, sizeof what, "%s is not supported: %s", name, spec->reason);
      refuse(cmd, CacheErrorReason::kUnsupported, what);
      return;
    }
    case Route::kKey: {
      if (args.size() <= static_cast<size_t>(spec->first)) {
        wrongArity(cmd);
        return;
      }
      const std::string_view key = args[spec->first];
      const uint64_t hash = countKey(key);
      // GET key, and only that, is a plain read the near cache answers (GET with more
      // arguments is an arity error the server gives).
      if (spec->name == "get" && args.size() == 2) {
        sendGet(cmd, raw, key, hash);
        return;
      }
      if (near().enabled() && spec->read_only) near().bypass(hash);
      if (!spec->read_only && replicas() > 1) {
        sendReplicated(cmd, raw, key, hash);
        return;
      }
      uint32_t host;
      if (!pickHashed(hash, &host, spec->read_only)) {
        refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for this key");
        return;
      }
      sendRaw(cmd, host, raw, redis::kAnyReply);
      if (!spec->read_only) handover().wrote(key, host);
      return;
    }
    case Route::kSameServer:
    case Route::kMsetnx:
      routeKeys(cmd, *spec, raw);
      return;
    case Route::kOptionKeys:
      routeOptionKeys(cmd, raw);
      return;
    case Route::kNumkeys:
      routeNumkeys(cmd, *spec, raw);
      return;
    case Route::kMget:
    case Route::kCount:
    case Route::kMset:
      splitByOwner(cmd, *spec, raw);
      return;
  }
}

// GET key as resp::matchGet found it (raw: the command's canonical bytes). A hit with
// nothing queued ahead is answered with no command at all (near().answerNow); otherwise it is
// the GET dispatch() would have made, counted once.
void RedisSession::dispatchGet(std::string_view raw, std::string_view key) noexcept {
  inline_ = false;
  const uint64_t hash = routeHash(key);
  NearLook look;
  if (near().enabled() && near().answerNow(key, hash, &look)) return;
  CacheCommand* cmd = beginCommand(kPass);
  if (cmd == nullptr) return;
  countHashed(hash, key);
  sendGet(cmd, raw, key, hash, look);
}

// A plain GET's command, its key counted and routed by `hash`: from the near cache, or to
// its owner (a hot key's reply then fills the near cache).
void RedisSession::sendGet(CacheCommand* cmd, std::string_view raw, std::string_view key,
                           uint64_t hash, NearLook look) noexcept {
  if (near().enabled() && near().read(cmd, key, hash, look)) return;
  uint32_t host, from;
  if (!pickHashed(hash, &host, &from)) {
    refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for this key");
    return;
  }
  if (near().enabled()) near().sent(cmd, host);
  handover().read(cmd, key, host, from);
  sendRaw(cmd, host, raw, redis::kAnyReply);
}

// A write of a key kept on several hosts (replicas): the same command to each of its copies,
// answered with the first copy's reply in the key's order (cache_session_replicas.cc).
void RedisSession::sendReplicated(CacheCommand* cmd, std::string_view raw, std::string_view key,
                                  uint64_t hash) noexcept {
  uint32_t hosts[kMaxCopies];
  const uint32_t copies = beginReplicated(cmd, hash, hosts);
  if (copies == 0) {
    refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for this key");
    return;
  }
  for (uint32_t i = 0; i < copies; ++i) sendRaw(cmd, hosts[i], raw, redis::kAnyReply);
  handover().wrote(key, hosts[0]);
}

// A command that may change its keys, before it is routed: each key it names leaves the near
// cache (every worker's, through the cluster's stripes) and its reads in flight will not
// fill. The keys are found as routing finds them; a command whose arguments do not parse
// names no key here and is refused by its routing below.
void RedisSession::nearInvalidate(CacheCommand* cmd, const CommandSpec& spec) noexcept {
  const std::vector<std::string_view>& args = cache().scratch().args;
  const int argc = static_cast<int>(args.size());
  int first = spec.first;
  int last = spec.last;
  int step = spec.step;
  switch (spec.route) {
    case Route::kKey:
      break;
    case Route::kSameServer:
      last = spec.last < 0 ? argc + spec.last : spec.last;
      break;
    case Route::kMsetnx:
    case Route::kMset:
    case Route::kCount:
    case Route::kMget:
    case Route::kOptionKeys:   // every argument: a STORE destination among them
      first = 1;
      last = argc - 1;
      break;
    case Route::kNumkeys: {
      int64_t count = 0;
      if (argc <= spec.numkeys || !resp::parseInteger(args[spec.numkeys], &count) ||
          count < 0 || static_cast<uint64_t>(count) > args.size() - spec.numkeys - 1)
        return;
      const size_t keys = static_cast<size_t>(count) + (spec.first > 0 ? 1 : 0);
      near().writeBegin(cmd, keys);
      if (spec.first > 0) near().write(cmd, args[spec.first]);
      for (int64_t i = 0; i < count; ++i)
        near().write(cmd, args[static_cast<size_t>(spec.numkeys + 1 + i)]);
      return;
    }
    case Route::kLocal:
    case Route::kRefused:
    case Route::kEveryServer:
    case Route::kAnyServer:
      return;
  }
  if (first < 1 || step < 1 || last >= argc || last < first) return;
  near().writeBegin(cmd, static_cast<size_t>((last - first) / step + 1));
  for (int i = first; i <= last; i += step) near().write(cmd, args[static_cast<size_t>(i)]);
}

// Keys that must live together: first..last by step (MSETNX: every other argument).
void RedisSession::routeKeys(CacheCommand* cmd, const CommandSpec& spec,
                             std::string_view raw) noexcept {
  const std::vector<std::string_view>& args = cache().scratch().args;
  const int argc = static_cast<int>(args.size());
  const int last = spec.route == Route::kMsetnx ? argc - 2
                   : spec.last < 0               ? argc + spec.last
                                                 : spec.last;
  if (argc <= spec.first || last < spec.first ||
      (spec.route == Route::kMsetnx && (argc - 1) % 2 != 0)) {
    wrongArity(cmd);
    return;
  }
  uint32_t owner = 0;
  for (int i = spec.first; i <= last; i += spec.step) {
    uint32_t host;
    if (!pickHost(args[static_cast<size_t>(i)], &host)) {
      refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for these keys");
      return;
    }
    if (i != spec.first && host != owner) {
      crossServer(cmd, args[0]);
      return;
    }
    owner = host;
  }
  sendRaw(cmd, owner, raw, redis::kAnyReply);
  if (!spec.read_only && handover().enabled())
    for (int i = spec.first; i <= last; i += spec.step)
      handover().wrote(args[static_cast<size_t>(i)], owner);
}

// A command whose keys must live together but do not: Redis Cluster's CROSSSLOT, with the cure.
void RedisSession::crossServer(CacheCommand* cmd, std::string_view command) noexcept {
  char name[40];
  upper(command, name, sizeof name);
  char text[256];
  int len = snprintf(text, sizeof text,
                     "-CROSSSLOT lb: the keys of %s live on different servers (give them "
                     "one hash tag to keep them together)\r\n",
                     name);
  answerError(cmd, CacheErrorReason::kCrossServer, {text, static_cast<size_t>(len)});
}

// EVAL script numkeys key...: the declared keys (and a destination key before numkeys, for
// ZUNIONSTORE and its kind) must share an owner; no key at all goes by on_missing_key.
void RedisSession::routeNumkeys(CacheCommand* cmd, const CommandSpec& spec,
                                std::string_view raw) noexcept {
  const std::vector<std::string_view>& args = cache().scratch().args;
  if (args.size() <= static_cast<size_t>(spec.numkeys)) {
    wrongArity(cmd);
    return;
  }
  int64_t count = 0;
  if (!resp::parseInteger(args[spec.numkeys], &count) || count < 0) {
    answerError(cmd, CacheErrorReason::kProtocol,
                "-ERR numkeys should be a non-negative integer\r\n");
    return;
  }
  if (static_cast<uint64_t>(count) > args.size() - spec.numkeys - 1) {
    answerError(cmd, CacheErrorReason::kProtocol,
                "-ERR Number of keys can't be greater than number of args\r\n");
    return;
  }
  bool have = false;
  uint32_t owner = 0;
  auto visit = [&](std::string_view key) {
    uint32_t host;
    if (!pickHost(key, &host)) {
      refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for these keys");
      return false;
    }
    if (have && host != owner) {
      crossServer(cmd, args[0]);
      return false;
    }
    owner = host;
    have = true;
    return true;
  };
  if (spec.first > 0 && !visit(args[spec.first])) return;
  for (int64_t i = 0; i < count; ++i)
    if (!visit(args[static_cast<size_t>(spec.numkeys + 1 + i)])) return;
  if (!have && !pickKeyless(&owner)) {
    char name[40];
    upper(args[0], name, sizeof name);
    char what[200];
    snprintf(what, sizeof what,
             "%s with no keys cannot be routed (declare the keys the script uses, or set "
             "on_missing_key to random or round_robin)",
             name);
    refuse(cmd, listener().config->on_missing_key == OnMissingKey::kReject
                    ? CacheErrorReason::kUnsupported
                    : CacheErrorReason::kNoBackend,
           what);
    return;
  }
  sendRaw(cmd, owner, raw, redis::kAnyReply);
}

void RedisSession::answerAuth(CacheCommand* cmd) noexcept {
  const std::vector<std::string_view>& args = cache().scratch().args;
  const std::string& password = listener().config->password;
  if (args.size() != 2 && args.size() != 3) {
    wrongArity(cmd);
    return;
  }
  if (password.empty()) {
    answerError(cmd, CacheErrorReason::kNoAuth, kNoPasswordSet);
    return;
  }
  const bool user_ok = args.size() == 2 || args[1] == "default";
  if (user_ok && samePassword(args.back(), password)) {
    authenticated_ = true;
    answerStatic(cmd, "+OK\r\n");
    return;
  }
  answerError(cmd, CacheErrorReason::kNoAuth, kWrongPass);
}

void RedisSession::answerLocal(CacheCommand* cmd, const CommandSpec& spec) noexcept {
  const std::vector<std::string_view>& args = cache().scratch().args;
  switch (spec.local) {
    case Local::kPing:
      if (args.size() == 1)
        answerStatic(cmd, "+PONG\r\n");
      else if (args.size() == 2)
        answerBulk(cmd, args[1]);
      else
        wrongArity(cmd);
      return;
    case Local::kEcho:
      if (args.size() == 2)
        answerBulk(cmd, args[1]);
      else
        wrongArity(cmd);
      return;
    case Local::kQuit:
      answerStatic(cmd, "+OK\r\n");
      finish(CacheOutcome::kQuit);
      return;
    case Local::kSelect:
      if (args.size() != 2) {
        wrongArity(cmd);
      } else if (args[1] == "0") {
        answerStatic(cmd, "+OK\r\n");
      } else {
        refuse(cmd, CacheErrorReason::kUnsupported,
               "SELECT of a database other than 0 is not supported: lb sends every command "
               "to database 0 of its backend");
      }
      return;
    case Local::kAuth:
      answerAuth(cmd);
      return;
    case Local::kConfig:
      // redis-benchmark reads `save` and `appendonly` before it starts. lb persists
      // nothing itself: "" and "no"; any other parameter matches nothing, as in Redis.
      if (args.size() >= 3 && resp::equalsLower(args[1], "get")) {
        size_t matched = 0;
        for (size_t i = 2; i < args.size(); ++i)
          if (resp::equalsLower(args[i], "save") || resp::equalsLower(args[i], "appendonly"))
            ++matched;
        char* out = arena().allocate(32 + matched * 40, cmd->seq);
        if (out == nullptr) {
          answerStatic(cmd, kOutOfMemory);
          return;
        }
        size_t len = static_cast<size_t>(snprintf(out, 32, "*%zu\r\n", matched * 2));
        for (size_t i = 2; i < args.size(); ++i) {
          if (resp::equalsLower(args[i], "save")) {
            memcpy(out + len, "$4\r\nsave\r\n$0\r\n\r\n", 16);
            len += 16;
          } else if (resp::equalsLower(args[i], "appendonly")) {
            memcpy(out + len, "$10\r\nappendonly\r\n$2\r\nno\r\n", 25);
            len += 25;
          }
        }
        answerStatic(cmd, {out, len});
        return;
      }
      refuse(cmd, CacheErrorReason::kUnsupported,
             "CONFIG is not supported: it addresses one server (lb answers CONFIG GET only, "
             "for clients that probe it)");
      return;
    case Local::kNone:
      break;
  }
  refuse(cmd, CacheErrorReason::kUnknownCommand, "unknown command");
}

}  // namespace lb
