// The builders of the selector plugins (docs/architecture.md, "Selectors"), registered by name in
// plugins/builtin.cc, plus the pure pieces their tests pin down directly.
//
// Every builder: main thread, off the hot path; takes the cluster's hosts (validated by the
// config loader: non-empty, distinct hash_keys, weight >= 1) and returns an immutable table
// whose pick() is const, lock-free and allocation-free. Returned host indices index `hosts`.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "plugins/selector.h"

namespace lb {

std::unique_ptr<SelectorTable> buildRingHash(std::span<const HostSpec> hosts,
                                             const SelectorOptions& options);
std::unique_ptr<SelectorTable> buildMaglev(std::span<const HostSpec> hosts,
                                           const SelectorOptions& options);
std::unique_ptr<SelectorTable> buildRendezvous(std::span<const HostSpec> hosts,
                                               const SelectorOptions& options);
std::unique_ptr<SelectorTable> buildJump(std::span<const HostSpec> hosts,
                                         const SelectorOptions& options);
std::unique_ptr<SelectorTable> buildKetama(std::span<const HostSpec> hosts,
                                           const SelectorOptions& options);
std::unique_ptr<SelectorTable> buildTwemproxy(std::span<const HostSpec> hosts,
                                              const SelectorOptions& options);

// One backend as the Maglev population sees it (Eisenbud et al., NSDI 2016, §3.4): its
// permutation is offset, offset + skip, offset + 2 skip, ... (mod M).
struct MaglevEntry {
  uint64_t offset;   // < M
  uint64_t skip;     // in [1, M)
  uint32_t weight;   // >= 1
};

// The Maglev lookup table as a pure function: entries in population order in, M slots out,
// slot -> index into entries. Hosts take turns in order; a host of weight w takes a turn in
// round r when r * w >= (turns taken so far) * max_weight, Envoy's weighted variant, so with
// equal weights it is the paper's round robin and entry counts differ by at most 1.
// Expects M prime and M >= entries.size() (the config loader validates both; asserted in debug
// builds); with M < entries.size() the table is still filled, and the hosts that got no slot
// are simply absent from it.
std::vector<uint32_t> buildMaglevTable(std::span<const MaglevEntry> entries, uint64_t table_size);

// Lamping & Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm" (2014): the bucket in
// [0, buckets) of key. buckets >= 1.
uint32_t jumpHash(uint64_t key, uint32_t buckets) noexcept;

// nginx's split of a server string for ketama points (ngx_http_upstream_init_chash): after a
// leading "unix:", all host; else at the last ':' when only digits follow it; else all host.
struct KetamaServer {
  std::string_view host;
  std::string_view port;
};
KetamaServer splitKetamaServer(std::string_view server) noexcept;

// nutcracker's continuum (nc_ketama.c): how many points a server of `weight` gets among
// `servers` servers of total weight `total_weight`, in nutcracker's single-precision
// arithmetic (160 each when the weights are equal; 0 for a share under 1/40 of the mean).
uint32_t twemproxyPointsPerServer(uint32_t weight, uint32_t total_weight,
                                  uint32_t servers) noexcept;

// One point of that continuum: its 32-bit value and the index of its host.
struct ContinuumPoint {
  uint32_t value;
  uint32_t host;
};
// The whole continuum as a pure function, sorted by value, ties in nutcracker's server order
// (by hash_key, shorter first, then bytewise).
std::vector<ContinuumPoint> twemproxyContinuum(std::span<const HostSpec> hosts);

// nutcracker's `distribution: modula` list (nc_modula.c) as a pure function: host indices,
// hosts in nutcracker's order (by hash_key, shorter first, then bytewise), each repeated
// weight times. A key of 32-bit hash h belongs to list[h % list.size()].
std::vector<uint32_t> twemproxyModulaList(std::span<const HostSpec> hosts);

}  // namespace lb
