// etcd members as child processes (tests/support/process.h), their store reached through
// etcdctl's JSON output (-w json: encoding/json of the gRPC replies, so int64 are numbers and
// keys and values base64).
#include "tests/support/etcd_process.h"

#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "lb/core/base64.h"
#include "tests/support/http_client.h"

namespace lb::test {

namespace {

constexpr const char* kEtcd = "/usr/bin/etcd";
constexpr const char* kEtcdctl = "/usr/bin/etcdctl";

std::string loopbackUrl(uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

// header.revision of etcdctl's JSON, 0 when it is not there.
int64_t headerRevision(const std::string& out) {
  try {
    auto j = nlohmann::json::parse(out);
    return j.at("header").at("revision").get<int64_t>();
  } catch (...) {
    return 0;
  }
}

}  // namespace

struct EtcdCluster::Member {
  std::string name;
  uint16_t client_port = 0;
  uint16_t peer_port = 0;
  std::string data_dir;
  std::unique_ptr<Process> process;
};

EtcdCluster::EtcdCluster(size_t members, Millis timeout, EtcdTls tls) : tls_(std::move(tls)) {
  char tmpl[] = "/tmp/lb-etcd-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return;
  root_ = tmpl;
  token_ = "lb-test-" + root_.substr(root_.rfind('-') + 1);
  // freePort() is racy: another process may take a port before etcd binds it. A member that
  // exits at once is started again, on other ports, with the whole cluster.
  for (int round = 0; round < 3 && !ok_; ++round) {
    members_.clear();
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    initial_cluster_.clear();
    for (size_t i = 0; i < members; ++i) {
      auto m = std::make_unique<Member>();
      m->name = "m" + std::to_string(i);
      m->client_port = freePort();
      m->peer_port = freePort();
      m->data_dir = root_ + "/" + m->name;
      initial_cluster_ += (i ? "," : "") + m->name + "=" + loopbackUrl(m->peer_port);
      members_.push_back(std::move(m));
    }
    for (size_t i = 0; i < members; ++i) startMember(i);
    ok_ = true;
    for (size_t i = 0; i < members && ok_; ++i) ok_ = waitHealthy(i, timeout);
  }
}

EtcdCluster::~EtcdCluster() {
  members_.clear();   // each Process's destructor SIGKILLs and reaps
  if (!root_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
}

void EtcdCluster::startMember(size_t i) {
  Member& m = *members_[i];
  // Loopback round trips are microseconds: a 25 ms heartbeat and a 250 ms election timeout
  // (etcd wants at least 5 heartbeats per election timeout) elect a new leader well within
  // a second of a kill. --snapshot-count keeps the WAL replay at a restart short.
  const std::string client_url = clientUrl(i);
  std::vector<std::string> argv{
      kEtcd, "--name", m.name, "--data-dir", m.data_dir,
      "--listen-client-urls", client_url,
      "--advertise-client-urls", client_url,
      "--listen-peer-urls", loopbackUrl(m.peer_port),
      "--initial-advertise-peer-urls", loopbackUrl(m.peer_port),
      "--initial-cluster", initial_cluster_, "--initial-cluster-state", "new",
      "--initial-cluster-token", token_,
      "--heartbeat-interval", "25", "--election-timeout", "250",
      "--snapshot-count", "1000", "--logger", "zap", "--log-level", "error"};
  if (tls_.enabled()) {
    for (const std::string& a : {"--cert-file=" + tls_.cert, "--key-file=" + tls_.key,
                                 "--trusted-ca-file=" + tls_.ca})
      argv.push_back(a);
    if (tls_.client_cert_auth) argv.push_back("--client-cert-auth");
  }
  m.process = std::make_unique<Process>(std::move(argv));
}

std::string EtcdCluster::clientUrl(size_t member) const {
  return clientScheme() + "://127.0.0.1:" + std::to_string(members_.at(member)->client_port);
}

std::vector<std::string> EtcdCluster::clientUrls() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < members_.size(); ++i) out.push_back(clientUrl(i));
  return out;
}

uint16_t EtcdCluster::clientPort(size_t member) const { return members_.at(member)->client_port; }

std::string EtcdCluster::output() const {
  std::string out;
  for (size_t i = 0; i < members_.size(); ++i) {
    out += "== member " + std::to_string(i) + " ==\n";
    if (members_[i]->process) out += members_[i]->process->output();
  }
  return out;
}

bool EtcdCluster::running(size_t member) const {
  const auto& p = members_.at(member)->process;
  return p != nullptr && p->running();
}

void EtcdCluster::kill(size_t member) {
  auto& p = members_.at(member)->process;
  if (p != nullptr) p->stop(SIGKILL, 10s);
}

bool EtcdCluster::restart(size_t member, Millis timeout) {
  kill(member);
  // Its data directory holds the WAL: etcd rejoins from it and ignores --initial-cluster.
  startMember(member);
  return waitHealthy(member, timeout);
}

bool EtcdCluster::waitHealthy(size_t member, Millis timeout) const {
  const uint16_t port = members_.at(member)->client_port;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (!running(member)) return false;
    if (tls_.enabled()) {
      // The test's HTTP client speaks no TLS: etcdctl asks, with the test's certificates.
      std::vector<std::string> argv = {"env", "ETCDCTL_API=3", kEtcdctl,
                                       "--endpoints=" + clientUrl(member), "--dial-timeout=1s",
                                       "--command-timeout=2s"};
      for (const auto& a : etcdctlSecurity()) argv.push_back(a);
      argv.insert(argv.end(), {"endpoint", "health"});
      auto r = runCommand(argv, 5s);
      if (r.exit_code == 0 && (r.out + r.err).find("is healthy") != std::string::npos)
        return true;
    } else {
      auto r = httpExchange(
          port, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 1s);
      // etcd 3.4 answers {"health":"true"} once the member has a leader and can serve.
      if (r.ok && r.status == 200 && r.body.find("\"health\":\"true\"") != std::string::npos)
        return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

std::string EtcdCluster::endpointsArg() const {
  std::string out;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!running(i)) continue;
    out += (out.empty() ? "" : ",") + clientUrl(i);
  }
  return out;
}

std::vector<std::string> EtcdCluster::etcdctlSecurity() const {
  std::vector<std::string> out;
  if (tls_.enabled()) {
    out.push_back("--cacert=" + tls_.ca);
    if (!tls_.client_cert.empty()) {
      out.push_back("--cert=" + tls_.client_cert);
      out.push_back("--key=" + tls_.client_key);
    }
  }
  if (!root_password_.empty()) out.push_back("--user=root:" + root_password_);
  return out;
}

CommandResult EtcdCluster::etcdctl(std::vector<std::string> args, std::string_view stdin_data) {
  std::vector<std::string> argv = {"env", "ETCDCTL_API=3", kEtcdctl, "--endpoints=" + endpointsArg(),
                                   "--dial-timeout=2s", "--command-timeout=5s"};
  for (const auto& a : etcdctlSecurity()) argv.push_back(a);
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r = runCommand(argv, 10s, stdin_data);
  if (r.exit_code != 0) last_error_ = "etcdctl " + (args.empty() ? "" : args[0]) + ": " + r.out + r.err;
  return r;
}

bool EtcdCluster::enableAuth(const std::string& root_password) {
  // etcdctl reads the new user's password from the argument after a ':' (--interactive=false).
  if (etcdctl({"user", "add", "root:" + root_password, "--interactive=false"}).exit_code != 0)
    return false;
  // etcd enables authentication only for a root user that holds the (built-in) root role.
  if (etcdctl({"user", "grant-role", "root", "root"}).exit_code != 0) return false;
  if (etcdctl({"auth", "enable"}).exit_code != 0) return false;
  root_password_ = root_password;
  return true;
}

bool EtcdCluster::addReader(const std::string& user, const std::string& password,
                            const std::string& key) {
  const std::string role = user + "-role";
  return etcdctl({"role", "add", role}).exit_code == 0 &&
         etcdctl({"role", "grant-permission", role, "read", key}).exit_code == 0 &&
         etcdctl({"user", "add", user + ":" + password, "--interactive=false"}).exit_code == 0 &&
         etcdctl({"user", "grant-role", user, role}).exit_code == 0;
}

int64_t EtcdCluster::put(const std::string& key, const std::string& value) {
  auto r = etcdctl({"put", "-w", "json", "--", key, value});
  return r.exit_code == 0 ? headerRevision(r.out) : 0;
}

int64_t EtcdCluster::putInOneTxn(const std::vector<std::pair<std::string, std::string>>& kvs) {
  // etcdctl txn reads three sections from stdin, each ended by an empty line: compares,
  // operations on success, on failure. No compare: the success operations run.
  std::string script = "\n";
  for (const auto& [k, v] : kvs) script += "put " + k + " " + v + "\n";
  script += "\n\n";
  auto r = etcdctl({"txn", "-w", "json"}, script);
  return r.exit_code == 0 ? headerRevision(r.out) : 0;
}

int64_t EtcdCluster::putSequence(const std::string& key, const std::vector<std::string>& values) {
  size_t member = 0;
  while (member < members_.size() && !running(member)) ++member;
  if (member == members_.size()) return 0;
  TcpClient c;
  if (!c.connect(members_[member]->client_port)) return 0;
  int64_t revision = 0;
  const std::string k = base64Encode(key);
  for (const auto& v : values) {
    const std::string body = nlohmann::json{{"key", k}, {"value", base64Encode(v)}}.dump();
    const std::string request = "POST /v3/kv/put HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                "Content-Type: application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    if (!c.send(request)) return 0;
    auto r = readHttpResponse(c);
    if (!r.ok || r.status != 200) return 0;
    try {
      // The gateway writes int64 as strings.
      revision = std::stoll(nlohmann::json::parse(r.body).at("header").at("revision").get<std::string>());
    } catch (...) {
      return 0;
    }
  }
  return revision;
}

int64_t EtcdCluster::del(const std::string& key) {
  auto r = etcdctl({"del", "-w", "json", "--", key});
  return r.exit_code == 0 ? headerRevision(r.out) : 0;
}

std::optional<std::string> EtcdCluster::get(const std::string& key) {
  auto r = etcdctl({"get", "-w", "json", "--", key});
  if (r.exit_code != 0) return std::nullopt;
  try {
    auto j = nlohmann::json::parse(r.out);
    auto kvs = j.find("kvs");
    if (kvs == j.end() || kvs->empty()) return std::nullopt;
    std::string value;
    if (!(*kvs)[0].contains("value")) return std::string();
    if (!base64Decode((*kvs)[0].at("value").get<std::string>(), &value)) return std::nullopt;
    return value;
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<size_t> EtcdCluster::leader() {
  auto r = etcdctl({"endpoint", "status", "-w", "json"});
  if (r.exit_code != 0) return std::nullopt;
  try {
    // [{"Endpoint": URL, "Status": {"header": {"member_id": N, ...}, "leader": N, ...}}, ...]
    for (const auto& e : nlohmann::json::parse(r.out)) {
      const auto& st = e.at("Status");
      if (st.at("header").at("member_id").get<uint64_t>() != st.at("leader").get<uint64_t>())
        continue;
      const std::string url = e.at("Endpoint").get<std::string>();
      for (size_t i = 0; i < members_.size(); ++i)
        if (clientUrl(i) == url) return i;
    }
  } catch (...) {
  }
  return std::nullopt;
}

int64_t EtcdCluster::revision() {
  auto r = etcdctl({"get", "-w", "json", "/lb-test/revision-probe"});
  return r.exit_code == 0 ? headerRevision(r.out) : 0;
}

bool EtcdCluster::compactQuickly(int64_t revision) {
  size_t member = 0;
  while (member < members_.size() && !running(member)) ++member;
  if (member == members_.size()) return false;
  TcpClient c;
  if (!c.connect(members_[member]->client_port)) return false;
  const std::string body =
      nlohmann::json{{"revision", std::to_string(revision)}, {"physical", true}}.dump();
  const std::string request = "POST /v3/kv/compaction HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Content-Type: application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  if (!c.send(request)) return false;
  auto r = readHttpResponse(c);
  return r.ok && r.status == 200;
}

bool EtcdCluster::compact(int64_t revision) {
  auto r = etcdctl({"compact", "--physical", std::to_string(revision)});
  return r.exit_code == 0;
}

}  // namespace lb::test
