#include "lb/cli/simulate/simulate_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace lb {

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Numbers in JSON: integers as such, others with enough digits for a ratio.
std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  if (std::fabs(v) >= 1e4 || v == std::floor(v)) return fixed(std::round(v), 0);
  char buf[64];
  snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string pct(double v) { return fixed(100 * v, 1) + "%"; }

std::string perSecond(double v) {
  if (v >= 1e6) return fixed(v / 1e6, 2) + "M";
  if (v >= 1e3) return fixed(v / 1e3, 1) + "k";
  return fixed(v, 0);
}

}  // namespace

std::string simRunName(const SimResult& r) {
  std::string name = r.balance_factor ? r.selector + "+bounded" : r.selector;
  if (r.handover != SimHandover::kOff) name += "+" + simHandoverName(r.handover);
  if (r.replicas > 1) name += "+replicas:" + std::to_string(r.replicas);
  return name;
}

std::string simHandoverName(SimHandover h) {
  switch (h) {
    case SimHandover::kReadThrough: return "read-through";
    case SimHandover::kRamp: return "ramp";
    case SimHandover::kOff: break;
  }
  return "off";
}

std::string simulateText(const SimScenario& s, std::span<const SimResult> runs) {
  std::string out;
  if (!runs.empty()) {
    const SimResult& f = runs.front();
    out += "sampled: " + fixed(100 * f.key_rate, 2) + "% of " + std::to_string(s.keys) +
           " keys (capacities scaled alike), " + std::to_string(f.requests_per_step) +
           " requests a " + fixed(s.step_s, 2) + "s step; one step's hit ratio +/- " +
           fixed(100 * f.hit_ratio_stderr, 2) + " points (1 s.e.), right after the event +/- " +
           fixed(100 * f.after_window_stderr, 2) + "\n";
  }
  char line[512];
  // The name column fits the longest run's name ("ring_hash+bounded+read-through").
  int w = 20;
  for (const auto& r : runs) w = std::max(w, static_cast<int>(simRunName(r).size()));
  snprintf(line, sizeof line, "%-*s %9s %8s %8s %8s %10s %10s %8s %8s %7s %9s %11s %9s\n", w,
           "selector", "servers", "hit", "hit", "hit", "db reads/s", "db reads/s", "busiest", "busiest",
           "keys", "recovery", "misdirected", "stale");
  out += line;
  snprintf(line, sizeof line, "%-*s %9s %8s %8s %8s %10s %10s %8s %8s %7s %9s %11s %9s\n", w, "",
           "", "before", "after", "mean", "before", "peak", "before", "after", "moved", "", "reads",
           "reads");
  out += line;
  for (const auto& r : runs) {
    const std::string servers =
        std::to_string(r.servers_before) + "->" + std::to_string(r.servers_after);
    const std::string recovery = r.recovery_s ? fixed(*r.recovery_s, 1) + "s" : "never";
    snprintf(line, sizeof line, "%-*s %9s %8s %8s %8s %10s %10s %8s %8s %7s %9s %11s %9s\n", w,
             simRunName(r).c_str(), servers.c_str(), pct(r.hit_ratio_before).c_str(),
             pct(r.hit_ratio_after_event).c_str(), pct(r.hit_ratio_mean_after).c_str(),
             perSecond(r.backend_reads_per_s_before).c_str(),
             perSecond(r.backend_reads_per_s_peak).c_str(), pct(r.busiest_share_before).c_str(),
             pct(r.busiest_share_after).c_str(), pct(r.keys_moved).c_str(), recovery.c_str(),
             perSecond(r.misdirected_reads).c_str(), perSecond(r.stale_reads).c_str());
    out += line;
  }
  return out;
}

std::string simulateJson(std::span<const SimResult> runs) {
  std::string out = "[";
  for (size_t i = 0; i < runs.size(); ++i) {
    const SimResult& r = runs[i];
    out += i ? ",\n " : "";
    out += "{\"selector\": " + quoted(r.selector) +
           ", \"hash_balance_factor\": " + std::to_string(r.balance_factor) +
           ", \"handover\": " + quoted(simHandoverName(r.handover)) +
           ", \"handover_window_s\": " + num(r.handover_window_s) +
           ", \"replicas\": " + std::to_string(r.replicas) +
           ", \"replica_reads\": " + num(r.replica_reads) +
           ", \"servers_before\": " + std::to_string(r.servers_before) +
           ", \"servers_after\": " + std::to_string(r.servers_after) +
           ", \"hit_ratio_before\": " + num(r.hit_ratio_before) +
           ", \"hit_ratio_after_event\": " + num(r.hit_ratio_after_event) +
           ", \"hit_ratio_mean_after\": " + num(r.hit_ratio_mean_after) +
           ", \"backend_reads_per_s_before\": " + num(r.backend_reads_per_s_before) +
           ", \"backend_reads_per_s_peak\": " + num(r.backend_reads_per_s_peak) +
           ", \"busiest_share_before\": " + num(r.busiest_share_before) +
           ", \"busiest_share_after\": " + num(r.busiest_share_after) +
           ", \"keys_moved\": " + num(r.keys_moved) +
           ", \"recovery_s\": " + (r.recovery_s ? num(*r.recovery_s) : "null") +
           ", \"misdirected_reads\": " + num(r.misdirected_reads) +
           ", \"split_brain_s\": " + num(r.split_brain_s) +
           ", \"stale_reads\": " + num(r.stale_reads) +
           ", \"handover_reads\": " + num(r.handover_reads) +
           ", \"sampling\": {\"key_rate\": " + num(r.key_rate) +
           ", \"requests_per_step\": " + std::to_string(r.requests_per_step) +
           ", \"hit_ratio_stderr\": " + num(r.hit_ratio_stderr) +
           ", \"after_event_stderr\": " + num(r.after_window_stderr) + "}, \"timeline\": [";
    for (size_t j = 0; j < r.timeline.size(); ++j) {
      const SimPoint& p = r.timeline[j];
      out += j ? ", " : "";
      out += "{\"t\": " + num(p.t) + ", \"hit_ratio\": " + num(p.hit_ratio) +
             ", \"backend_reads_per_s\": " + num(p.backend_reads_per_s) +
             ", \"busiest_share\": " + num(p.busiest_share) +
             ", \"misdirected_reads_per_s\": " + num(p.misdirected_reads_per_s) +
             ", \"stale_reads_per_s\": " + num(p.stale_reads_per_s) +
             ", \"retries_per_s\": " + num(p.retries_per_s) +
             ", \"handover_reads_per_s\": " + num(p.handover_reads_per_s) +
             ", \"servers\": " + std::to_string(p.servers) + "}";
    }
    out += "]}";
  }
  return out + "]\n";
}

