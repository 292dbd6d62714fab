// Backend host names looked up with libuv's uv_getaddrinfo (glibc's getaddrinfo on libuv's
// thread pool), on the main thread only: never on a worker, never on the request path
// (docs/operations.md, "Backends by name").
//
// - Every name of a batch is looked up at once; libuv runs at most half of its thread pool
//   (2 of the default 4 threads) on lookups, so a slow DNS server never holds up the
//   access-log writes that share the pool.
// - A batch waits at most kResolveWait in all. A name with no answer by then counts as not
//   resolved ("no answer within 10s"); its lookup finishes in the background (bounded by the
//   system resolver's own timeout and attempts in resolv.conf) and its answer is dropped.
// - When a name has several addresses, the first one getaddrinfo returns is used: the
//   system's order (RFC 6724, tuned in /etc/gai.conf), as nginx does for a `server` name
//   without `resolve`. A backend is one address; nginx would make one server of each.
#pragma once

#include <uv.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lb/config/config.h"
#include "lb/core/duration.h"
#include "lb/routing/snapshot.h"

namespace lb {

inline constexpr Duration kResolveWait{10000};

// One name's outcome: status 0 and its address (port 0), or a libuv error (UV_EAI_NONAME,
// ..., UV_ETIMEDOUT when the batch stopped waiting).
struct ResolveAnswer {
  int status = 0;
  ResolvedAddress address;
};

// The reason for a failed lookup as people read it: glibc's gai_strerror text for the EAI_*
// codes ("Name or service not known"), "no answer within 10s" for UV_ETIMEDOUT.
std::string resolveErrorText(int status, Duration wait = kResolveWait);

// One round of lookups on a loop. Start it and forget it: it calls `done` exactly once, on
// the loop's thread, and frees itself afterwards.
class ResolveBatch {
 public:
  using Done = std::function<void(const std::vector<std::string>& names,
                                  const std::vector<ResolveAnswer>& answers)>;

  // Loop thread. Looks up every name of `names` at once; `done` gets one answer per name, in
  // the same order, once all have answered or `wait` has passed. With no names, `done` runs
  // before start returns and the result is null; otherwise it is the batch, valid until
  // `done` runs or abandon() is called.
  static ResolveBatch* start(uv_loop_t* loop, std::vector<std::string> names, Duration wait,
                             Done done);
  // Loop thread. Stops waiting without calling `done` (its owner is going away); lookups
  // still running end in the background.
  void abandon();

  ResolveBatch(const ResolveBatch&) = delete;
  ResolveBatch& operator=(const ResolveBatch&) = delete;

 private:
  struct Lookup;
  ResolveBatch(std::vector<std::string> names, Done done);
  ~ResolveBatch() = default;
  static void onResolved(uv_getaddrinfo_t* req, int status, addrinfo* res);
  static void onWaitOver(uv_timer_t* timer);
  static void onClosed(uv_handle_t* handle);
  void answer(size_t index, int status, const addrinfo* res);
  void finish(bool call_done = true);

  std::vector<std::string> names_;
  std::vector<ResolveAnswer> answers_;
  std::vector<Lookup*> pending_;   // by name; null once answered
  size_t unanswered_ = 0;
  Done done_;
  uv_timer_t timer_;
  bool finished_ = false;
};

// A NameResolver that looks nothing up: it notes the names a config asks for and says each
// resolved. A reload reads its file with it first, to learn which names to look up without
// blocking the main loop (lb/app/lifecycle.h).
class NameCollector final : public NameResolver {
 public:
  std::vector<std::string> resolve(const std::vector<std::string>& names) override {
    names_ = names;
    return std::vector<std::string>(names.size());
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

// A NameResolver that answers from a finished batch: a reload's second read of its file, and
// BlockingResolver's answer. A name the batch did not ask about (the file changed in between)
// is not resolved.
class AnsweredResolver final : public NameResolver {
 public:
  AnsweredResolver(const std::vector<std::string>& names, const std::vector<ResolveAnswer>& answers,
                   Duration wait = kResolveWait);
  std::vector<std::string> resolve(const std::vector<std::string>& names) override;
  const ResolvedHosts& hosts() const { return hosts_; }

 private:
  std::map<std::string, std::string, std::less<>> failed_;   // name -> why
  ResolvedHosts hosts_;
};

// The loader's NameResolver (lb/config/config.h): runs a batch on a loop of its own and waits
// for it, blocking the calling thread for at most `wait`. Used at start and by `lb --check`,
// before anything runs (a reload looks names up on the main loop instead, lb/app/lifecycle.h).
// Keeps the answers for buildSnapshot.
// Main thread only.
class BlockingResolver final : public NameResolver {
 public:
  explicit BlockingResolver(Duration wait = kResolveWait);
  // Lets lookups that outlived a wait finish (the system resolver's own timeout bounds them;
  // libuv would wait for them at exit anyway), then closes the loop.
  ~BlockingResolver() override;
  BlockingResolver(const BlockingResolver&) = delete;
  BlockingResolver& operator=(const BlockingResolver&) = delete;

  std::vector<std::string> resolve(const std::vector<std::string>& names) override;
  // What the last resolve() found, by name (the names that resolved only).
  const ResolvedHosts& hosts() const { return hosts_; }

 private:
  uv_loop_t loop_;
  Duration wait_;
  ResolvedHosts hosts_;
};

}  // namespace lb
