#include "lb/cli/membership/membership_cli.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <toml++/toml.h>

#include "lb/cli/analyze/analyze_format.h"
#include "lb/cli/analyze/report.h"
#include "lb/cli/membership/etcd_session.h"
#include "lb/config/backends.h"
#include "lb/config/config.h"
#include "lb/core/duration.h"
#include "lb/core/strings.h"
#include "lb/membership/document.h"
#include "lb/membership/etcd_client.h"
#include "lb/membership/membership_tls.h"
#include "lb/routing/cluster_table.h"

namespace lb {

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
// As `lb analyze` samples: enough for figures to two decimals of a percent, under a second.
constexpr uint64_t kSampleKeys = 100000;

int usage(const std::string& error) {
  fprintf(stderr, "lb membership: %s\n%s", error.c_str(), membershipUsage());
  return kExitUsage;
}

int failure(const std::string& message) {
  fprintf(stderr, "lb membership: %s\n", message.c_str());
  return kExitFailure;
}

int printErrors(const Errors& errors, const std::string& file) {
  for (const auto& e : errors) fprintf(stderr, "%s\n", e.format().c_str());
  fprintf(stderr, "%s: %zu error%s; nothing written\n", file.c_str(), errors.size(),
          errors.size() == 1 ? "" : "s");
  return kExitFailure;
}

// The cluster settings a document is judged under.
std::optional<ClusterConfig> settingsOf(const MembershipOptions& o, int* exit_code) {
  ClusterConfig c;
  c.name = o.cluster.empty() ? "default" : o.cluster;
  if (o.config.empty()) return c;
  auto config = loadConfigFile(o.config);
  if (!config.ok()) {
    *exit_code = printErrors(config.errors(), o.config);
    return std::nullopt;
  }
  const ClusterConfig* found = nullptr;
  if (!o.cluster.empty()) found = config->findCluster(o.cluster);
  else if (config->clusters.size() == 1) found = &config->clusters.front();
  if (found == nullptr) {
    std::string known;
    for (const auto& k : config->clusters) known += (known.empty() ? "" : ", ") + k.name;
    *exit_code = usage(o.config + ": " +
                       (o.cluster.empty() ? std::string("name the cluster with --cluster")
                                          : "no cluster '" + o.cluster + "'") +
                       " (clusters: " + (known.empty() ? "none" : known) + ")");
    return std::nullopt;
  }
  return *found;
}

// FILE's backends, validated under `settings` exactly as lb validates a membership document:
// JSON goes through parseMembershipDocument; TOML through the loader's own backend reader
// (a bare `backends = [...]`) or the whole loader (an lb config, whose cluster then also
// gives the settings unless --config did).
std::optional<std::vector<BackendConfig>> readFile(const MembershipOptions& o,
                                                   ClusterConfig& settings, int* exit_code) {
  Result<std::string> text = readConfigFile(o.file);
  if (!text.ok()) {
    *exit_code = printErrors(text.errors(), o.file);
    return std::nullopt;
  }
  const std::string& t = text.value();
  const size_t bom = t.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  const size_t first = t.find_first_not_of(" \t\r\n", bom);
  // A TOML file cannot start with '{'; a membership document must.
  if (first != std::string::npos && t[first] == '{') {
    auto doc = parseMembershipDocument(t, o.file, settings);
    if (!doc.ok()) {
      *exit_code = printErrors(doc.errors(), o.file);
      return std::nullopt;
    }
    return doc->backends;
  }
  // A file that does not parse is not a whole config: loadBackendListToml reports why.
  WalkContext probe;
  probe.file = o.file;
  const std::optional<toml::table> root = parseTomlText(t, probe);
  const bool whole_config = root && root->contains("clusters");
  if (!whole_config) {
    auto list = loadBackendListToml(t, o.file, settings);
    if (!list.ok()) {
      *exit_code = printErrors(list.errors(), o.file);
      return std::nullopt;
    }
    return list.value();
  }
  MembershipOptions as_config = o;
  as_config.config = o.file;
  auto found = settingsOf(as_config, exit_code);
  if (!found) return std::nullopt;
  if (o.config.empty()) {
    settings = *found;   // the loader has judged its backends under its own settings
    return found->backends;
  }
  // --config names another file's settings: judge the list again under those. The positions
  // are then those of the list's canonical JSON, which the label says.
  const std::string label = o.file + " (cluster " + found->name + "'s backends as JSON)";
  auto doc = parseMembershipDocument(membershipJson(found->backends), label, settings);
  if (!doc.ok()) {
    *exit_code = printErrors(doc.errors(), o.file);
    return std::nullopt;
  }
  return found->backends;
}

bool sameBackend(const BackendConfig& a, const BackendConfig& b) {
  return a.name == b.name && a.address == b.address && a.weight == b.weight &&
         a.hash_key == b.hash_key && a.zone == b.zone;
}

bool sameList(const std::vector<BackendConfig>& a, const std::vector<BackendConfig>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!sameBackend(a[i], b[i])) return false;
  return true;
}

