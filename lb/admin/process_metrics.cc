#include "lb/admin/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace lb {

namespace {

std::optional<std::string> readFile(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Splits on single spaces and parses field `index` (0-based) as an unsigned integer.
std::optional<uint64_t> field(std::string_view rest, size_t index) {
  size_t at = 0;
  for (size_t i = 0; i < index; ++i) {
    at = rest.find(' ', at);
    if (at == std::string_view::npos) return std::nullopt;
    ++at;
  }
  uint64_t v = 0;
  const char* end = rest.data() + rest.size();
  auto [p, ec] = std::from_chars(rest.data() + at, end, v);
  if (ec != std::errc() || (p != end && *p != ' ' && *p != '\n')) return std::nullopt;
  return v;
}

// Open descriptors: the entries of /proc/self/fd, less the one opendir itself holds.
std::optional<double> openFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  double n = 0;
  while (const dirent* e = readdir(dir))
    if (e->d_name[0] != '.') ++n;
  closedir(dir);
  return n - 1;
}

prometheus::MetricFamily gauge(const char* name, const char* help, double v,
                               prometheus::MetricType type = prometheus::MetricType::Gauge) {
  prometheus::MetricFamily f{name, help, type, {}};
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter)
    m.counter.value = v;
  else
    m.gauge.value = v;
  f.metric.push_back(std::move(m));
  return f;
}

}  // namespace

std::optional<ProcStat> parseProcStat(std::string_view text) {
  // "pid (comm) state ppid ..." : field 3 (state) starts two bytes after the last ')'.
  size_t close = text.rfind(')');
  if (close == std::string_view::npos || close + 2 >= text.size()) return std::nullopt;
  std::string_view rest = text.substr(close + 2);   // begins at field 3
  // Field n (1-based in proc(5)) is index n - 3 in `rest`.
  auto utime = field(rest, 14 - 3), stime = field(rest, 15 - 3), start = field(rest, 22 - 3),
       vsize = field(rest, 23 - 3), rss = field(rest, 24 - 3);
  if (!utime || !stime || !start || !vsize || !rss) return std::nullopt;
  return ProcStat{*utime, *stime, *start, *vsize, *rss};
}

std::optional<uint64_t> parseBootTime(std::string_view text) {
  size_t at = 0;
  while (at < text.size()) {
    size_t eol = text.find('\n', at);
    std::string_view line = text.substr(at, eol == std::string_view::npos ? eol : eol - at);
    if (line.substr(0, 6) == "btime ") {
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(line.data() + 6, line.data() + line.size(), v);
      if (ec != std::errc() || p != line.data() + line.size()) return std::nullopt;
      return v;
    }
    if (eol == std::string_view::npos) break;
    at = eol + 1;
  }
  return std::nullopt;
}

namespace {
std::atomic<uint64_t> process_generation{1};
}

void setProcessGeneration(uint64_t generation) {
  process_generation.store(generation, std::memory_order_relaxed);
}

uint64_t processGeneration() { return process_generation.load(std::memory_order_relaxed); }

ProcessCollector::ProcessCollector()
    : ticks_per_second_(sysconf(_SC_CLK_TCK)), page_size_(sysconf(_SC_PAGESIZE)) {
  if (auto s = readFile("/proc/stat")) boot_time_ = parseBootTime(*s);
}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  auto text = readFile("/proc/self/stat");
  auto stat = text ? parseProcStat(*text) : std::nullopt;
  if (stat && ticks_per_second_ > 0) {
    const double hz = static_cast<double>(ticks_per_second_);
    out.push_back(gauge("process_cpu_seconds_total",
                        "Total user and system CPU time spent in seconds.",
                        static_cast<double>(stat->utime_ticks + stat->stime_ticks) / hz,
                        prometheus::MetricType::Counter));
    if (boot_time_)
      out.push_back(gauge("process_start_time_seconds",
                          "Start time of the process since unix epoch in seconds.",
                          static_cast<double>(*boot_time_) +
                              static_cast<double>(stat->start_ticks) / hz));
    out.push_back(gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                        static_cast<double>(stat->vsize_bytes)));
    out.push_back(gauge("process_resident_memory_bytes", "Resident memory size in bytes.",
                        static_cast<double>(stat->rss_pages) * static_cast<double>(page_size_)));
  }
  if (auto fds = openFds())
    out.push_back(gauge("process_open_fds", "Number of open file descriptors.", *fds));
  out.push_back(gauge("lb_process_generation",
                      "1 for an lb started cold; one more with each lb upgrade since.",
                      static_cast<double>(processGeneration())));
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0)
    out.push_back(gauge("process_max_fds", "Maximum number of open file descriptors.",
                        static_cast<double>(lim.rlim_cur)));
  return out;
}

}  // namespace lb
