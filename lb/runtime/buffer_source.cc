#include "lb/runtime/buffer_source.h"

#include <cstdlib>
#include <new>

namespace lb {

FreeListBuffers::FreeListBuffers(size_t chunk_size, size_t keep)
    : chunk_size_(chunk_size), keep_(keep) {}

FreeListBuffers::~FreeListBuffers() {
  while (free_ != nullptr) {
    Free* next = free_->next;
    ::operator delete(free_);
    free_ = next;
  }
}

char* FreeListBuffers::acquire() noexcept {
  ++outstanding_;
  if (free_ != nullptr) {
    Free* f = free_;
    free_ = f->next;
    --kept_;
    return reinterpret_cast<char*>(f);
  }
  return static_cast<char*>(::operator new(chunk_size_, std::nothrow));
}

void FreeListBuffers::release(char* chunk) noexcept {
  if (chunk == nullptr) return;
  --outstanding_;
  if (kept_ >= keep_) {
    ::operator delete(chunk);
    return;
  }
  Free* f = reinterpret_cast<Free*>(chunk);
  f->next = free_;
  free_ = f;
  ++kept_;
}

// ---- TcpSession ----

// Sits at the start of every chunk: the read lands after it, and the same chunk then carries
// the write of those bytes to the other side.

}  // namespace lb
