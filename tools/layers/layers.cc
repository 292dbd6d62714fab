#include "tools/layers/layers.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace lb::layers {
namespace {

// What each layer stands on directly. mayInclude() closes this over transitivity: routing
// stands on config, config on plugins, so routing may include plugins too.
const std::map<std::string, std::vector<std::string>>& directDeps() {
  static const std::map<std::string, std::vector<std::string>> deps = {
      {"core", {}},
      {"plugins", {"core"}},
      {"net", {"core"}},
      {"tls", {"core", "net"}},
      {"http", {"core", "net"}},
      {"config", {"plugins"}},
      // Hot keys: the per-worker heavy-hitter summaries, their merge, the hot set workers
      // read and the near cache's shared stripes. Routing's cluster state holds them.
      {"hotkeys", {"core"}},
      {"routing", {"config", "hotkeys"}},
      {"health", {"routing", "http", "tls"}},
      {"runtime", {"routing", "health", "tls"}},
      {"proxy", {"runtime", "http"}},
      {"admin", {"routing", "config", "http"}},
      // Fleet membership from etcd: the gateway client speaks HTTP over lb's sockets, the
      // document is validated as the config's backends are, and https:// members are spoken
      // to with lb's TLS transport and client context. app and `lb membership` use it.
      {"membership", {"config", "http", "tls"}},
      // Binary upgrades: the hand-over channel (sockets, the health view) and the running
      // lb's side of it. app runs it; `lb upgrade` reads its outcome.
      {"upgrade", {"health", "net"}},
      // The operator commands, one folder each (lb/cli/NAME): offline or against a running
      // lb's admin port, never inside the proxy.
      {"cli/analyze", {"routing", "config"}},
      // `lb simulate` runs the selectors as analyze sets them up (mod_n included).
      {"cli/simulate", {"cli/analyze"}},
      // `lb membership diff` prints moved keys as analyze reports them.
      {"cli/membership", {"cli/analyze", "membership"}},
      // `lb hotkeys` reads /hotkeys over HTTP.
      {"cli/hotkeys", {"http"}},
      // `lb upgrade` signals the running lb and reads the outcome its upgrade wrote.
      {"cli/upgrade", {"upgrade"}},
      {"tools/origin", {"core", "net", "http"}},
  };
  return deps;
}

// "proxy/http" -> "proxy": protocol folders share the proxy layer's rule, plus the one that
// they never include each other.
std::string ruleLayer(const std::string& layer) {
  return layer.rfind("proxy/", 0) == 0 ? "proxy" : layer;
}

void closure(const std::string& layer, std::set<std::string>* out) {
  auto it = directDeps().find(layer);
  if (it == directDeps().end()) return;
  for (const auto& d : it->second)
    if (out->insert(d).second) closure(d, out);
}

// Layers in bottom-up order, for messages that read the same every time.
const std::vector<std::string>& order() {
  static const std::vector<std::string> o = {"core",    "plugins", "net",     "tls",     "http",
                                             "config",  "hotkeys", "routing", "health",  "runtime",
                                             "proxy",   "admin",   "membership", "upgrade", "cli/analyze",
                                             "cli/simulate", "cli/membership", "cli/hotkeys",
                                             "cli/upgrade",
                                             "app",     "tools/origin"};
  return o;
}

}  // namespace

std::string layerOf(const std::string& path) {
  if (path.rfind("plugins/", 0) == 0) return "plugins";
  if (path.rfind("tools/origin/", 0) == 0) return "tools/origin";
  if (path.rfind("lb/", 0) != 0) return "";
  std::string rest = path.substr(3);
  size_t slash = rest.find('/');
  if (slash == std::string::npos) return "lb";   // a file directly under lb/: no layer
  std::string top = rest.substr(0, slash);
  if (top == "proxy" || top == "cli") {
    size_t next = rest.find('/', slash + 1);
    if (next == std::string::npos) return top;
    return top + "/" + rest.substr(slash + 1, next - slash - 1);
  }
  return top;
}

bool mayInclude(const std::string& from, const std::string& to) {
  if (from.empty() || to.empty()) return true;
  if (from == to) return true;
  if (from == "app") return to != "tools/origin";
  if (from == "lb" || to == "lb") return false;   // nothing lives directly under lb/
  // The cache engine (proxy/cache) is what redis and memcached plug into; no other folder
  // reaches it, and only app reaches a protocol.
  if (to == "proxy/cache") return from == "proxy/redis" || from == "proxy/memcached";
  if (to.rfind("proxy/", 0) == 0) return false;
  std::set<std::string> allowed;
  closure(ruleLayer(from), &allowed);
  return allowed.count(ruleLayer(to)) > 0;
}

