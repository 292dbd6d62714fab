// What the differential fuzz targets (http, resp, memcached) share: how a mismatch with the
// strict reference stops the run, and the read sizes a session might see.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace fuzz {

// Prints "<target>: <what>" and the input that shows it, then aborts: libFuzzer keeps the
// input as a crash artifact.
[[noreturn]] inline void mismatch(const char* target, const char* what, std::string_view detail) {
  fprintf(stderr, "%s: %s\n%.*s\n", target, what, static_cast<int>(detail.size()), detail.data());
  abort();
}

// Read sizes: all at once (seed 0), or pieces of 1 to seed + 1 bytes in a pattern drawn from
// the input, so that every parser is also fed a message split at every kind of place.
struct Cuts {
  unsigned seed;
  unsigned state;
  size_t next(size_t left) {
    if (seed == 0) return left;
    state = state * 1103515245u + 12345u;
    size_t n = 1 + (state >> 16) % (seed + 1);
    return n < left ? n : left;
  }
};

}  // namespace fuzz
