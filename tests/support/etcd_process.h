// Real etcd (Debian 12's etcd-server 3.4.23, /usr/bin/etcd) for tests: one member, or a
// cluster of three with a static --initial-cluster, each member on free 127.0.0.1 ports
// (never 2379/2380, where a packaged service may listen) with its own temporary data
// directory, removed in the destructor. Started waiting for GET /health to answer
// {"health":"true"} within a bounded deadline. Members are tuned for loopback (heartbeat
// 25 ms, election timeout 250 ms) so that a killed leader's replacement is elected within a
// second (the next member answered a linearizable range 250-810 ms after the kill), and
// quiet (--log-level error). Test-thread only.
//
// The helpers that write and read the store go through etcdctl (ETCDCTL_API=3, gRPC), not
// the JSON gateway lb speaks, so a test checks lb's client against an independent path
// (putSequence alone, built for speed, uses the gateway).
//
// With EtcdTls, members serve clients over https only (--cert-file, --key-file,
// --trusted-ca-file, and with client_cert_auth --client-cert-auth: a client must show a
// certificate of the CA); peers stay plain http on loopback. etcdctl then uses the CA and the
// client certificate given, and /health is asked through etcdctl too. enableAuth() turns on
// etcd's authentication with a root user, after which every helper runs as root.
// putSequence speaks plain HTTP and is for members without TLS.
//
//   lb::test::EtcdProcess etcd;
//   ASSERT_TRUE(etcd.ok()) << etcd.output();
//   int64_t rev = etcd.put("/lb/k", "v");
//   ... EtcdEndpoint from etcd.clientUrl() ...
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/process.h"

namespace lb::test {

// TLS for a test's etcd members (certificates from tests/support/tls_certs.h).
struct EtcdTls {
  std::string ca;                  // --trusted-ca-file, and what etcdctl trusts
  std::string cert, key;           // the members' certificate (for IP:127.0.0.1) and key
  bool client_cert_auth = false;   // --client-cert-auth
  std::string client_cert, client_key;   // what etcdctl shows (with client_cert_auth)
  bool enabled() const { return !cert.empty(); }
};

// A cluster of `members` etcd processes (1 or 3 in practice). Members are numbered from 0.
class EtcdCluster {
 public:
  // Starts every member and waits (up to `timeout`) until each answers /health. ok() says
  // whether it worked; output() has the members' logs when it did not.
  explicit EtcdCluster(size_t members = 3, Millis timeout = 15s, EtcdTls tls = {});
  // Kills every member (SIGKILL) and removes the data directories.
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  bool ok() const { return ok_; }
  size_t size() const { return members_.size(); }
  // "http://127.0.0.1:PORT" (https:// with TLS) of member i, and of all in order.
  std::string clientUrl(size_t member = 0) const;
  std::vector<std::string> clientUrls() const;
  uint16_t clientPort(size_t member = 0) const;
  // Every member's log, each under a "== member i ==" line.
  std::string output() const;

  // SIGKILL, and waits for it to exit (its ports refuse connections from then on).
  void kill(size_t member);
  // Starts a killed member again on the same ports and data directory and waits for it to
  // answer /health (true within `timeout`).
  bool restart(size_t member, Millis timeout = 10s);
  bool running(size_t member) const;
  // True once member i answers /health with "health":"true" (has a leader), within timeout.
  bool waitHealthy(size_t member, Millis timeout = 10s) const;
  // The member that leads now, as the running members report it (etcdctl endpoint status);
  // nullopt when none does (an election under way, a quorum lost).
  std::optional<size_t> leader();

  // --- The store, through etcdctl against the running members ---------------------------
  // Puts the value (any bytes but NUL); the header revision of the put, or 0 on failure.
  int64_t put(const std::string& key, const std::string& value);
  // Puts every pair in one transaction (one revision): its revision, or 0. Keys and values
  // without spaces or quotes (etcdctl txn reads them from lines).
  int64_t putInOneTxn(const std::vector<std::pair<std::string, std::string>>& kvs);
  // Puts each value in turn at `key`, one revision each, as fast as etcd takes them: over
  // one kept-alive connection to the first running member's JSON gateway (an etcdctl
  // process per write would cost ~10 ms each). The last put's revision, or 0 if any failed.
  int64_t putSequence(const std::string& key, const std::vector<std::string>& values);
  // Compacts up to `revision` (physical) the same way, through the gateway, for a test that
  // must compact inside a moment (etcdctl's process start can outlast it on a loaded
  // machine); false on failure.
  bool compactQuickly(int64_t revision);
  // Deletes the key; the header revision, or 0.
  int64_t del(const std::string& key);
  // The value, or nullopt when absent or on failure.
  std::optional<std::string> get(const std::string& key);
  // The store's current revision (header revision of a read), or 0.
  int64_t revision();
  // Compacts up to `revision` (physical); false on failure.
  bool compact(int64_t revision);

  // --- Authentication, through etcdctl ---------------------------------------------------
  // Adds user root with `root_password` and runs `etcdctl auth enable`; from then on every
  // helper above runs as root. False (output() and lastError() say why) on failure.
  bool enableAuth(const std::string& root_password);
  // A user whose own role may read `key` and nothing else. Needs enableAuth() first.
  bool addReader(const std::string& user, const std::string& password, const std::string& key);
  // The last etcdctl failure's output, for a test's message.
  const std::string& lastError() const { return last_error_; }

 private:
  struct Member;
  void startMember(size_t i);
  std::string endpointsArg() const;   // every running member, for etcdctl --endpoints
  CommandResult etcdctl(std::vector<std::string> args, std::string_view stdin_data = {});
  // etcdctl's flags for TLS and the root user (none without them).
  std::vector<std::string> etcdctlSecurity() const;
  std::string clientScheme() const { return tls_.enabled() ? "https" : "http"; }

  std::vector<std::unique_ptr<Member>> members_;
  std::string root_;              // the data directories' parent, removed at the end
  std::string initial_cluster_;
  std::string token_;
  EtcdTls tls_;
  std::string root_password_;   // set once enableAuth() ran
  std::string last_error_;
  bool ok_ = false;
};

// One member: the single-node etcd most tests need.
class EtcdProcess : public EtcdCluster {
 public:
  explicit EtcdProcess(Millis timeout = 10s, EtcdTls tls = {})
      : EtcdCluster(1, timeout, std::move(tls)) {}
  void kill() { EtcdCluster::kill(0); }
  bool restart(Millis timeout = 10s) { return EtcdCluster::restart(0, timeout); }
  using EtcdCluster::kill;
  using EtcdCluster::restart;
};

}  // namespace lb::test
