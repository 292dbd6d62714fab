#include "lb/runtime/h2_handoff.h"

namespace lb {

namespace {
// Written once before the workers start; their threads' creation orders it before any read.
H2StartFn h2_start = nullptr;
}  // namespace

void setH2Start(H2StartFn fn) noexcept { h2_start = fn; }
H2StartFn h2Start() noexcept { return h2_start; }

}  // namespace lb