const BackendConfig* byName(const std::vector<BackendConfig>& list, const std::string& name) {
  for (const auto& b : list)
    if (b.name == name) return &b;
  return nullptr;
}

std::string percent(double fraction) { return fixedDecimal(100 * fraction, 2) + "%"; }

// The lines of a diff: "+ name address", "- name address", "~ name what changed", then the
// movement figures of lb analyze for the whole change.
std::string describeChange(const std::vector<BackendConfig>& current,
                           const std::vector<BackendConfig>& next,
                           const ClusterConfig& settings) {
  std::string out;
  size_t added = 0, removed = 0, changed = 0;
  for (const auto& b : next) {
    const BackendConfig* was = byName(current, b.name);
    if (was == nullptr) {
      out += "  + " + b.name + "  " + b.address +
             (b.weight != 1 ? "  weight " + std::to_string(b.weight) : "") +
             (b.hash_key.empty() ? "" : "  hash_key " + b.hash_key) +
             (b.zone.empty() ? "" : "  zone " + b.zone) + "\n";
      ++added;
      continue;
    }
    std::string what;
    auto note = [&what](const std::string& field, const std::string& from, const std::string& to) {
      if (from != to) what += (what.empty() ? "" : ", ") + field + " " + from + " -> " + to;
    };
    note("address", was->address, b.address);
    note("weight", std::to_string(was->weight), std::to_string(b.weight));
    note("hash_key", was->hash_key.empty() ? "(name)" : was->hash_key,
         b.hash_key.empty() ? "(name)" : b.hash_key);
    note("zone", was->zone.empty() ? "(none)" : was->zone, b.zone.empty() ? "(none)" : b.zone);
    if (!what.empty()) {
      out += "  ~ " + b.name + "  " + what + "\n";
      ++changed;
    }
  }
  for (const auto& b : current)
    if (byName(next, b.name) == nullptr) {
      out += "  - " + b.name + "  " + b.address + "\n";
      ++removed;
    }
  out += "backends: " + std::to_string(current.size()) + " -> " + std::to_string(next.size()) +
         " (" + std::to_string(added) + " added, " + std::to_string(removed) + " removed, " +
         std::to_string(changed) + " changed)\n";
  if (current.empty()) return out;

  const SelectorInfo* info = selectorOf(settings);
  if (info == nullptr) return out + "moved: unknown (selector '" + settings.selector + "')\n";
  const SelectorOptions options = selectorOptionsOf(settings);
  auto hosts = [](const std::vector<BackendConfig>& list) {
    std::vector<ChangeHost> h;
    for (const auto& b : list)
      h.push_back({b.name, {b.hash_key.empty() ? b.name : b.hash_key, b.weight}});
    return h;
  };
  std::string error;
  const auto f = analyzeChange(
      settings.selector,
      [&](std::span<const HostSpec> specs) { return info->build(specs, options); },
      hosts(current), hosts(next), sampleKeyHashes(info->key_hash, kSampleKeys), error);
  if (!f) return out + "moved: unknown (" + error + ")\n";
  out += "moved: " + percent(f->moved) + " of keys (ideal " + percent(f->ideal) +
         "), collateral " + percent(f->collateral) + "  [" + settings.selector + ", " +
         std::to_string(kSampleKeys) + " sample keys]\n";
  return out;
}

