// Commands whose options name keys of their own: SORT and SORT_RO (BY and GET patterns, each
// '*' replaced by an element to form a key; STORE destination) and GEORADIUS and
// GEORADIUSBYMEMBER (STORE and STOREDIST destinations). Routed by the first key alone, the
// result would be stored on the key's server while reads of the destination go to its own
// owner, and a pattern's keys read on a server that does not hold them: a wrong answer with
// no error. So every key an option names must have the first key's owner, as Redis Cluster
// requires (sort.c: a BY or GET pattern whose keys may be in another slot is refused; a
// STORE key is a key like any other); otherwise -CROSSSLOT, and a hash tag is the cure.
#include <cstdio>

#include "lb/core/hash.h"
#include "lb/proxy/redis/redis_replies.h"
#include "lb/proxy/redis/redis_session.h"
#include "lb/proxy/redis/resp.h"

namespace lb {

namespace {

bool has(std::string_view s, char c) noexcept { return s.find(c) != std::string_view::npos; }

}  // namespace

void RedisSession::routeOptionKeys(CacheCommand* cmd, std::string_view raw) noexcept {
  const std::vector<std::string_view>& args = cache().scratch().args;
  const bool sort = resp::equalsLower(args[0], "sort") || resp::equalsLower(args[0], "sort_ro");
  if (args.size() < 2) {
    wrongArity(cmd);
    return;
  }
  uint32_t owner;
  if (!pickHost(args[1], &owner)) {
    refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for this key");
    return;
  }
  // The keys the options name, checked against the owner as they are found. Option words
  // the server does not know are its to refuse; only a word followed by its argument counts.
  for (size_t i = 2; i + 1 < args.size(); ++i) {
    const std::string_view word = args[i];
    const std::string_view arg = args[i + 1];
    bool pattern = false;
    if (sort && (resp::equalsLower(word, "by") || resp::equalsLower(word, "get"))) {
      // Redis reads no key for a pattern without '*' (BY nosort) or for GET #.
      if (!has(arg, '*') || arg == "#") {
        ++i;
        continue;
      }
      pattern = true;
    } else if (sort && resp::equalsLower(word, "limit")) {
      i += 2;   // LIMIT offset count
      continue;
    } else if (!(resp::equalsLower(word, "store") ||
                 (!sort && resp::equalsLower(word, "storedist")))) {
      continue;
    }
    ++i;
    // A pattern's keys share one owner only through a hash tag without '*' in it (Redis
    // Cluster's patternHashSlot); the tag then routes like the key would.
    const std::string_view tagged = keyWithinHashTag(arg, listener().config->hash_tag);
    uint32_t host;
    if (pattern && (tagged.size() == arg.size() || has(tagged, '*'))) {
      crossServer(cmd, args[0]);
      return;
    }
    if (!pickHost(arg, &host)) {
      refuse(cmd, CacheErrorReason::kNoBackend, "no backend is available for these keys");
      return;
    }
    if (host != owner) {
      crossServer(cmd, args[0]);
      return;
    }
  }
  sendRaw(cmd, owner, raw, redis::kAnyReply);
}

}  // namespace lb
