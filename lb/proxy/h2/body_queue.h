// The bytes of one direction of an HTTP/2 stream waiting for the other side to take them: a
// request body's DATA on its way to the upstream socket, a response body on its way into
// DATA frames. A FIFO of the worker's pool blocks (lb/net/buffer_pool.h): appending copies
// into the tail block and takes a new one when it is full; consuming gives each emptied block
// back at once. The most it holds is what flow control lets in (the stream's window, plus
// one block for the reader's own high-water mark), so the ring has a fixed size and nothing
// here allocates but the pool. Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "lb/net/buffer_pool.h"

namespace lb {

class BodyQueue {
 public:
  // The largest stream window a listener may set (h2.initial_window, 16 MiB) in blocks, and
  // two more: one the reader fills past its mark, one partly consumed at the head.
  static constexpr size_t kMaxBlocks = (16u << 20) / BufferPool::kBlockSize + 2;

  BodyQueue() = default;
  BodyQueue(const BodyQueue&) = delete;
  BodyQueue& operator=(const BodyQueue&) = delete;
  ~BodyQueue() { clear(); }

  void setPool(BufferPool* pool) noexcept { pool_ = pool; }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  // Copies [p, p + n) to the tail. False (nothing taken) when it would need more than
  // kMaxBlocks blocks: the peer sent past what flow control allowed.
  bool append(const char* p, size_t n) noexcept {
    size_t tail_room = count_ == 0 ? 0 : BufferPool::kBlockSize - tail_len_;
    const size_t need = n > tail_room ? (n - tail_room + BufferPool::kBlockSize - 1) /
                                            BufferPool::kBlockSize
                                      : 0;
    if (count_ + need > kMaxBlocks) return false;
    while (n > 0) {
      if (count_ == 0 || tail_len_ == BufferPool::kBlockSize) addBlock();
      const size_t k = std::min(n, BufferPool::kBlockSize - tail_len_);
      memcpy(tail() + tail_len_, p, k);
      tail_len_ += k;
      size_ += k;
      p += k;
      n -= k;
    }
    return true;
  }

  // Room for n bytes in one run at the tail (n at most a block), or nullptr: the tail block
  // has less room than n left. Writing there and calling commit(n) is append() in one copy
  // per piece, for a writer that knows its whole length first (a request head).
  char* reserve(size_t n) noexcept {
    if (count_ == 0 || tail_len_ == BufferPool::kBlockSize) {
      if (count_ == kMaxBlocks) return nullptr;
      addBlock();
    }
    return n <= BufferPool::kBlockSize - tail_len_ ? tail() + tail_len_ : nullptr;
  }
  void commit(size_t n) noexcept {
    tail_len_ += n;
    size_ += n;
  }

  // The first contiguous run of bytes (at most one block's).
  std::string_view front() const noexcept {
    if (count_ == 0) return {};
    const size_t end = count_ == 1 ? tail_len_ : BufferPool::kBlockSize;
    return {blocks_[head_] + head_pos_, end - head_pos_};
  }

  // Drops the first n bytes (n <= size()).
  void consume(size_t n) noexcept {
    size_ -= n;
    while (n > 0 && count_ > 0) {
      const size_t end = count_ == 1 ? tail_len_ : BufferPool::kBlockSize;
      const size_t k = std::min(n, end - head_pos_);
      head_pos_ += k;
      n -= k;
      if (head_pos_ == end) popHead();
    }
  }

  // Copies up to n bytes from the front into out and consumes them; how many.
  size_t take(char* out, size_t n) noexcept {
    size_t done = 0;
    while (done < n && size_ > 0) {
      std::string_view f = front();
      const size_t k = std::min(n - done, f.size());
      memcpy(out + done, f.data(), k);
      consume(k);
      done += k;
    }
    return done;
  }

  void clear() noexcept {
    while (count_ > 0) popHead();
    size_ = 0;
  }

 private:
  // The ring's index `i` places past the head; no division on the way (kMaxBlocks is no power
  // of two).
  static size_t wrap(size_t i) noexcept { return i >= kMaxBlocks ? i - kMaxBlocks : i; }
  char* tail() const noexcept { return blocks_[wrap(head_ + count_ - 1)]; }
  void addBlock() noexcept {
    blocks_[wrap(head_ + count_)] = pool_->get();
    ++count_;
    tail_len_ = 0;
  }
  void popHead() noexcept {
    pool_->put(blocks_[head_]);
    head_ = wrap(head_ + 1);
    --count_;
    head_pos_ = 0;
    if (count_ == 0) tail_len_ = 0;
  }

  BufferPool* pool_ = nullptr;
  char* blocks_[kMaxBlocks] = {};
  size_t head_ = 0;       // index of the first block
  size_t count_ = 0;      // blocks held
  size_t head_pos_ = 0;   // bytes of the first block already consumed
  size_t tail_len_ = 0;   // bytes filled in the last block
  size_t size_ = 0;       // bytes held
};

}  // namespace lb
