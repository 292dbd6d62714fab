// A byte queue over the worker's 64 KiB pool blocks: appended at the tail, written out from
// the head with writev, blocks given back to the pool as soon as they are drained. The cache
// protocols' output on both sides (commands to a backend, replies to a client) goes through
// one, so a burst of any size costs no allocation once the pool is warm, and an empty chain
// holds no block at all.
//
// Loop thread only (the pool is the worker's). Neither copied nor moved.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lb/net/buffer_pool.h"

namespace lb {

class ByteChain {
 public:
  explicit ByteChain(BufferPool& pool) noexcept : pool_(pool) {}
  ~ByteChain() { clear(); }
  ByteChain(const ByteChain&) = delete;
  ByteChain& operator=(const ByteChain&) = delete;

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  // Copies [p, p + n) to the tail, spilling into new blocks as needed.
  void append(const char* p, size_t n);
  void append(std::string_view s) { append(s.data(), s.size()); }
  // Appends `v` in decimal.
  void appendDecimal(int64_t v);

  // Up to `max` buffers covering the bytes from offset `skip` on (skip < size()), in order;
  // returns how many it filled. For writev: the bytes stay put until consume().
  int buffers(uv_buf_t* out, int max, size_t skip = 0) const noexcept;
  // Drops the first n bytes (n <= size()); drained blocks go back to the pool.
  void consume(size_t n) noexcept;
  void clear() noexcept;

 private:
  struct Block {
    Block* next;
    uint32_t len;   // bytes written after the header
  };
  static constexpr size_t kHeader = (sizeof(Block) + 15) & ~size_t{15};
  static constexpr size_t kCapacity = BufferPool::kBlockSize - kHeader;
  static char* data(Block* b) noexcept { return reinterpret_cast<char*>(b) + kHeader; }
  Block* grow();

  BufferPool& pool_;
  Block* head_ = nullptr;
  Block* tail_ = nullptr;
  uint32_t head_pos_ = 0;   // bytes of head_ already consumed
  size_t size_ = 0;
};

}  // namespace lb
