// libFuzzer target for the config loader: any bytes must give either a Config or a list of
// errors that each name the file, never a crash, a hang or a sanitizer report. Built and run
// by `make fuzz` (clang, -fsanitize=fuzzer,address,undefined); not part of `make test`.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "lb/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto result = lb::loadConfigString(text, "fuzz.toml");
  if (!result.ok()) {
    // Every error must be printable and name the file it came from.
    for (const auto& e : result.errors()) {
      std::string line = e.format();
      if (line.compare(0, 9, "fuzz.toml") != 0 || e.message.empty()) abort();
    }
  } else {
    // A config that loads must hold what validation promised.
    for (const auto& l : result.value().listeners)
      if (!result.value().findCluster(l.cluster)) abort();
    for (const auto& c : result.value().clusters)
      if (c.backends.empty()) abort();
  }
  return 0;
}
