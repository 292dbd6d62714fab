// A libuv loop on its own thread, for tests of code that runs on a loop (the admin server,
// lb's HTTP server): work is posted to it and waited for, and stop() reports whether every
// handle was closed.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

namespace lb::testing {

// A uv loop running on a thread. Work is posted to it with run(); stop() closes the loop's
// own wake-up handle and joins, and reports whether the loop closed cleanly (every handle
// closed: uv_loop_close() == 0).
class LoopThread {
 public:
  LoopThread() {
    uv_loop_init(&loop_);
    uv_async_init(&loop_, &wake_, onWake);
    wake_.data = this;
    thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
  }
  ~LoopThread() {
    if (thread_.joinable()) stop();
  }

  uv_loop_t* loop() { return &loop_; }

  // Runs fn on the loop thread and waits for it. A loop thread that does not come back within
  // 10 s is wedged (a timer re-armed for "now" inside its own callback spins in libuv's timer
  // phase for ever): the test binary aborts with a message rather than hang.
  template <typename F>
  auto run(F fn) -> decltype(fn()) {
    using R = decltype(fn());
    auto task = std::make_shared<std::packaged_task<R()>>(std::move(fn));
    auto done = task->get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back([task] { (*task)(); });
    }
    uv_async_send(&wake_);
    if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      std::fprintf(stderr, "the loop thread did not answer within 10s: it is wedged\n");
      std::abort();
    }
    return done.get();
  }

  // Waits until pred() (evaluated on the loop thread) holds, up to `limit`.
  bool waitFor(std::function<bool()> pred,
               std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (run(pred)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  }

  // Closes the wake-up handle, waits for the loop to run out of handles, and closes it.
  // True when uv_loop_close succeeded: nothing was left open.
  bool stop() {
    run([this] { uv_close(reinterpret_cast<uv_handle_t*>(&wake_), nullptr); });
    thread_.join();
    return uv_loop_close(&loop_) == 0;
  }

 private:
  static void onWake(uv_async_t* a) {
    auto* self = static_cast<LoopThread*>(a->data);
    std::deque<std::function<void()>> work;
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      work.swap(self->queue_);
    }
    for (auto& f : work) f();
  }

  uv_loop_t loop_;
  uv_async_t wake_;
  std::mutex mu_;
  std::deque<std::function<void()>> queue_;
  std::thread thread_;
};

}  // namespace lb::testing
