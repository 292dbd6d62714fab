// Write coalescing, for the cache protocols and HTTP/2: a connection with bytes to send does
// not write at once; it joins its worker's flush list, and every connection on the list
// writes once (one writev) after the loop's I/O callbacks for this turn have all run (a
// uv_check handle).
// What a timer callback queues (a command answered with a timeout) would wait in that check
// until the poll after the timers returns, which may be the next timer, so an idle handle
// runs alongside while the list is not empty: it keeps that poll from blocking, and flushes
// at the idle phase when the queue was filled before the poll.
// Commands read from fifty clients in one turn leave for a backend in one write, and the
// replies one backend read brings for many clients leave in one write per client.
//
// Loop thread only.
#pragma once

#include <uv.h>

namespace lb {

class Flushable {
 public:
  // Loop thread, from FlushList's check callback: write what is pending. May add other
  // Flushables (or this one again, for more work) to the list; they flush in the same turn.
  virtual void flush() noexcept = 0;

 protected:
  ~Flushable() = default;

 private:
  friend class FlushList;
  Flushable* prev_ = nullptr;
  Flushable* next_ = nullptr;
  bool queued_ = false;
};

class FlushList {
 public:
  // The handles are initialized here and run only while something is queued.
  explicit FlushList(uv_loop_t* loop) noexcept;
  FlushList(const FlushList&) = delete;
  FlushList& operator=(const FlushList&) = delete;

  // Idempotent: a queued Flushable stays where it is.
  void add(Flushable* f) noexcept;
  // Idempotent. A Flushable that goes away must leave first.
  void remove(Flushable* f) noexcept;
  // Worker stop: closes the handles (the owner frees this after the loop has run).
  void close() noexcept;

 private:
  static void onCheck(uv_check_t* check);
  static void onIdle(uv_idle_t* idle);
  void run() noexcept;

  uv_check_t check_;
  uv_idle_t idle_;
  Flushable* head_ = nullptr;
  Flushable* tail_ = nullptr;
  bool active_ = false;
  bool closed_ = false;
};

}  // namespace lb
