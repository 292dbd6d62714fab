#include "lb/cli/simulate/simulate_options.h"

#include <charconv>
#include <cmath>
#include <string_view>

#include "lb/core/duration.h"
#include "lb/core/strings.h"

namespace lb {

namespace {

bool parseUnsigned(std::string_view s, uint64_t lo, uint64_t hi, uint64_t& out) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && out >= lo && out <= hi;
}

bool parseReal(std::string_view s, double lo, double hi, double& out) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(out) &&
         out >= lo && out <= hi;
}

bool parseSeconds(std::string_view s, double& out, std::string& error) {
  Duration d{};
  if (!parseDuration(s, &d, &error)) return false;
  out = static_cast<double>(d.count()) / 1000;
  return true;
}

// "K" or "K@T": a count and an optional time.
bool countAt(std::string_view s, SimEvent& e, std::string& error) {
  std::string_view count = s;
  if (const size_t at = s.find('@'); at != std::string_view::npos) {
    count = s.substr(0, at);
    if (!parseSeconds(s.substr(at + 1), e.at_s, error)) return false;
  }
  uint64_t n = 0;
  if (!parseUnsigned(count, 1, kSimulateMaxServers, n)) {
    error = "'" + std::string(count) + "' is not a server count in [1, 10000]";
    return false;
  }
  e.count = static_cast<uint32_t>(n);
  return true;
}

}  // namespace

const char* simulateUsage() {
  return "usage: lb simulate [--selector all|NAME[,NAME]] [--servers N] [--keys K]\n"
         "                   [--popularity zipf:A|uniform|trace:FILE] [--capacity ITEMS]\n"
         "                   [--rate R] [--writes F] [--hash-balance-factor PCT]\n"
         "                   [--handover WINDOW]\n"
         "                   [--event add:K[@T] | remove:K[@T] | fail:K[@T][,recover:D]\n"
         "                           | flap:K[@T][,period:D] | weight:I=W[@T] | rollout:P,D\n"
         "                           | fail-zone:Z[@T][,recover:D]]...\n"
         "                   [--zones Z] [--replicas R]\n"
         "                   [--duration 60s] [--step 1s] [--samples N] [--rise N] [--fall N]\n"
         "                   [--check-interval 2s] [--seed N] [--format text|json]\n"
         "                   [--plot FILE.svg]\n"
         "         hit ratio, backend reads and the busiest server's share over time, per\n"
         "         selector (mod_n always included as the baseline), through a scale or\n"
         "         health event on a fleet of LRU caches (docs/analyze.md, lb simulate).\n"
         "         --handover adds two runs per selector: +read-through (a miss at a key's\n"
         "         new owner read from its previous one and copied) and +ramp (each moved\n"
         "         key moves at its own moment in the window).\n"
         "         --zones puts server i in zone i % Z (fail-zone:Z loses the last Z zones);\n"
         "         --replicas R adds a run per selector with each key on R hosts.\n"
         "         Defaults: 4 servers, 100000 uniform keys, capacity 95% of keys/servers,\n"
         "         1000000 requests/s, event add:1 at 10s, 100000 sampled requests a step.\n";
}

