// A connection an HTTP/1.1 session accepted that turns out to speak HTTP/2 goes on in the
// HTTP/2 room (lb/proxy/h2): TLS's ALPN agreed on "h2", or a plain connection opened with
// the h2c preface (RFC 9113 §3.3, prior knowledge). The HTTP session never names that room
// (a protocol folder never includes another): lb/app registers the room's start function
// here before any worker runs, as it fills the ProtocolTable.
//
// The HTTP session stays the worker's Session for the connection (the drain, the stop and a
// backend's fall reach the room through it) and keeps the client's Connection, embedded in
// it; the room becomes that Connection's owner, hears every event of it, and to close hands
// it back (Connection::setOwner(*shell), then close()), so that the session hears the last
// callback, deletes the room and then itself.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

namespace lb {

class Connection;
class ConnectionOwner;
class WorkerEnv;
struct BackendState;
struct ListenerSnapshot;
struct Snapshot;

// What the HTTP session asks of the room serving its connection. Loop thread only.
class H2Room {
 public:
  virtual ~H2Room() = default;
  // Finish the streams already begun (GOAWAY with the last one's id), then close.
  virtual void drain() noexcept = 0;
  // Close now: every stream's upstream connection closes, then the client's.
  virtual void abort() noexcept = 0;
  // Active checks took `backend` down: streams waiting on it move on.
  virtual void backendDown(const BackendState& backend) noexcept = 0;
};

struct H2Start {
  WorkerEnv* worker = nullptr;
  std::shared_ptr<const Snapshot> snapshot;
  const ListenerSnapshot* listener = nullptr;
  Connection* client = nullptr;        // open, its reads started
  ConnectionOwner* shell = nullptr;    // the HTTP session: the connection goes back to it
  std::string_view client_ip;          // the peer's address as text (X-Forwarded-For)
  bool tls = false;                    // h2 by ALPN (else h2c)
  // Bytes already read from the client (the h2c preface and whatever followed it); the
  // room takes them before start returns.
  const char* bytes = nullptr;
  size_t len = 0;
};

// The room's start: the room serving start.client from now on, or nullptr (out of memory),
// after which the session closes the connection.
using H2StartFn = H2Room* (*)(const H2Start& start) noexcept;

// Set once, before the workers start (lb/app); unset (a program that links the proxy without
// lb/app): connections stay HTTP/1.1, and an h2c preface is a 505 like any HTTP/2.0 request
// line.
void setH2Start(H2StartFn fn) noexcept;
H2StartFn h2Start() noexcept;

}  // namespace lb
