// Where a cache client's replies wait for their turn. Replies come back from several backends
// in any order, and go to the client in its own command order; a reply that arrives before
// the ones ahead of it is copied here, and so is whatever a command keeps until it is answered
// (the owner of each key of a multi-key command, lb's own error text).
//
// A bump allocator over the worker's pool blocks (a request larger than a block gets a heap
// block of its own). Every allocation is tagged with its command's sequence number; commands
// leave in sequence order, so a block is free once the last command that allocated in it has
// left: release(seq) frees every such block. An empty arena holds no block.
//
// Loop thread only. Neither copied nor moved.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lb/net/buffer_pool.h"

namespace lb {

class ReplyArena {
 public:
  explicit ReplyArena(BufferPool& pool) noexcept : pool_(pool) {}
  ~ReplyArena() { clear(); }
  ReplyArena(const ReplyArena&) = delete;
  ReplyArena& operator=(const ReplyArena&) = delete;

  // n bytes (aligned to 8) that stay valid until release(s) with s >= seq; nullptr only when
  // memory is exhausted.
  char* allocate(size_t n, uint64_t seq) noexcept;
  // A copy of [p, p + n).
  char* copy(const char* p, size_t n, uint64_t seq) noexcept;
  // Every command up to and including `seq` has left: frees the blocks only they used.
  void release(uint64_t seq) noexcept;
  // Frees everything (the connection is closing, or nothing waits any more).
  void clear() noexcept;

  size_t blocks() const noexcept { return blocks_; }

 private:
  struct Block {
    Block* next;
    uint64_t last_seq;   // the highest sequence number that allocated here
    uint32_t used;       // bytes handed out after the header
    uint32_t capacity;   // bytes after the header
    bool pooled;         // a pool block, else a heap block of its own
  };
  static constexpr size_t kHeader = (sizeof(Block) + 15) & ~size_t{15};
  static char* data(Block* b) noexcept { return reinterpret_cast<char*>(b) + kHeader; }
  void free(Block* b) noexcept;

  BufferPool& pool_;
  Block* head_ = nullptr;   // allocation order
  Block* tail_ = nullptr;   // the block new allocations go to
  size_t blocks_ = 0;
};

}  // namespace lb