std::optional<std::vector<EtcdEndpoint>> endpointsOf(const MembershipOptions& o,
                                                     std::string& error) {
  std::vector<EtcdEndpoint> out;
  for (const auto& url : o.etcd) {
    EtcdEndpoint ep;
    if (!parseEtcdUrl(url, &ep, &error)) return std::nullopt;
    out.push_back(ep);
  }
  return out;
}

// What etcd holds at the key now: its backends (empty when absent or invalid), mod_revision.
struct Current {
  bool present = false;
  int64_t mod_revision = 0;
  int64_t store_revision = 0;
  std::string value;
  std::vector<BackendConfig> backends;
  bool valid = true;
};

std::optional<Current> readCurrent(EtcdSession& etcd, const MembershipOptions& o,
                                   const ClusterConfig& settings) {
  EtcdRangeReply reply;
  EtcdError error;
  if (!etcd.range(o.key, &reply, &error)) {
    failure("cannot read " + o.key + " from " + error.endpoint + ": " + error.message);
    return std::nullopt;
  }
  Current c;
  c.store_revision = reply.revision;
  if (!reply.kv) return c;
  c.present = true;
  c.mod_revision = reply.kv->mod_revision;
  c.value = reply.kv->value;
  auto doc = parseMembershipDocument(c.value, "etcd:" + o.key + "@" +
                                                  std::to_string(c.mod_revision), settings);
  if (doc.ok()) {
    c.backends = doc->backends;
  } else {
    // What lb would reject is no baseline for a diff: every backend of the file is new.
    c.valid = false;
    fprintf(stderr, "warning: the value etcd holds does not validate (lb keeps serving the "
                    "membership before it):\n");
    for (const auto& e : doc.errors()) fprintf(stderr, "  %s\n", e.format().c_str());
  }
  return c;
}

std::string header(const MembershipOptions& o, const Current& c, size_t next_count) {
  std::string from = c.present ? o.key + " at mod_revision " + std::to_string(c.mod_revision) +
                                     " (" + std::to_string(c.backends.size()) + " backends)"
                               : o.key + " (not set)";
  return from + " -> " + o.file + " (" + std::to_string(next_count) + " backends)\n";
}

int get(const MembershipOptions& o, EtcdSession& etcd) {
  EtcdRangeReply reply;
  EtcdError error;
  if (!etcd.range(o.key, &reply, &error))
    return failure("cannot read " + o.key + " from " + error.endpoint + ": " + error.message);
  if (!reply.kv)
    return failure(o.key + " is not set (etcd revision " + std::to_string(reply.revision) + ")");
  const EtcdKv& kv = *reply.kv;
  if (o.json) {
    printf("{\"key\": %s, \"mod_revision\": %lld, \"create_revision\": %lld, \"version\": %lld, "
           "\"revision\": %lld, \"value\": %s}\n",
           jsonString(kv.key).c_str(), static_cast<long long>(kv.mod_revision),
           static_cast<long long>(kv.create_revision), static_cast<long long>(kv.version),
           static_cast<long long>(reply.revision), jsonString(kv.value).c_str());
    return kExitOk;
  }
  // stdout is the value byte for byte, so `get > f.json; edit; put f.json` works; the
  // revisions go to stderr.
  fprintf(stderr, "%s: mod_revision %lld, version %lld (etcd revision %lld)\n", o.key.c_str(),
          static_cast<long long>(kv.mod_revision), static_cast<long long>(kv.version),
          static_cast<long long>(reply.revision));
  fwrite(kv.value.data(), 1, kv.value.size(), stdout);
  return kExitOk;
}

