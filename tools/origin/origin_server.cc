// lb-origin's workers. The main thread binds every worker's socket (so the port, even an
// ephemeral one, is known and accepting before the "listening on" line is printed) and then
// only waits for signals; each worker thread runs lb's HTTP server on its own loop and
// socket (SO_REUSEPORT) and never shares a connection with another.
#include "tools/origin/origin_server.h"

#include <uv.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "lb/core/address.h"
#include "lb/http/server.h"
#include "tools/origin/conn.h"

namespace lb::origin {
namespace {

struct Worker {
  uv_loop_t loop;
  uv_async_t stop;
  HttpServer* server = nullptr;   // frees itself once stopped
  std::thread thread;
};

// Runs on the worker's loop: stops the server (closing every connection) and the wake-up
// handle; uv_run then returns because no handle is left.
void onStop(uv_async_t* a) {
  auto* w = static_cast<Worker*>(a->data);
  w->server->stop();
  uv_close(reinterpret_cast<uv_handle_t*>(&w->stop), nullptr);
}

// Stops the servers of workers whose threads never started and runs their loops dry.
void discard(std::vector<std::unique_ptr<Worker>>& workers) {
  for (auto& w : workers) {
    w->server->stop();
    uv_run(&w->loop, UV_RUN_DEFAULT);
    uv_loop_close(&w->loop);
  }
}

struct SignalState {
  std::vector<std::unique_ptr<Worker>>* workers;
  uv_signal_t term, intr;
};

void onSignal(uv_signal_t* s, int) {
  auto* st = static_cast<SignalState*>(s->data);
  for (auto& w : *st->workers) uv_async_send(&w->stop);
  uv_close(reinterpret_cast<uv_handle_t*>(&st->term), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&st->intr), nullptr);
}

}  // namespace

int runOrigin(const OriginOptions& options) {
  signal(SIGPIPE, SIG_IGN);   // a peer that vanished is an error return, not a death
  sockaddr_storage address;
  socklen_t address_len = 0;
  std::string error;
  if (!parseAddress(options.listen, &address, &address_len, &error, PortZero::kAllow)) {
    fprintf(stderr, "lb-origin: bad --listen: %s\n", error.c_str());
    return 1;
  }
  OriginShared shared;
  shared.name = options.name;
  const unsigned n = options.workers == 0 ? 1 : options.workers;

  HttpServerOptions server_options;
  server_options.max_head_bytes = 64 * 1024;   // url + headers; beyond: 431
  server_options.reuse_port = n > 1;
  server_options.backlog = 1024;
  server_options.error_headers = "X-Backend: " + options.name + "\r\n";
  auto factory = [&shared](HttpServerConn&) -> std::unique_ptr<HttpHandler> {
    return std::make_unique<OriginConn>(&shared);
  };

  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned i = 0; i < n; ++i) {
    auto w = std::make_unique<Worker>();
    uv_loop_init(&w->loop);
    w->server = HttpServer::start(&w->loop, address, server_options, factory, nullptr, &error);
    if (w->server == nullptr) {
      fprintf(stderr, "lb-origin: %s\n", error.c_str());
      uv_loop_close(&w->loop);
      discard(workers);
      return 1;
    }
    // The others share the first one's port, also when it was asked for as port 0.
    if (i == 0) parseAddress(w->server->address(), &address, &address_len, &error);
    workers.push_back(std::move(w));
  }
  const std::string bound = workers[0]->server->address();
  for (auto& w : workers) {
    uv_async_init(&w->loop, &w->stop, onStop);
    w->stop.data = w.get();
  }

  uv_loop_t main_loop;
  uv_loop_init(&main_loop);
  SignalState st{&workers, {}, {}};
  uv_signal_init(&main_loop, &st.term);
  uv_signal_init(&main_loop, &st.intr);
  st.term.data = st.intr.data = &st;
  uv_signal_start(&st.term, onSignal, SIGTERM);
  uv_signal_start(&st.intr, onSignal, SIGINT);

  for (auto& w : workers)
    w->thread = std::thread([wp = w.get()] {
      uv_run(&wp->loop, UV_RUN_DEFAULT);
      uv_loop_close(&wp->loop);
    });
  fprintf(stderr, "lb-origin %s listening on %s\n", options.name.c_str(), bound.c_str());
  fflush(stderr);

  uv_run(&main_loop, UV_RUN_DEFAULT);
  for (auto& w : workers) w->thread.join();
  uv_loop_close(&main_loop);
  return 0;
}

}  // namespace lb::origin
