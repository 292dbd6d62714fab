// `lb upgrade` on the running lb's side: SIGUSR2 starts the binary installed at this
// process's own path, hands it every listening socket and the health view over the
// hand-over channel (lb/upgrade/upgrade_channel.h), and waits for it to say ready. Then this
// process drains (the caller's `ready` hook) and exits; until then, and for good when the new
// one fails (a config it refuses, an exit before ready, no answer within kReadyTimeoutMs),
// this one serves as before and says why in its log and in the result `lb upgrade` reads.
// nginx's USR2 binary upgrade and HAProxy's master-worker reload work the same way.
//
// One attempt is one Upgrade object, on the main thread: it owns its handles (data = this)
// and frees itself after the last one closed. A second SIGUSR2 while one runs is refused by
// the caller (lb/app/lifecycle.h).
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lb/upgrade/upgrade_channel.h"

namespace lb {

class Upgrade;

struct UpgradeHooks {
  // The listening sockets to hand over (dups the callee makes and gives away) and the admin
  // server's (-1: none).
  std::function<void(std::vector<int>* listeners, int* admin)> sockets;
  std::function<std::vector<HealthCarry>()> health;
  uint64_t generation = 1;   // this process's lb_process_generation
  // The new process is ready: drain this one.
  std::function<void(pid_t)> ready;
  // The attempt is over (either way) and the object is about to free itself.
  std::function<void(Upgrade*)> done;
};

// One attempt. Frees itself once its handles have closed, after hooks.done.
class Upgrade {
 public:
  // The new binary has this long to say ready or failed.
  static constexpr uint64_t kReadyTimeoutMs = 60000;

  enum class State {
    kSpawned,      // the new binary runs; the channel waits for it to connect
    kHandedOver,   // it has the sockets and the health view; its answer is awaited
    kEnding,       // ready or failed was decided; the handles are closing
  };

  // Main thread. `argv`: the command line of the new binary (argv[0] is replaced by the path
  // of this process's executable). nullptr when the attempt cannot even start; it has then
  // said why (log, result) and called nothing.
  static Upgrade* start(uv_loop_t* loop, std::vector<std::string> argv, UpgradeHooks hooks);
  Upgrade(const Upgrade&) = delete;
  Upgrade& operator=(const Upgrade&) = delete;

  // Main thread. An upgrade asked for when none can start (lb drains, one already runs):
  // logged, and written as the result `lb upgrade` reads.
  static void refuse(const std::string& why);

  // Main thread. lb stops: a new process that has not said ready is told to stop too.
  void abandon();

 private:
  Upgrade(uv_loop_t* loop, UpgradeHooks hooks);
  ~Upgrade() = default;
  static void onAccept(uv_poll_t* p, int status, int events);
  static void onReply(uv_poll_t* p, int status, int events);
  static void onExit(uv_process_t* p, int64_t status, int signal);
  static void onTimeout(uv_timer_t* t);
  static void onClosed(uv_handle_t* h);
  void accept();
  void reply();
  void fail(const std::string& why);
  void succeed(pid_t pid);
  // kEnding: stop listening and close every handle (the process one after its exit when the
  // child is being stopped).
  void end();

  uv_loop_t* loop_;
  UpgradeHooks hooks_;
  State state_ = State::kSpawned;
  std::string dir_;          // RUNTIME/lb-upgrade.PID
  std::string socket_path_;
  int listen_fd_ = -1;
  int conn_fd_ = -1;
  uv_poll_t listen_poll_;
  uv_poll_t conn_poll_;
  bool conn_open_ = false;   // conn_poll_ initialised
  uv_process_t child_;
  pid_t child_pid_ = 0;
  bool child_exited_ = false;
  bool child_stays_ = false; // said ready: it is the new lb, never stopped from here
  uv_timer_t timer_;
  int closing_ = 0;          // handles whose close callback is still to come
};

}  // namespace lb
