// The standard process_* metrics of the Prometheus client libraries (Go's and Python's
// process collector: resident memory, open fds, CPU seconds, start time, fd limit), read from
// /proc/self at scrape time. Linux only, as lb is.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace lb {

// The fields of /proc/<pid>/stat that the collector needs (proc(5)), in raw kernel units.
struct ProcStat {
  uint64_t utime_ticks = 0;     // field 14
  uint64_t stime_ticks = 0;     // field 15
  uint64_t start_ticks = 0;     // field 22: clock ticks after boot
  uint64_t vsize_bytes = 0;     // field 23
  uint64_t rss_pages = 0;       // field 24
};

// Parses the text of /proc/<pid>/stat. The command name (field 2) may hold spaces and
// parentheses, so fields are counted from the last ')'. nullopt when the text is malformed.
std::optional<ProcStat> parseProcStat(std::string_view text);

// Parses the "btime" line of /proc/stat: boot time in seconds since the epoch.
std::optional<uint64_t> parseBootTime(std::string_view proc_stat_text);

// lb_process_generation: 1 for a process started cold, one more than its predecessor's for a
// process an `lb upgrade` started (lb/upgrade/upgrade.h). Set once, before the admin server runs.
void setProcessGeneration(uint64_t generation);
uint64_t processGeneration();

// Any thread. Reads /proc/self on every Collect(); a file that cannot be read drops only the
// metrics that come from it.
class ProcessCollector final : public prometheus::Collectable {
 public:
  ProcessCollector();
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  long ticks_per_second_;
  long page_size_;
  std::optional<uint64_t> boot_time_;   // constant while the machine is up: read once
};

}  // namespace lb