std::optional<SimEvent> parseSimEvent(std::string_view text, std::string& error) {
  SimEvent e;
  const size_t colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  const std::string_view rest = colon == std::string_view::npos ? "" : text.substr(colon + 1);
  std::string why;
  auto bad = [&](const std::string& detail) {
    error = "--event: '" + std::string(text) + "': " + detail;
    return std::nullopt;
  };
  // Options after the first comma: "recover:D", "period:D".
  const size_t comma = rest.find(',');
  const std::string_view head = rest.substr(0, comma);
  const std::string_view tail = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
  if (kind == "add" || kind == "remove" || kind == "fail" || kind == "flap" ||
      kind == "fail-zone") {
    e.kind = kind == "add"         ? SimEvent::Kind::kAdd
             : kind == "remove"    ? SimEvent::Kind::kRemove
             : kind == "fail"      ? SimEvent::Kind::kFail
             : kind == "fail-zone" ? SimEvent::Kind::kFailZone
                                   : SimEvent::Kind::kFlap;
    if (!countAt(head, e, why)) return bad(why);
    if (!tail.empty()) {
      const std::string_view want = e.kind == SimEvent::Kind::kFail ||
                                            e.kind == SimEvent::Kind::kFailZone
                                        ? "recover:"
                                    : e.kind == SimEvent::Kind::kFlap ? "period:"
                                                                      : "";
      if (want.empty() || tail.substr(0, want.size()) != want)
        return bad("unexpected '" + std::string(tail) + "'");
      double& target = e.kind == SimEvent::Kind::kFlap ? e.period_s : e.recover_s;
      if (!parseSeconds(tail.substr(want.size()), target, why)) return bad(why);
      if (e.kind == SimEvent::Kind::kFlap && e.period_s <= 0) return bad("period must be > 0");
    }
    return e;
  }
  if (kind == "weight") {
    e.kind = SimEvent::Kind::kWeight;
    std::string_view spec = rest;
    if (const size_t at = spec.find('@'); at != std::string_view::npos) {
      if (!parseSeconds(spec.substr(at + 1), e.at_s, why)) return bad(why);
      spec = spec.substr(0, at);
    }
    const size_t eq = spec.find('=');
    uint64_t server = 0, weight = 0;
    if (eq == std::string_view::npos || !parseUnsigned(spec.substr(0, eq), 0, kSimulateMaxServers, server) ||
        !parseUnsigned(spec.substr(eq + 1), 1, 1000, weight))
      return bad("write weight:SERVER=WEIGHT, weight in [1, 1000]");
    e.server = static_cast<uint32_t>(server);
    e.weight = static_cast<uint32_t>(weight);
    return e;
  }
  if (kind == "rollout") {
    e.kind = SimEvent::Kind::kRollout;
    uint64_t p = 0;
    std::string_view over = tail;
    if (const size_t at = over.find('@'); at != std::string_view::npos) {
      if (!parseSeconds(over.substr(at + 1), e.at_s, why)) return bad(why);
      over = over.substr(0, at);
    }
    if (!parseUnsigned(head, 1, 10000, p)) return bad("write rollout:PROXIES,DURATION");
    if (!parseSeconds(over, e.over_s, why)) return bad(why);
    e.proxies = static_cast<uint32_t>(p);
    return e;
  }
  return bad("unknown event (add, remove, fail, fail-zone, flap, weight, rollout)");
}