std::string simulatePlotScript(const SimScenario& s, std::span<const SimResult> runs,
                               const std::string& svg_file) {
  // Right-end labels, each with the line's extreme after the event (lowest hit ratio,
  // highest reads) so that a line is known by its label, pushed apart to at least `gap` (a
  // fraction of the axis) bottom-up, then down again from the top where they overflow it.
  auto labels = [&](auto value, double lo, double hi, bool lowest) {
    std::vector<std::pair<double, size_t>> ends;
    std::vector<double> extreme(runs.size(), lowest ? hi : lo);
    for (size_t i = 0; i < runs.size(); ++i) {
      ends.push_back({runs[i].timeline.empty() ? 0 : value(runs[i].timeline.back()), i});
      for (const auto& p : runs[i].timeline)
        if (p.t >= s.event_at_s)
          extreme[i] = lowest ? std::min(extreme[i], value(p)) : std::max(extreme[i], value(p));
    }
    std::sort(ends.begin(), ends.end());
    const double gap = (hi - lo) / 22;
    for (size_t i = 1; i < ends.size(); ++i)
      ends[i].first = std::max(ends[i].first, ends[i - 1].first + gap);
    if (!ends.empty()) ends.back().first = std::min(ends.back().first, hi - gap / 2);
    for (size_t i = ends.size(); i-- > 1;)
      ends[i - 1].first = std::min(ends[i - 1].first, ends[i].first - gap);
    std::string out;
    for (const auto& [y, i] : ends)
      out += "set label " + std::to_string(i + 1) + " " +
             quoted(simRunName(runs[i]) + (lowest ? "  low " : "  peak ") +
                    fixed(100 * extreme[i], 0) + "%") +
             " at graph 1.01, first " + fixed(y, 4) + " left noenhanced tc lt " +
             std::to_string(i + 1) + "\n";
    return out;
  };
  double max_reads = 0;
  for (const auto& r : runs)
    for (const auto& p : r.timeline) max_reads = std::max(max_reads, p.backend_reads_per_s / s.rate);
  max_reads = std::min(1.0, std::max(0.05, max_reads * 1.1));

  std::string out = "set terminal svg size 1200,800 dynamic font 'sans,12'\n";
  out += "set output " + quoted(svg_file) + "\n";
  out += "set datafile missing 'NaN'\nunset key\nset grid\nset rmargin 26\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    out += "$r" + std::to_string(i) + " << EOD\n";
    for (const auto& p : runs[i].timeline)
      out += fixed(p.t + s.step_s, 3) + " " + fixed(p.hit_ratio, 5) + " " +
             fixed(p.backend_reads_per_s / s.rate, 5) + "\n";
    out += "EOD\n";
  }
  out += "set multiplot layout 2,1\n";
  out += "set title 'hit ratio (each line ends at its label: its lowest after the event)'\nset yrange [0:1.05]\n";
  out += "set xlabel 'simulated seconds'\nset ylabel 'hit ratio'\n";
  out += labels([](const SimPoint& p) { return p.hit_ratio; }, 0, 1.05, true);
  out += "plot ";
  for (size_t i = 0; i < runs.size(); ++i)
    out += std::string(i ? ", " : "") + "$r" + std::to_string(i) + " using 1:2 with lines lw 2 lt " +
           std::to_string(i + 1);
  out += "\nunset label\n";
  out += "set title 'backend (database) reads, fraction of the request rate (label: peak)'\n";
  out += "set yrange [0:" + fixed(max_reads, 3) + "]\nset ylabel 'reads / rate'\n";
  out += labels([&](const SimPoint& p) { return p.backend_reads_per_s / s.rate; }, 0, max_reads,
                false);
  out += "plot ";
  for (size_t i = 0; i < runs.size(); ++i)
    out += std::string(i ? ", " : "") + "$r" + std::to_string(i) + " using 1:3 with lines lw 2 lt " +
           std::to_string(i + 1);
  out += "\nunset multiplot\n";
  return out;
}

}  // namespace lb
