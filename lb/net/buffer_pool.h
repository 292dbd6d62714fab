// Fixed-size I/O blocks for one worker thread, the one pool every protocol's sessions draw
// from (WorkerEnv::buffers()). Sessions take a block when bytes arrive and give it back once
// it is empty (HTTP: once parsed and forwarded; TCP: once the write carrying it is done), so
// an idle connection holds no buffer memory and the steady state allocates nothing (blocks
// are recycled through a free list).
#pragma once

#include <cstddef>
#include <vector>

namespace lb {

class BufferPool {
 public:
  static constexpr size_t kBlockSize = 64 * 1024;

  // max_free: blocks kept for reuse; beyond it a returned block is freed, so a burst of
  // connections does not pin its peak memory for ever.
  explicit BufferPool(size_t max_free = 1024) : max_free_(max_free) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // Owning thread only. A block of kBlockSize bytes; allocates only when the free list is empty.
  char* get();
  // Owning thread only. Null is allowed.
  void put(char* block) noexcept;

  size_t outstanding() const noexcept { return outstanding_; }   // blocks handed out
  size_t freeCount() const noexcept { return free_.size(); }

 private:
  size_t max_free_;
  size_t outstanding_ = 0;
  std::vector<char*> free_;
};

}  // namespace lb