int diffOrPut(const MembershipOptions& o, ClusterConfig settings_in, EtcdSession& etcd) {
  int code = kExitFailure;
  std::optional<ClusterConfig> settings = std::move(settings_in);
  auto next = readFile(o, *settings, &code);
  if (!next) return code;
  // As the instances judge it: their cluster's limit, unless the command line gave one.
  const uint32_t max_remove = !o.max_remove_percent_given && settings->membership
                                  ? settings->membership->max_remove_percent
                                  : o.max_remove_percent;
  auto current = readCurrent(etcd, o, *settings);
  if (!current) return kExitFailure;

  const bool put = o.command == MembershipOptions::Command::kPut;
  fputs(header(o, *current, next->size()).c_str(), stdout);
  if (current->valid && current->present && sameList(current->backends, *next)) {
    puts(put ? "no change: etcd holds this membership already; nothing written"
             : "no change");
    return kExitOk;
  }
  fputs(describeChange(current->backends, *next, *settings).c_str(), stdout);
  const std::string refusal = checkRemoval(current->backends, *next, max_remove);
  if (!put) {
    if (!refusal.empty())
      printf("put would refuse this: %s (--force writes it, and lb rejects it)\n",
             refusal.c_str());
    return kExitOk;
  }
  if (!refusal.empty() && !o.force)
    return failure("refusing: " + refusal + "; lb would reject it too. Remove fewer backends "
                   "per put, or raise the cluster's max_remove_percent (--force writes it "
                   "anyway); nothing written");
  if (!refusal.empty())
    fprintf(stderr, "warning: --force: %s; lb instances whose max_remove_percent is %u reject "
                    "it\n", refusal.c_str(), max_remove);

  if (const char* hook = getenv(kMembershipAfterReadHook); hook != nullptr && *hook != '\0')
    if (system(hook) != 0) fprintf(stderr, "warning: %s failed\n", kMembershipAfterReadHook);

  const int64_t expected = current->present ? current->mod_revision : 0;
  EtcdTxnReply reply;
  EtcdError error;
  // Stamped with now: every instance starts its handover window at this moment, so that a
  // fleet ramps each moved key over together (docs/config.md, "handover").
  if (!etcd.putIf(o.key, membershipJson(*next, wallClockMs()), expected, &reply, &error)) {
    if (error.kind == EtcdFailure::kTimeout)
      return failure("the write to " + o.key + " timed out: it may or may not have applied; "
                     "`lb membership get` shows which");
    return failure("cannot write " + o.key + " to " + error.endpoint + ": " + error.message);
  }
  if (!reply.succeeded) {
    const std::string was = current->present
                                ? "read at mod_revision " + std::to_string(expected)
                                : "read as not set (etcd revision " +
                                      std::to_string(current->store_revision) + ")";
    const std::string now = reply.current
                                ? "it is now at mod_revision " +
                                      std::to_string(reply.current->mod_revision)
                                : "it is now deleted";
    return failure("conflict: " + o.key + " was written by someone else since it was " + was +
                   "; " + now + ". Nothing was written: run `lb membership put` again to see "
                   "the change against the new value");
  }
  printf("wrote %s at mod_revision %lld (%s)\n", o.key.c_str(),
         static_cast<long long>(reply.revision),
         current->present ? ("was " + std::to_string(expected)).c_str() : "created");
  return kExitOk;
}

// The TLS context and user for etcd: the flags', or else the --config cluster's membership
// table's (its file errors at their positions). False when a file does not load.
bool credentialsOf(const MembershipOptions& o, const ClusterConfig& settings,
                   EtcdCredentials* out, int* exit_code) {
  bool https = false;
  for (const auto& url : o.etcd) https = https || url.rfind("https://", 0) == 0;
  const MembershipConfig* m = settings.membership ? &*settings.membership : nullptr;
  out->user = o.user_given ? o.user : m ? m->user : "";
  out->password = o.user_given ? o.password : m ? m->password : "";
  if (!https) return true;
  if (o.cacert.empty() && o.cert.empty() && m != nullptr && m->tls.enabled) {
    ClusterConfig c = settings;
    c.membership->etcd = o.etcd;
    Errors errors;
    out->tls = buildMembershipTls(c, o.config, &errors);
    if (!errors.empty()) *exit_code = printErrors(errors, o.config);
    return errors.empty();
  }
  TlsClientOptions options;
  options.ca = o.cacert;
  options.cert = o.cert;
  options.key = o.cert_key;
  options.label = "etcd";
  options.log_failures = false;   // the failed request says why, once
  std::vector<TlsClientBuildError> failures;
  out->tls = TlsClientContext::build(options, 0, &failures);
  for (const auto& f : failures) {
    const std::string flag = f.field == "ca" ? "--cacert" : f.field == "key" ? "--key-file"
                                                                             : "--cert";
    fprintf(stderr, "lb membership: %s: %s\n", flag.c_str(), f.message.c_str());
  }
  if (out->tls == nullptr) {
    if (failures.empty()) fprintf(stderr, "lb membership: cannot set up TLS\n");
    *exit_code = kExitFailure;
    return false;
  }
  return true;
}

