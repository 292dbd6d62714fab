// Numbered keys through a redis listener, for the handover tests: key i is "user:i" with a
// value of its own, set and read in pipelined batches, and the keys /ring gives to one
// owner. Test-thread only.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/cache_fleet.h"

namespace lb::test {

inline std::string keyOf(int i) { return "user:" + std::to_string(i); }
inline std::string valueOf(int i) { return "value-" + std::to_string(i * 7919); }

// Pipelines `commands` on `c` in batches and returns every reply in order.
inline std::vector<RespValue> pipeline(TcpClient& c, const std::vector<std::string>& commands) {
  std::vector<RespValue> out;
  constexpr size_t kBatch = 500;
  for (size_t at = 0; at < commands.size(); at += kBatch) {
    std::string batch;
    const size_t end = std::min(commands.size(), at + kBatch);
    for (size_t i = at; i < end; ++i) batch += commands[i];
    if (!c.send(batch)) return out;
    for (size_t i = at; i < end; ++i) {
      auto v = readResp(c, 20s);
      if (!v) return out;
      out.push_back(std::move(*v));
    }
  }
  return out;
}

// Sets keys [0, n) through lb with a one-hour TTL; true when every one said OK.
inline bool setKeys(TcpClient& c, int n) {
  std::vector<std::string> cmds;
  for (int i = 0; i < n; ++i)
    cmds.push_back(redisEncode({"SET", keyOf(i), valueOf(i), "EX", "3600"}));
  const auto replies = pipeline(c, cmds);
  if (replies.size() != cmds.size()) return false;
  for (const auto& r : replies)
    if (r.text != "OK") return false;
  return true;
}

// Reads keys [0, n) once through lb: how many came back with their value.
inline int hitsOf(TcpClient& c, int n) {
  std::vector<std::string> cmds;
  for (int i = 0; i < n; ++i) cmds.push_back(redisEncode({"GET", keyOf(i)}));
  const auto replies = pipeline(c, cmds);
  int hits = 0;
  for (size_t i = 0; i < replies.size(); ++i)
    if (!replies[i].nil && replies[i].text == valueOf(static_cast<int>(i))) ++hits;
  return hits;
}

// Keys among [0, n) whose owner /ring names as `owner` now.
inline std::vector<int> keysOwnedBy(CacheFleet& fleet, int n, const std::string& owner) {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) keys.push_back(keyOf(i));
  const auto owners = fleet.ringOwners(keys);
  std::vector<int> out;
  for (int i = 0; i < n; ++i)
    if (owners[static_cast<size_t>(i)] == owner) out.push_back(i);
  return out;
}

}  // namespace lb::test