std::optional<SimulateOptions> parseSimulateArgs(std::span<char* const> args, std::string& error) {
  SimulateOptions o;
  SimScenario& s = o.scenario;
  bool capacity_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    const bool has_value = splitLongOption(&arg, &value);
    if (arg == "-h" || arg == "--help") {
      o.help = true;
      return o;
    }
    static constexpr std::string_view kWithValue[] = {
        "--selector", "--servers", "--keys", "--popularity", "--capacity", "--rate",
        "--writes", "--hash-balance-factor", "--event", "--duration", "--step", "--samples",
        "--rise", "--fall", "--check-interval", "--seed", "--format", "--plot", "--vnodes",
        "--table-size", "--handover", "--zones", "--replicas"};
    bool known = false;
    for (auto k : kWithValue) known = known || arg == k;
    if (!known) {
      error = "unknown argument '" + std::string(args[i]) + "'";
      return std::nullopt;
    }
    if (!takeOptionValue(args, &i, has_value, arg, &value, &error)) return std::nullopt;
    uint64_t n = 0;
    double x = 0;
    auto range = [&](const char* what) {
      error = arg + ": " + what + ", got '" + value + "'";
      return std::nullopt;
    };
    if (arg == "--selector") {
      if (value.empty()) return range("a selector name, or all");
      o.selector = value;
    } else if (arg == "--servers") {
      if (!parseUnsigned(value, 1, kSimulateMaxServers, n)) return range("an integer in [1, 10000]");
      s.servers = static_cast<uint32_t>(n);
    } else if (arg == "--keys") {
      if (!parseUnsigned(value, 1, kSimulateMaxKeys, n)) return range("an integer in [1, 10000000]");
      s.keys = n;
    } else if (arg == "--popularity") {
      if (value == "uniform") {
        s.popularity.kind = SimPopularity::Kind::kUniform;
      } else if (value.rfind("zipf:", 0) == 0) {
        if (!parseReal(std::string_view(value).substr(5), 0, 10, x))
          return range("zipf:ALPHA with ALPHA in [0, 10]");
        s.popularity.kind = SimPopularity::Kind::kZipf;
        s.popularity.alpha = x;
      } else if (value.rfind("trace:", 0) == 0 && value.size() > 6) {
        s.popularity.kind = SimPopularity::Kind::kTrace;
        o.trace_file = value.substr(6);
      } else {
        return range("zipf:ALPHA, uniform or trace:FILE");
      }
    } else if (arg == "--capacity") {
      if (!parseUnsigned(value, 1, UINT32_MAX / 2, n)) return range("items per server, >= 1");
      s.capacity = static_cast<uint32_t>(n);
      capacity_given = true;
    } else if (arg == "--rate") {
      if (!parseReal(value, 1, 1e12, x)) return range("requests per second in [1, 1e12]");
      s.rate = x;
    } else if (arg == "--writes") {
      if (!parseReal(value, 0, 1, x)) return range("a fraction in [0, 1]");
      s.writes = x;
    } else if (arg == "--hash-balance-factor") {
      if (!parseUnsigned(value, 101, 100000, n)) return range("percent in [101, 100000]");
      o.balance_factor = static_cast<uint32_t>(n);
    } else if (arg == "--event") {
      auto e = parseSimEvent(value, error);
      if (!e) return std::nullopt;
      s.events.push_back(*e);
    } else if (arg == "--handover") {
      if (!parseSeconds(value, x, error)) {
        error = arg + ": " + error;
        return std::nullopt;
      }
      if (x <= 0) return range("a window > 0");
      s.handover_window_s = x;
    } else if (arg == "--duration" || arg == "--step" || arg == "--check-interval") {
      if (!parseSeconds(value, x, error)) {
        error = arg + ": " + error;
        return std::nullopt;
      }
      if (x <= 0) return range("a duration > 0");
      (arg == "--duration" ? s.duration_s : arg == "--step" ? s.step_s : s.check_interval_s) = x;
    } else if (arg == "--samples") {
      if (!parseUnsigned(value, 100, kSimulateMaxSamples, n)) return range("an integer in [100, 10000000]");
      s.samples_per_step = n;
    } else if (arg == "--rise" || arg == "--fall") {
      if (!parseUnsigned(value, 1, 100, n)) return range("an integer in [1, 100]");
      (arg == "--rise" ? s.rise : s.fall) = static_cast<uint32_t>(n);
    } else if (arg == "--seed") {
      if (!parseUnsigned(value, 0, UINT64_MAX, n)) return range("an unsigned integer");
      s.seed = n;
    } else if (arg == "--format") {
      if (value != "text" && value != "json") return range("text or json");
      o.format = value == "json" ? SimulateOptions::Format::kJson : SimulateOptions::Format::kText;
    } else if (arg == "--plot") {
      if (value.empty()) return range("a file name");
      o.plot_file = value;
    } else if (arg == "--zones") {
      if (!parseUnsigned(value, 2, 64, n)) return range("an integer in [2, 64]");
      s.zones = static_cast<uint32_t>(n);
    } else if (arg == "--replicas") {
      if (!parseUnsigned(value, 1, 8, n)) return range("an integer in [1, 8]");
      s.replicas = static_cast<uint32_t>(n);
    } else if (arg == "--vnodes") {
      if (!parseUnsigned(value, 1, 10000, n)) return range("an integer in [1, 10000]");
      o.selector_options.vnodes = static_cast<uint32_t>(n);
    } else if (arg == "--table-size") {
      if (!parseUnsigned(value, 2, 5000011, n)) return range("a prime in [2, 5000011]");
      o.selector_options.table_size = n;
    }
  }
  if (s.events.empty()) s.events.push_back(SimEvent{});
  for (const SimEvent& e : s.events)
    if (e.kind == SimEvent::Kind::kFailZone && (s.zones < 2 || e.count >= s.zones)) {
      error = "--event fail-zone:" + std::to_string(e.count) + ": needs --zones above " +
              std::to_string(e.count) + " (the zones that stay)";
      return std::nullopt;
    }
  if (s.zones > s.servers) {
    error = "--zones: " + std::to_string(s.zones) + " zones for " + std::to_string(s.servers) +
            " servers (at least one server a zone)";
    return std::nullopt;
  }
  if (s.replicas > s.servers) {
    error = "--replicas: " + std::to_string(s.replicas) + " copies on " +
            std::to_string(s.servers) + " servers";
    return std::nullopt;
  }
  if (s.step_s > s.duration_s) {
    error = "--step: longer than --duration";
    return std::nullopt;
  }
  o.capacity_given = capacity_given;
  // The default fleet holds 95% of the keys once per copy: a run with replicas gets the
  // memory its copies need, so that both runs start from the same steady state.
  s.capacity_per_copy = !capacity_given;
  if (!capacity_given)
    s.capacity = static_cast<uint32_t>(
        std::max<uint64_t>(1, static_cast<uint64_t>(0.95 * static_cast<double>(s.keys) / s.servers)));
  return o;
}

}  // namespace lb