bool parseUint(const std::string& s, uint64_t lo, uint64_t hi, uint64_t& out) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && out >= lo && out <= hi;
}

}  // namespace

const char* membershipUsage() {
  return "usage: lb membership get  --etcd URL[,URL...] --key KEY [--json]\n"
         "       lb membership diff --etcd URL[,URL...] --key KEY [--config FILE --cluster NAME]\n"
         "                          FILE\n"
         "       lb membership put  --etcd URL[,URL...] --key KEY [--config FILE --cluster NAME]\n"
         "                          [--max-remove-percent N] [--force] FILE\n"
         "  get   print the key's value as etcd holds it (stdout) and its mod_revision\n"
         "        (stderr); --json: one object with both on stdout\n"
         "  diff  what put would change: backends added, removed, changed, and the keys that\n"
         "        move (lb analyze's moved / ideal / collateral); writes nothing\n"
         "  put   validate FILE as lb will, show the diff, refuse a removal of more than\n"
         "        --max-remove-percent (50) of the backends unless --force, and write with a\n"
         "        compare-and-swap on the mod_revision read (another writer in between: a\n"
         "        conflict, nothing written)\n"
         "  FILE  a JSON document {\"backends\": [...]}, or TOML: `backends = [...]`, or an lb\n"
         "        config (--cluster NAME picks its cluster)\n"
         "  --config FILE --cluster NAME  the cluster settings (selector, vnodes, ...) that\n"
         "        validation and the figures use; default: ring_hash with its defaults.\n"
         "        A cluster with a membership table also gives --etcd, --key and\n"
         "        --max-remove-percent unless they are written\n"
         "  --timeout D  each etcd request (default 5s)\n"
         "  --cacert FILE  the CA that https:// members' certificates must lead to (default:\n"
         "        the system's store); the certificate must name the address connected to\n"
         "  --cert FILE --key-file FILE  a client certificate and its key (etcd's\n"
         "        --client-cert-auth); etcdctl's --key, named apart from --key KEY\n"
         "  --user USER:PASSWORD  etcd's authentication (a token for every request)\n"
         "  exit: 0 done, 1 invalid file / etcd error / refused / conflict, 2 usage\n";
}

