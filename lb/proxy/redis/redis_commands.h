// What lb knows of each Redis command: where its keys are and how it goes through a sharding
// proxy. Key positions follow Redis' own command table (first key, last key, step; or a
// numkeys argument); the choices for commands that cannot be sharded are lb's, and each
// carries the reason its error gives the client (docs/operations.md, "Redis").
#pragma once

#include <cstdint>
#include <string_view>

namespace lb::redis {

enum class Route : uint8_t {
  kKey,          // one key at args[first]: its owner
  kSameServer,   // keys at first..last by step: their common owner, else -CROSSSLOT
  kNumkeys,      // args[numkeys] keys from numkeys + 1 (plus a key at args[first] when
                 // first > 0): their common owner; no key at all: on_missing_key
  kOptionKeys,   // SORT, SORT_RO, GEORADIUS, GEORADIUSBYMEMBER: the key at args[first] and
                 // the keys their options name (STORE, STOREDIST; SORT's BY and GET
                 // patterns) on one owner, else -CROSSSLOT (redis_option_keys.cc)
  kMget,         // MGET: split by owner, values merged in key order
  kCount,        // DEL, UNLINK, EXISTS, TOUCH: split by owner, integers summed
  kMset,         // MSET: split by owner (key, value pairs), +OK when every part is
  kMsetnx,       // MSETNX: one owner, else refused (it cannot be atomic across servers)
  kLocal,        // answered by lb
  kEveryServer,  // FLUSHDB, FLUSHALL, DBSIZE, SCRIPT: to every server with the listener's
                 // fanout on (redis_fanout.cc), else refused naming the setting
  kAnyServer,    // COMMAND, TIME, LOLWUT: the same on every server; one usable server answers
  kRefused,      // an error naming the reason
};

enum class Local : uint8_t { kNone, kPing, kEcho, kQuit, kSelect, kAuth, kConfig };

struct CommandSpec {
  std::string_view name;   // lower case
  Route route;
  int8_t first = 0;        // index of the first key
  int8_t last = 0;         // index of the last key; < 0 counts from the end (-1: last arg)
  int8_t step = 1;
  int8_t numkeys = 0;      // kNumkeys: index of the numkeys argument
  Local local = Local::kNone;
  const char* reason = nullptr;   // kRefused
  // Never changes its keys (Redis' command table without the "write" flag). A command not
  // marked so may, and invalidates every key it names in the near cache before it is
  // forwarded: unmarked is the safe side.
  bool read_only = false;
};

// The spec of command `name` (any case); nullptr for a command lb does not know.
const CommandSpec* findCommand(std::string_view name) noexcept;

// Every command lb knows, for tests and docs.
size_t commandCount() noexcept;
const CommandSpec& commandAt(size_t i) noexcept;

}  // namespace lb::redis
