// The selector plugin interface (docs/architecture.md, "Selectors"): a table built once per membership change from
// the cluster's hosts, then shared read-only by every worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "lb/core/hash.h"
#include "lb/core/result.h"

namespace lb {

// What a selector builds from: a host's stable identity and weight. Never its address or its
// position in the file (changing an address or reordering the file moves no key).
struct HostSpec {
  std::string hash_key;
  uint32_t weight = 1;
};

struct SelectorOptions {
  uint32_t vnodes = 160;          // ring_hash: points per unit of weight
  uint64_t table_size = 65537;    // maglev: prime
  bool modula = false;            // twemproxy: distribution = "modula" instead of ketama
};

class SelectorTable {
 public:
  virtual ~SelectorTable() = default;
  // attempt 0 is the key's owner; attempt k is the k-th next *distinct* host in this key's
  // preference order (the replica walk). Returns an index into the HostSpec list the table was
  // built from. attempt >= hostCount() wraps (attempt % hostCount()). Hot path: no allocation,
  // no locks.
  virtual uint32_t pick(uint64_t hash, uint32_t attempt) const noexcept = 0;
  virtual uint32_t hostCount() const noexcept = 0;
  // Bytes the table holds, for `make bench`'s memory-per-host figure.
  virtual size_t memoryBytes() const noexcept = 0;
};

using SelectorBuilder = std::unique_ptr<SelectorTable> (*)(std::span<const HostSpec> hosts,
                                                           const SelectorOptions& options);

struct SelectorInfo {
  std::string_view name;
  SelectorBuilder build;
  KeyHash key_hash;
};

}  // namespace lb