std::optional<MembershipOptions> parseMembershipArgs(std::span<char* const> args,
                                                     std::string& error) {
  MembershipOptions o;
  if (args.empty()) {
    error = "missing command: get, put or diff";
    return std::nullopt;
  }
  const std::string command = args[0];
  if (command == "-h" || command == "--help") {
    o.help = true;
    return o;
  }
  if (command == "get") o.command = MembershipOptions::Command::kGet;
  else if (command == "put") o.command = MembershipOptions::Command::kPut;
  else if (command == "diff") o.command = MembershipOptions::Command::kDiff;
  else {
    error = "unknown command '" + command + "' (get, put or diff)";
    return std::nullopt;
  }
  const bool get = o.command == MembershipOptions::Command::kGet;
  const bool put = o.command == MembershipOptions::Command::kPut;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    const bool has_value = splitLongOption(&arg, &value);
    auto takeValue = [&] { return takeOptionValue(args, &i, has_value, arg, &value, &error); };
    auto only = [&](bool allowed) {
      if (!allowed) error = arg + ": not an option of `lb membership " + command + "`";
      return allowed;
    };
    if (arg == "-h" || arg == "--help") {
      o.help = true;
    } else if (arg == "--etcd") {
      if (!takeValue()) return std::nullopt;
      size_t start = 0;
      while (start <= value.size()) {
        const size_t comma = value.find(',', start);
        const std::string url = value.substr(start, comma - start);
        if (!url.empty()) o.etcd.push_back(url);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (arg == "--key") {
      if (!takeValue()) return std::nullopt;
      o.key = value;
    } else if (arg == "--cacert" || arg == "--cert" || arg == "--key-file") {
      if (!takeValue()) return std::nullopt;
      (arg == "--cacert" ? o.cacert : arg == "--cert" ? o.cert : o.cert_key) = value;
    } else if (arg == "--user") {
      if (!takeValue()) return std::nullopt;
      // etcdctl's form: the password after the first ':' (a user name holds none).
      const size_t colon = value.find(':');
      if (colon == 0 || colon == std::string::npos) {
        error = arg + ": write USER:PASSWORD";
        return std::nullopt;
      }
      o.user = value.substr(0, colon);
      o.password = value.substr(colon + 1);
      o.user_given = true;
    } else if (arg == "--config" || arg == "--cluster") {
      if (!takeValue()) return std::nullopt;
      (arg == "--config" ? o.config : o.cluster) = value;
    } else if (arg == "--max-remove-percent") {
      if (!only(put) || !takeValue()) return std::nullopt;
      uint64_t n = 0;
      if (!parseUint(value, 0, 100, n)) {
        error = arg + ": must be an integer in [0, 100], got '" + value + "'";
        return std::nullopt;
      }
      o.max_remove_percent = static_cast<uint32_t>(n);
      o.max_remove_percent_given = true;
    } else if (arg == "--force") {
      if (!only(put)) return std::nullopt;
      o.force = true;
    } else if (arg == "--json") {
      if (!only(get)) return std::nullopt;
      o.json = true;
    } else if (arg == "--timeout") {
      if (!takeValue()) return std::nullopt;
      std::string why;
      if (!parseDuration(value, &o.timeout, &why) || o.timeout.count() <= 0) {
        error = arg + ": " + (why.empty() ? "must be more than 0" : why);
        return std::nullopt;
      }
    } else if (arg.rfind("-", 0) == 0 && arg.size() > 1) {
      error = "unknown option '" + arg + "'";
      return std::nullopt;
    } else if (!get && o.file.empty()) {
      o.file = arg;
    } else {
      error = "unexpected argument '" + arg + "'";
      return std::nullopt;
    }
  }
  if (o.help) return o;
  if (o.cert.empty() != o.cert_key.empty()) {
    error = o.cert.empty() ? "--key-file needs --cert" : "--cert needs --key-file";
    return std::nullopt;
  }
  // With --config, the cluster's membership table may name both (runMembership).
  if (o.etcd.empty() && o.config.empty()) error = "--etcd URL is required";
  else if (o.key.empty() && o.config.empty()) error = "--key KEY is required";
  else if (!get && o.file.empty()) error = "FILE is required (the membership to " + command + ")";
  if (!error.empty()) return std::nullopt;
  return o;
}

int runMembership(int argc, char** argv) {
  std::string error;
  const auto o = parseMembershipArgs(std::span<char* const>(argv, static_cast<size_t>(argc)),
                                     error);
  if (!o) return usage(error);
  if (o->help) {
    fputs(membershipUsage(), stdout);
    return kExitOk;
  }
  MembershipOptions options = *o;
  int code = kExitFailure;
  auto settings = settingsOf(options, &code);
  if (!settings) return code;
  if (settings->membership) {
    if (options.etcd.empty()) options.etcd = settings->membership->etcd;
    if (options.key.empty()) options.key = settings->membership->key;
  }
  const std::string why_not = " (or --config with a cluster whose membership table names it)";
  if (options.etcd.empty()) return usage("--etcd URL is required" + why_not);
  if (options.key.empty()) return usage("--key KEY is required" + why_not);
  auto endpoints = endpointsOf(options, error);
  if (!endpoints) return usage(error);
  EtcdCredentials credentials;
  if (!credentialsOf(options, *settings, &credentials, &code)) return code;
  EtcdSession etcd(std::move(*endpoints), options.timeout, std::move(credentials));
  if (options.command == MembershipOptions::Command::kGet) return get(options, etcd);
  return diffOrPut(options, std::move(*settings), etcd);
}

}  // namespace lb
