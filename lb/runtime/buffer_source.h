// Fixed-size chunks for the TCP pipe, from the worker's BufferPool or, in tests, from a plain
// free list.
#pragma once

#include <cstddef>

#include "lb/runtime/buffer_pool.h"

namespace lb {

// Fixed-size chunks for the pipe, from the worker's pool. A chunk holds a small header (the
// write request) followed by the bytes read into it, so relaying one read costs no
// allocation once the pool is warm. Loop thread only.
class BufferSource {
 public:
  virtual ~BufferSource() = default;
  // A chunk of chunkSize() bytes, aligned for any object; never null (falls back to the heap).
  virtual char* acquire() noexcept = 0;
  virtual void release(char* chunk) noexcept = 0;
  virtual size_t chunkSize() const noexcept = 0;
};

// A free list of heap chunks: what a worker uses when it has no pool of its own. Keeps up to
// `keep` chunks; beyond that, released chunks go back to the heap.
class FreeListBuffers final : public BufferSource {
 public:
  explicit FreeListBuffers(size_t chunk_size = 16384, size_t keep = 1024);
  ~FreeListBuffers() override;
  char* acquire() noexcept override;
  void release(char* chunk) noexcept override;
  size_t chunkSize() const noexcept override { return chunk_size_; }
  size_t outstanding() const noexcept { return outstanding_; }   // acquired, not released

 private:
  struct Free {
    Free* next;
  };
  size_t chunk_size_;
  size_t keep_;
  size_t kept_ = 0;
  size_t outstanding_ = 0;
  Free* free_ = nullptr;
};

// The worker's BufferPool as a BufferSource.
class BufferPoolSource final : public BufferSource {
 public:
  explicit BufferPoolSource(BufferPool& pool) : pool_(pool) {}
  char* acquire() noexcept override { return pool_.get(); }
  void release(char* chunk) noexcept override { pool_.put(chunk); }
  size_t chunkSize() const noexcept override { return BufferPool::kBlockSize; }

 private:
  BufferPool& pool_;
};

}  // namespace lb
