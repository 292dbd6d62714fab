#include "lb/app/protocols.h"

#include "lb/proxy/http/http_session.h"
#include "lb/proxy/tcp/tcp_session.h"
#include "lb/runtime/worker.h"

namespace lb {

namespace {

void acceptHttp(Worker& worker, uv_stream_t* server, const std::shared_ptr<const Snapshot>& snap,
                uint32_t listener) {
  HttpSession::accept(&worker, server, snap, &snap->listeners[listener]);
}

void acceptTcp(Worker& worker, uv_stream_t* server, const std::shared_ptr<const Snapshot>& snap,
               uint32_t listener) {
  if (TcpSession::accept(worker.tcpEnv(), snap, listener, server) != nullptr)
    worker.noteAccepted();
}

}  // namespace

const ProtocolTable& builtinProtocols() {
  static const ProtocolTable table = [] {
    ProtocolTable t{};
    t[static_cast<size_t>(Protocol::kHttp)] = acceptHttp;
    t[static_cast<size_t>(Protocol::kTcp)] = acceptTcp;
    return t;
  }();
  return table;
}

}  // namespace lb
