// GET /hotkeys[?cluster=C]: each cluster's hot keys as the main thread's HotKeyTracker last
// saw them (lb/hotkeys/hot_keys.h; the JSON is in docs/operations.md, "Watching hot keys"), a pure function of the snapshot
// and the query so that tests can check it without a socket.
//
//   {"cluster": "C", "window_s": 1, "floor_rps": F, "total_rps": T, "summary_size": N,
//    "keys": [{"key": "user:1", "hash_hex": "...", "rps": 1234.5, "rps_lower": 1200.0,
//              "share": 0.19, "hot": true, "owner": "cache-a", "serving": ["cache-a"],
//              "hot_since": "RFC 3339" or null}, ...]}
//
// keys: the tracked keys worth showing, highest rate first, hot or not ("hot" says which);
// "key" is the first kHotKeyDisplayBytes (200) bytes lb saw, JSON-escaped (bytes that are not
// UTF-8 as U+FFFD). "owner" is the table's pick for the hash at attempt 0 (null when the
// cluster has no backend); "serving" is, for a hot key of a cluster with hot_keys.spread,
// the first `spread` usable hosts of its order (where its GETs and HEADs go), else where the
// key's requests go at this moment: the owner while it is usable, and the host the next
// request would go to when that is another one (with bounded loads, the spill past an owner
// at its cap; past a down owner, its failover). A spill that comes and goes between requests
// shows only if the admin is asked at such a moment. Without ?cluster: {"clusters": [one
// such object per cluster]}. An unknown cluster: 404 {"error": ..., "clusters": [known names]}.
//
// Main thread only: the trackers are the main thread's (the admin server runs on its loop).
#pragma once

#include <string_view>

#include "lb/admin/admin_http.h"
#include "lb/routing/snapshot.h"

namespace lb {

AdminResponse hotKeysResponse(const Snapshot& snapshot, std::string_view query);

}  // namespace lb
