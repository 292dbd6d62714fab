#include "lb/app/builtin_protocols.h"

#include "lb/proxy/h2/h2_conn.h"
#include "lb/proxy/http/http_session.h"
#include "lb/proxy/memcached/memcached_session.h"
#include "lb/proxy/redis/redis_session.h"
#include "lb/proxy/tcp/tcp_session.h"
#include "lb/runtime/worker_env.h"

namespace lb {

namespace {

void acceptHttp(WorkerEnv& env, uv_stream_t* server, const AcceptTransport* transport,
                const std::shared_ptr<const Snapshot>& snap, uint32_t listener,
                Admission admission) {
  HttpSession::accept(&env, server, transport, snap, &snap->listeners[listener], admission);
}

}  // namespace

const ProtocolTable& builtinProtocols() {
  static const ProtocolTable table = [] {
    ProtocolTable t{};
    // HTTP/2 is a room HTTP listeners hand connections to (lb/runtime/h2_handoff.h).
    setH2Start(&H2Conn::start);
    t[static_cast<size_t>(Protocol::kHttp)] = acceptHttp;
    t[static_cast<size_t>(Protocol::kTcp)] = TcpSession::accept;
    t[static_cast<size_t>(Protocol::kRedis)] = RedisSession::accept;
    t[static_cast<size_t>(Protocol::kMemcached)] = MemcachedSession::accept;
    return t;
  }();
  return table;
}

}  // namespace lb
