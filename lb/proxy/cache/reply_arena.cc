#include "lb/proxy/cache/reply_arena.h"

#include <cstring>
#include <new>

namespace lb {

char* ReplyArena::allocate(size_t n, uint64_t seq) noexcept {
  n = (n + 7) & ~size_t{7};
  Block* b = tail_;
  if (b == nullptr || b->capacity - b->used < n) {
    const bool pooled = n <= BufferPool::kBlockSize - kHeader;
    char* raw = nullptr;
    if (pooled) {
      try {
        raw = pool_.get();
      } catch (...) {
        return nullptr;
      }
    } else {
      raw = new (std::nothrow) char[kHeader + n];
      if (raw == nullptr) return nullptr;
    }
    b = reinterpret_cast<Block*>(raw);
    b->next = nullptr;
    b->last_seq = seq;
    b->used = 0;
    b->capacity = static_cast<uint32_t>(pooled ? BufferPool::kBlockSize - kHeader : n);
    b->pooled = pooled;
    ++blocks_;
    // A heap block holds one allocation; keep filling the pool block before it, if any.
    if (!pooled && tail_ != nullptr) {
      b->next = tail_;
      if (head_ == tail_) {
        head_ = b;
      } else {
        Block* p = head_;
        while (p->next != tail_) p = p->next;
        p->next = b;
      }
    } else {
      if (tail_ != nullptr) tail_->next = b;
      else head_ = b;
      tail_ = b;
    }
  }
  char* out = data(b) + b->used;
  b->used += static_cast<uint32_t>(n);
  if (seq > b->last_seq) b->last_seq = seq;
  return out;
}

char* ReplyArena::copy(const char* p, size_t n, uint64_t seq) noexcept {
  char* out = allocate(n, seq);
  if (out != nullptr && n > 0) memcpy(out, p, n);
  return out;
}

void ReplyArena::free(Block* b) noexcept {
  --blocks_;
  if (b->pooled)
    pool_.put(reinterpret_cast<char*>(b));
  else
    delete[] reinterpret_cast<char*>(b);
}

void ReplyArena::release(uint64_t seq) noexcept {
  Block* prev = nullptr;
  for (Block* b = head_; b != nullptr;) {
    Block* next = b->next;
    if (b->last_seq > seq) {
      prev = b;
      b = next;
      continue;
    }
    if (b == tail_) {
      // The block new allocations go to: start it over rather than return it, unless it is
      // the only one left (then the arena empties, and an idle client holds nothing).
      if (b == head_) {
        free(b);
        head_ = tail_ = nullptr;
        return;
      }
      b->used = 0;
      prev = b;
      b = next;
      continue;
    }
    if (prev != nullptr) prev->next = next;
    else head_ = next;
    free(b);
    b = next;
  }
}

void ReplyArena::clear() noexcept {
  while (head_ != nullptr) {
    Block* next = head_->next;
    free(head_);
    head_ = next;
  }
  tail_ = nullptr;
}

}  // namespace lb