std::string ruleFor(const std::string& from) {
  if (from == "lb") return "files belong in a layer folder under lb/, never directly in lb/";
  std::set<std::string> allowed;
  closure(ruleLayer(from), &allowed);
  std::string r = from + " may include ";
  bool first = true;
  for (const auto& l : order()) {
    if (!allowed.count(l)) continue;
    r += (first ? "" : ", ") + l;
    first = false;
  }
  if (first) r += "nothing of lb's";
  if (from == "proxy/redis" || from == "proxy/memcached") r += ", proxy/cache";
  if (ruleLayer(from) == "proxy")
    r += "; a protocol folder never includes another (redis and memcached stand on proxy/cache)";
  return r;
}

namespace {

struct Include {
  int line;
  std::string path;
};

// The .h and .cc files under the covered folders, relative to root, sorted.
std::vector<std::string> sourceFiles(const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const char* top : {"lb", "plugins", "tools"}) {
    fs::path dir = fs::path(root) / top;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      auto ext = e.path().extension();
      if (ext != ".h" && ext != ".cc") continue;
      files.push_back(fs::relative(e.path(), root).generic_string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Every `#include "..."` of one file (system headers in <> are not ours).
std::vector<Include> quotedIncludes(const std::string& path) {
  std::vector<Include> out;
  std::ifstream in(path);
  std::string text;
  int n = 0;
  while (std::getline(in, text)) {
    ++n;
    size_t p = text.find_first_not_of(" \t");
    if (p == std::string::npos || text.compare(p, 1, "#") != 0) continue;
    p = text.find_first_not_of(" \t", p + 1);
    if (p == std::string::npos || text.compare(p, 7, "include") != 0) continue;
    size_t q1 = text.find('"', p);
    if (q1 == std::string::npos) continue;
    size_t q2 = text.find('"', q1 + 1);
    if (q2 == std::string::npos) continue;
    out.push_back({n, text.substr(q1 + 1, q2 - q1 - 1)});
  }
  return out;
}

std::string unitOf(const std::string& path) { return path.substr(0, path.rfind('.')); }

}  // namespace

std::vector<Violation> checkTree(const std::string& root) {
  std::vector<Violation> out;
  for (const auto& f : sourceFiles(root)) {
    const std::string from = layerOf(f);
    if (from == "lb") out.push_back({f, 1, "", ruleFor("lb")});
    for (const auto& inc : quotedIncludes(root + "/" + f))
      if (!mayInclude(from, layerOf(inc.path))) out.push_back({f, inc.line, inc.path, ruleFor(from)});
  }
  return out;
}

std::vector<std::string> findCycles(const std::string& root) {
  std::map<std::string, std::set<std::string>> edges;   // unit -> units it includes
  for (const auto& f : sourceFiles(root)) {
    auto& e = edges[unitOf(f)];
    for (const auto& inc : quotedIncludes(root + "/" + f))
      if (unitOf(inc.path) != unitOf(f)) e.insert(unitOf(inc.path));
  }
  // Depth-first search; a back edge to a unit on the stack closes a cycle. Each cycle is
  // reported once, from the first unit (in path order) that reaches it.
  std::vector<std::string> cycles;
  std::map<std::string, int> state;   // 0 new, 1 on the stack, 2 done
  std::vector<std::string> stack;
  std::set<std::string> reported;
  auto visit = [&](auto&& self, const std::string& u) -> void {
    state[u] = 1;
    stack.push_back(u);
    for (const auto& v : edges[u]) {
      if (state[v] == 1) {
        auto it = std::find(stack.begin(), stack.end(), v);
        std::vector<std::string> members(it, stack.end());
        std::vector<std::string> key = members;
        std::sort(key.begin(), key.end());
        std::string k;
        for (const auto& m : key) k += m + ";";
        if (!reported.insert(k).second) continue;
        std::string text;
        for (const auto& m : members) text += m + " -> ";
        cycles.push_back(text + v);
      } else if (state[v] == 0 && edges.count(v)) {
        self(self, v);
      }
    }
    stack.pop_back();
    state[u] = 2;
  };
  for (const auto& [u, _] : edges)
    if (state[u] == 0) visit(visit, u);
  return cycles;
}

std::string describe(const Violation& v) {
  if (v.included.empty()) return v.file + ": " + v.rule;
  return v.file + ":" + std::to_string(v.line) + ": includes " + v.included + ": " + v.rule;
}

}  // namespace lb::layers
