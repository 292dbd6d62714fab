// The hand-over channel between a running lb and the new one it starts for `lb upgrade`
// (lb/upgrade/upgrade.h; docs/operations.md, "Upgrading without loss").
//
// A unix SOCK_SEQPACKET socket (each message arrives whole, with the fds sent beside it),
// at RUNTIME/lb-upgrade.PID/handover.sock: the directory is lb's user's alone (0700, checked
// when it already exists), the socket 0600, and the old lb talks only to the process it
// spawned (SO_PEERCRED pid and uid). The messages are JSON objects:
//
//   old -> new   {"sockets": N, "admin": A}    N listening fds beside it (A: the index of the
//                                              admin server's, or -1); repeated, at most
//                                              kFdsPerMessage each
//                {"generation": G, "from": PID, "health": [...]}   the last message: the
//                                              new process's lb_process_generation, and the
//                                              backends out of rotation (HealthCarry)
//   new -> old   {"ready": PID}                it serves: the old one drains
//                {"failed": "why"}             it will not: the old one keeps serving
//
// The directory also receives the outcome, `result` ("ok: ..." or "failed: ..."), which
// `lb upgrade` reads.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lb/health/health_tracker.h"

namespace lb {

// The environment variable that tells a new lb where to connect.
inline constexpr char kUpgradeSocketEnv[] = "LB_UPGRADE_SOCKET";

// Where upgrade directories live, from an environment lookup: LB_RUNTIME_DIR, else systemd's
// RUNTIME_DIRECTORY (RuntimeDirectory=lb), else XDG_RUNTIME_DIR, else /tmp. `lb upgrade`
// applies it to the running lb's environment (/proc/PID/environ), so both find the same one.
std::string upgradeRuntimeDir(const std::function<const char*(const char*)>& getenv_fn);
// RUNTIME/lb-upgrade.PID
std::string upgradeDirFor(pid_t pid, const std::string& runtime_dir);

// Creates `dir` with mode 0700, or accepts it when it exists as a directory of this user that
// nobody else may enter; false with *error otherwise (a directory another user planted).
bool prepareUpgradeDir(const std::string& dir, std::string* error);
// Writes `text` to DIR/result (0600, through a rename, so a reader never sees half of it).
void writeUpgradeResult(const std::string& dir, const std::string& text);

// --- the running lb -------------------------------------------------------------------------

// A listening SOCK_SEQPACKET socket at `path`, mode 0600, non-blocking; -1 with *error.
int listenHandover(const std::string& path, std::string* error);
// Whether the peer of `conn` is process `child` of this user; *who names it either way.
bool peerIsChild(int conn, pid_t child, std::string* who);
// Sends every message to the new lb; false with *error.
bool sendHandover(int conn, const std::vector<int>& listen_fds, int admin_fd,
                  uint64_t generation, const std::vector<HealthCarry>& health,
                  std::string* error);
// The new lb's answer, read from a readable `conn`.
struct HandoverReply {
  enum class Kind { kReady, kFailed, kClosed } kind = Kind::kClosed;
  pid_t pid = 0;
  std::string why;
};
HandoverReply readHandoverReply(int conn);

// --- the new lb -----------------------------------------------------------------------------

struct HandoverIn {
  int conn = -1;             // open until ready or failed is said
  uint64_t generation = 1;
  pid_t from = 0;
  std::vector<HealthCarry> health;
  size_t sockets = 0;        // listening sockets received (admin included)
};
// Connects to `path`, receives every message and adds the sockets to the inherited ones
// (lb/net/inherited_sockets.h). False with *error (the caller exits: the old lb keeps serving).
bool receiveHandover(const std::string& path, HandoverIn* in, std::string* error);
// Tells the old lb, and closes the channel. No-op when it is closed.
void sayReady(HandoverIn* in);
void sayFailed(HandoverIn* in, const std::string& why);

}  // namespace lb
