#include "lb/net/buffer_pool.h"

namespace lb {

BufferPool::~BufferPool() {
  for (char* b : free_) delete[] b;
}

char* BufferPool::get() {
  ++outstanding_;
  if (!free_.empty()) {
    char* b = free_.back();
    free_.pop_back();
    return b;
  }
  return new char[kBlockSize];
}

void BufferPool::put(char* block) noexcept {
  if (block == nullptr) return;
  --outstanding_;
  if (free_.size() < max_free_) {
    // reserve happened at construction of the vector's growth; push_back may allocate only
    // while the free list grows towards its peak, never in the steady state.
    try {
      free_.push_back(block);
      return;
    } catch (...) {
    }
  }
  delete[] block;
}

}  // namespace lb
