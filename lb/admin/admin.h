// The admin listener (/metrics /ready /backends /ring?cluster=C&key=K /hotkeys; docs/operations.md), on the
// main thread's loop. The metrics and admin work lives behind this small entry point so the
// server wires it in one place.
//
// What it serves (GET or HEAD; any other method 405 with Allow; unknown paths 404):
//   /metrics   Prometheus text format 0.0.4: every metric of docs/architecture.md's table plus
//              lb_build_info, lb_config_last_reload_success_timestamp_seconds and process_*.
//   /ready     200 "ready", or 503 "draining" once a drain began (take lb out of rotation),
//              or 503 "no membership yet: cluster 'c'" while a membership cluster has no
//              backend (etcd has not answered, and neither the state file nor the file gave
//              it any).
//   /backends  {"generation":N,"clusters":[{"name","selector","hash_balance_factor",
//              "panic_threshold","panic","membership":{"source" (file, state_file, etcd),
//              "revision" (the etcd mod_revision served; 0 from the file),"fingerprint" (16
//              hex digits), and for a membership cluster "key","state","endpoint","watch_up",
//              "last_sync" (RFC 3339 or null),"applied","rejected","last_rejected" (null, or
//              {"revision","reason"})},"handover" (null, or the open window: {"since",
//              "until" (RFC 3339),"from_fingerprint","moved_ratio","ramp_ratio","leaving":
//              [names]}),"total_load","backends":[{"name","address" (as
//              configured),"resolved" (the IP:port connections go to),"weight","healthy",
//              "load","cap" (null when bounded loads are off),"keyspace_share","health" (up,
//              down, ejected),"reason" (null before any health event),"last_check" (null, or
//              {"result","at","latency_ms"}),"ejections","ejection_ms", and for a backend a
//              change removed that stays for the handover window "leaving_until" (RFC 3339)}]}]}
//   /ring?cluster=C&key=K
//              {"cluster","key","revision","fingerprint","hash","owner","order":[every
//               backend, preference order],
//               "pick","reason"}: owner and order come from the table alone (as `lb analyze`
//              prints them); pick and reason are where a request would go right now, given
//              health and live loads. Query values are percent-decoded, '+' as a space (as
//              HTML forms and curl --data-urlencode send them). 400 when a parameter is
//              missing or malformed, 404 for an unknown cluster.
//   /hotkeys[?cluster=C]
//              each cluster's hot keys (lb/admin/hotkeys_route.h): rates, lower bounds,
//              shares, owner, since when hot; 404 naming the known clusters for an unknown one.
// Limits: a 16 KiB request head (431 beyond) and body (413 beyond), 64 connections, 30 s for
// each request and its answer. Served by lb's HTTP server (lb/http/server.h).
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "lb/routing/snapshot.h"

namespace lb {

struct AdminHooks {
  std::function<std::shared_ptr<const Snapshot>()> snapshot;   // the live snapshot
  std::function<bool()> draining;                              // /ready answers 503 when true
};

class Admin;

// Main thread only. Starts listening on `listen` ("127.0.0.1:9901"); nullptr with *error set
// when it cannot bind.
Admin* startAdmin(uv_loop_t* loop, const std::string& listen, AdminHooks hooks,
                  std::string* error);
// Main thread only. Closes the listener and every admin connection; frees itself after the
// last close callback. Null is allowed.
void stopAdmin(Admin* admin);
// A dup of the admin server's listening socket (-1 without one): `lb upgrade` hands it over.
int dupAdminSocket(Admin* admin);
// Stops accepting admin connections; those open are still answered until stopAdmin().
void stopAdminAccepting(Admin* admin);
// Admin connections open now (0 without an admin server).
size_t adminConnections(Admin* admin);
// Main thread only. Records a reload attempt (lb_config_reloads_total{result},
// lb_config_last_reload_success_timestamp_seconds). Null is allowed.
void noteReload(Admin* admin, bool ok);
// Main thread only. Counts one round of backend host-name re-resolution
// (lb_dns_resolutions_total{result}): names that resolved to the address their backends
// already had, names that moved them, names that did not resolve. Null is allowed.
void noteDnsResolutions(Admin* admin, uint64_t ok, uint64_t changed, uint64_t failed);

}  // namespace lb
