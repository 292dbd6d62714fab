#include "lb/proxy/cache/byte_chain.h"

#include <charconv>
#include <cstring>

namespace lb {

ByteChain::Block* ByteChain::grow() {
  auto* b = reinterpret_cast<Block*>(pool_.get());
  b->next = nullptr;
  b->len = 0;
  if (tail_ != nullptr)
    tail_->next = b;
  else
    head_ = b;
  tail_ = b;
  return b;
}

void ByteChain::append(const char* p, size_t n) {
  size_ += n;
  while (n > 0) {
    Block* b = tail_;
    if (b == nullptr || b->len == kCapacity) b = grow();
    const size_t take = n < kCapacity - b->len ? n : kCapacity - b->len;
    memcpy(data(b) + b->len, p, take);
    b->len += static_cast<uint32_t>(take);
    p += take;
    n -= take;
  }
}

void ByteChain::appendDecimal(int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  append(buf, static_cast<size_t>(r.ptr - buf));
}

int ByteChain::buffers(uv_buf_t* out, int max, size_t skip) const noexcept {
  int n = 0;
  size_t offset = head_pos_ + skip;
  for (Block* b = head_; b != nullptr && n < max; b = b->next) {
    if (offset >= b->len) {
      offset -= b->len;
      continue;
    }
    out[n++] = uv_buf_init(data(b) + offset, static_cast<unsigned>(b->len - offset));
    offset = 0;
  }
  return n;
}

void ByteChain::consume(size_t n) noexcept {
  size_ -= n;
  while (n > 0 && head_ != nullptr) {
    const size_t left = head_->len - head_pos_;
    if (n < left) {
      head_pos_ += static_cast<uint32_t>(n);
      return;
    }
    n -= left;
    Block* next = head_->next;
    pool_.put(reinterpret_cast<char*>(head_));
    head_ = next;
    head_pos_ = 0;
  }
  if (head_ == nullptr) tail_ = nullptr;
  // Everything sent: the last block is drained but kept as the tail only while it has room.
  if (size_ == 0 && head_ != nullptr) {
    pool_.put(reinterpret_cast<char*>(head_));
    head_ = tail_ = nullptr;
    head_pos_ = 0;
  }
}

void ByteChain::clear() noexcept {
  while (head_ != nullptr) {
    Block* next = head_->next;
    pool_.put(reinterpret_cast<char*>(head_));
    head_ = next;
  }
  tail_ = nullptr;
  head_pos_ = 0;
  size_ = 0;
}

}  // namespace lb
