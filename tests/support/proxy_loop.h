// A proxy loop for the session tests (tcp_session_test.cc, http_session_idle_test.cc): a
// worker in miniature on a thread of its own, driven from the test thread.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "lb/runtime/access_log.h"
#include "lb/runtime/listener.h"
#include "lb/runtime/protocol_table.h"
#include "lb/runtime/worker_env.h"

namespace lb::test {

using namespace std::chrono_literals;

// A worker in miniature: one loop thread (a WorkerEnv of its own, as a worker has) with one
// listener on 127.0.0.1 feeding the protocol's accept function, and an access log.
class ProxyLoop {
 public:
  ProxyLoop(std::shared_ptr<const Snapshot> snap, AcceptFn accept,
            std::shared_ptr<AccessLogSink> sink = nullptr)
      : snap_(std::move(snap)), accept_(accept) {
    protocols_.fill(accept);
    uv_loop_init(&loop_);
    env_.setSnapshot(snap_);
    access_log_ = std::make_unique<AccessLog>(&loop_, sink);
    env_.setAccessLog(access_log_.get());
    uv_tcp_init(&loop_, &server_);
    server_.data = this;
    sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", 0, &addr);
    uv_tcp_bind(&server_, reinterpret_cast<sockaddr*>(&addr), 0);
    uv_listen(reinterpret_cast<uv_stream_t*>(&server_), 128, onConnection);
    sockaddr_storage bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&server_, reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    uv_async_init(&loop_, &async_, onAsync);
    async_.data = this;
    thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
  }

  ~ProxyLoop() { stop(); }

  // Closes everything on the loop, joins it, and checks every handle was closed.
  void stop() {
    if (!thread_.joinable()) return;
    run([this] {
      uv_close(reinterpret_cast<uv_handle_t*>(&server_), nullptr);
      env_.sessions().forEach([](Session* s) { s->abort(); });
      env_.upstreams().closeAll();
      access_log_->close();
      uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr);
    });
    thread_.join();
    EXPECT_EQ(uv_loop_close(&loop_), 0) << "a handle was left open";
    EXPECT_EQ(env_.sessionCount(), 0u);
    EXPECT_EQ(env_.buffers().outstanding(), 0u) << "a chunk was not returned to the pool";
  }

  // Runs fn on the loop thread and waits for it.
  void run(std::function<void()> fn) {
    std::promise<void> done;
    {
      std::lock_guard<std::mutex> g(mu_);
      calls_.push_back([&] {
        fn();
        done.set_value();
      });
    }
    uv_async_send(&async_);
    done.get_future().wait();
  }

  template <typename T>
  T query(std::function<T()> fn) {
    T out{};
    run([&] { out = fn(); });
    return out;
  }

  // Polls a loop-thread condition with a deadline.
  bool waitFor(std::function<bool()> cond, std::chrono::milliseconds timeout = 5s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (query<bool>(cond)) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }

  uint16_t port() const { return port_; }
  WorkerEnv& env() { return env_; }
  const Snapshot& snapshot() const { return *snap_; }

 private:
  static void onConnection(uv_stream_t* server, int status) {
    auto* self = static_cast<ProxyLoop*>(server->data);
    if (status == 0)
      self->accept_(self->env_, server, nullptr, self->snap_, 0,
                    admitConnection(self->snap_->listeners[0], 0));
  }
  static void onAsync(uv_async_t* a) {
    auto* self = static_cast<ProxyLoop*>(a->data);
    std::vector<std::function<void()>> calls;
    {
      std::lock_guard<std::mutex> g(self->mu_);
      calls.swap(self->calls_);
    }
    for (auto& c : calls) c();
  }

  std::shared_ptr<const Snapshot> snap_;
  uv_loop_t loop_;
  uv_tcp_t server_;
  uv_async_t async_;
  AcceptFn accept_;
  ProtocolTable protocols_{};   // every protocol accepts with accept_
  WorkerEnv env_{&loop_, 0, protocols_};
  std::unique_ptr<AccessLog> access_log_;
  uint16_t port_ = 0;
  std::mutex mu_;
  std::vector<std::function<void()>> calls_;
  std::thread thread_;
};

}  // namespace lb::test
