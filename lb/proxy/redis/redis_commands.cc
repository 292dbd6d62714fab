#include "lb/proxy/redis/redis_commands.h"

#include <array>

namespace lb::redis {

namespace {

constexpr CommandSpec key(std::string_view name, int8_t at = 1) {
  return {name, Route::kKey, at, at, 1};
}
constexpr CommandSpec same(std::string_view name, int8_t first, int8_t last, int8_t step = 1) {
  return {name, Route::kSameServer, first, last, step};
}
constexpr CommandSpec numkeys(std::string_view name, int8_t at, int8_t dest = 0) {
  return {name, Route::kNumkeys, dest, dest, 1, at};
}
constexpr CommandSpec split(std::string_view name, Route route) {
  return {name, route, 1, -1, route == Route::kMset || route == Route::kMsetnx ? int8_t{2} : int8_t{1}};
}
// Redis' command table has no "write" flag on it (PFCOUNT, which rewrites its cached
// cardinality, is not one of these).
constexpr CommandSpec ro(CommandSpec s) {
  s.read_only = true;
  return s;
}
constexpr CommandSpec local(std::string_view name, Local what) {
  return {name, Route::kLocal, 0, 0, 1, 0, what};
}
constexpr CommandSpec optionKeys(std::string_view name) {
  return {name, Route::kOptionKeys, 1, 1, 1};
}
constexpr CommandSpec every(std::string_view name) {
  return {name, Route::kEveryServer, 0, 0, 1};
}
constexpr CommandSpec any(std::string_view name) { return {name, Route::kAnyServer, 0, 0, 1}; }
constexpr CommandSpec refused(std::string_view name, const char* reason) {
  return {name, Route::kRefused, 0, 0, 1, 0, Local::kNone, reason};
}

constexpr const char* kTransaction =
    "transactions need every key on one server, and lb routes each command on its own";
constexpr const char* kPubSub = "pub/sub does not go through lb; connect to a server directly";
constexpr const char* kBlocking =
    "a blocking command would hold a server connection that many clients share";
constexpr const char* kWholeServer = "it works on a whole server or database, not on keys";
constexpr const char* kServerAdmin = "it addresses one server; connect to it directly";
constexpr const char* kScripts =
    "it must reach every server; load functions on each backend";

constexpr CommandSpec kCommands[] = {
    // Strings.
    ro(key("get")), key("set"), key("setnx"), key("setex"), key("psetex"), key("getset"),
    key("getdel"), key("getex"), key("append"), ro(key("strlen")), key("incr"), key("decr"),
    key("incrby"), key("decrby"), key("incrbyfloat"), ro(key("getrange")), key("setrange"),
    ro(key("substr")), ro(key("getbit")), key("setbit"), ro(key("bitcount")), ro(key("bitpos")),
    key("bitfield"), ro(key("bitfield_ro")), ro(same("lcs", 1, 2)),
    ro(split("mget", Route::kMget)), split("mset", Route::kMset), split("msetnx", Route::kMsetnx),
    same("bitop", 2, -1),
    // Keys.
    split("del", Route::kCount), split("unlink", Route::kCount), ro(split("exists", Route::kCount)),
    ro(split("touch", Route::kCount)), key("expire"), key("expireat"), key("pexpire"),
    key("pexpireat"), ro(key("expiretime")), ro(key("pexpiretime")), ro(key("ttl")), ro(key("pttl")),
    key("persist"), ro(key("type")), ro(key("dump")), key("restore"), optionKeys("sort"),
    ro(optionKeys("sort_ro")),
    same("rename", 1, 2), same("renamenx", 1, 2), same("copy", 1, 2), ro(key("object", 2)),
    // Lists.
    key("lpush"), key("rpush"), key("lpushx"), key("rpushx"), key("lpop"), key("rpop"),
    ro(key("llen")), ro(key("lrange")), ro(key("lindex")), key("lset"), key("linsert"), key("lrem"),
    key("ltrim"), ro(key("lpos")), same("rpoplpush", 1, 2), same("lmove", 1, 2),
    numkeys("lmpop", 1),
    // Sets.
    key("sadd"), key("srem"), ro(key("smembers")), ro(key("sismember")), ro(key("smismember")),
    ro(key("scard")), key("spop"), ro(key("srandmember")), ro(key("sscan")), same("smove", 1, 2),
    ro(same("sinter", 1, -1)), same("sinterstore", 1, -1), ro(same("sunion", 1, -1)),
    same("sunionstore", 1, -1), ro(same("sdiff", 1, -1)), same("sdiffstore", 1, -1),
    ro(numkeys("sintercard", 1)),
    // Hashes.
    key("hset"), key("hsetnx"), ro(key("hget")), key("hmset"), ro(key("hmget")), key("hdel"),
    ro(key("hlen")), ro(key("hstrlen")), ro(key("hexists")), ro(key("hkeys")), ro(key("hvals")), ro(key("hgetall")),
    key("hincrby"), key("hincrbyfloat"), ro(key("hrandfield")), ro(key("hscan")),
    // Sorted sets.
    key("zadd"), key("zincrby"), key("zrem"), ro(key("zcard")), ro(key("zcount")), ro(key("zlexcount")),
    ro(key("zscore")), ro(key("zmscore")), ro(key("zrank")), ro(key("zrevrank")), ro(key("zrange")),
    ro(key("zrangebyscore")), ro(key("zrangebylex")), ro(key("zrevrange")), ro(key("zrevrangebyscore")),
    ro(key("zrevrangebylex")), key("zremrangebyrank"), key("zremrangebyscore"),
    key("zremrangebylex"), key("zpopmin"), key("zpopmax"), ro(key("zrandmember")), ro(key("zscan")),
    same("zrangestore", 1, 2), numkeys("zunionstore", 2, 1), numkeys("zinterstore", 2, 1),
    numkeys("zdiffstore", 2, 1), ro(numkeys("zunion", 1)), ro(numkeys("zinter", 1)),
    ro(numkeys("zdiff", 1)), ro(numkeys("zintercard", 1)), numkeys("zmpop", 1),
    // HyperLogLog, geo, streams.
    key("pfadd"), same("pfcount", 1, -1), same("pfmerge", 1, -1), key("geoadd"),
    ro(key("geodist")), ro(key("geohash")), ro(key("geopos")), optionKeys("georadius"),
    ro(key("georadius_ro")), optionKeys("georadiusbymember"), ro(key("georadiusbymember_ro")), ro(key("geosearch")),
    same("geosearchstore", 1, 2), key("xadd"), ro(key("xlen")), ro(key("xrange")), ro(key("xrevrange")),
    key("xdel"), key("xtrim"), key("xack"), key("xclaim"), key("xautoclaim"), ro(key("xpending")),
    key("xsetid"), ro(key("xinfo", 2)), key("xgroup", 2),
    // Scripts: their declared keys.
    numkeys("eval", 2), numkeys("evalsha", 2), ro(numkeys("eval_ro", 2)), ro(numkeys("evalsha_ro", 2)),
    numkeys("fcall", 2), ro(numkeys("fcall_ro", 2)),
    // Answered by lb.
    local("ping", Local::kPing), local("echo", Local::kEcho), local("quit", Local::kQuit),
    local("select", Local::kSelect), local("auth", Local::kAuth),
    local("config", Local::kConfig),
    // Every server (fanout), or any one.
    every("flushdb"), every("flushall"), every("dbsize"), every("script"),
    ro(any("command")), ro(any("time")), ro(any("lolwut")),
    // Refused.
    refused("multi", kTransaction), refused("exec", kTransaction),
    refused("discard", kTransaction), refused("watch", kTransaction),
    refused("unwatch", kTransaction), refused("subscribe", kPubSub),
    refused("psubscribe", kPubSub), refused("ssubscribe", kPubSub),
    refused("unsubscribe", kPubSub), refused("punsubscribe", kPubSub),
    refused("sunsubscribe", kPubSub), refused("publish", kPubSub), refused("spublish", kPubSub),
    refused("pubsub", kPubSub), refused("blpop", kBlocking), refused("brpop", kBlocking),
    refused("brpoplpush", kBlocking), refused("blmove", kBlocking), refused("blmpop", kBlocking),
    refused("bzpopmin", kBlocking), refused("bzpopmax", kBlocking), refused("bzmpop", kBlocking),
    refused("xread", "it may block, and reads streams that may live on several servers"),
    refused("xreadgroup", "it may block, and reads streams that may live on several servers"),
    refused("wait", kBlocking), refused("waitaof", kBlocking), refused("keys", kWholeServer),
    refused("scan", kWholeServer), refused("randomkey", kWholeServer),
    refused("swapdb", kWholeServer),
    refused("move", kWholeServer), refused("migrate", kServerAdmin),
    refused("client", kServerAdmin), refused("info", kServerAdmin),
    refused("monitor", kServerAdmin), refused("slowlog", kServerAdmin),
    refused("debug", kServerAdmin), refused("shutdown", kServerAdmin),
    refused("save", kServerAdmin), refused("bgsave", kServerAdmin),
    refused("bgrewriteaof", kServerAdmin), refused("lastsave", kServerAdmin),
    refused("replicaof", kServerAdmin), refused("slaveof", kServerAdmin),
    refused("sync", kServerAdmin), refused("psync", kServerAdmin), refused("role", kServerAdmin),
    refused("cluster", kServerAdmin), refused("readonly", kServerAdmin),
    refused("readwrite", kServerAdmin), refused("asking", kServerAdmin),
    refused("acl", kServerAdmin), refused("module", kServerAdmin),
    refused("latency", kServerAdmin), refused("memory", kServerAdmin),
    refused("failover", kServerAdmin), refused("reset", kServerAdmin),
    refused("hello", "lb speaks RESP2 only"), refused("function", kScripts),
};

constexpr size_t kSlots = 1024;   // a power of two, over four times the commands

uint32_t slotOf(std::string_view lower) noexcept {
  uint32_t h = 2166136261u;   // FNV-1a, 32 bits
  for (char c : lower) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return h & (kSlots - 1);
}

// Open addressing over the lower-case names, built once.
struct Index {
  std::array<int16_t, kSlots> slot;
  Index() {
    slot.fill(-1);
    for (size_t i = 0; i < std::size(kCommands); ++i) {
      uint32_t s = slotOf(kCommands[i].name);
      while (slot[s] >= 0) s = (s + 1) & (kSlots - 1);
      slot[s] = static_cast<int16_t>(i);
    }
  }
};

const Index& index() {
  static const Index idx;
  return idx;
}

}  // namespace

const CommandSpec* findCommand(std::string_view name) noexcept {
  char lower[24];
  if (name.empty() || name.size() > sizeof lower) return nullptr;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    lower[i] = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }
  const std::string_view want(lower, name.size());
  const Index& idx = index();
  for (uint32_t s = slotOf(want);; s = (s + 1) & (kSlots - 1)) {
    const int16_t i = idx.slot[s];
    if (i < 0) return nullptr;
    if (kCommands[i].name == want) return &kCommands[i];
  }
}

size_t commandCount() noexcept { return std::size(kCommands); }
const CommandSpec& commandAt(size_t i) noexcept { return kCommands[i]; }

}  // namespace lb::redis
