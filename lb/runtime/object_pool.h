// A free list of constructed objects for one worker thread: what a session needs only while
// a request is in flight (HTTP's parsers and header views, lb/proxy/http/http_exchange.h)
// is taken from here when the request's first byte arrives and given back when the exchange
// ends, so an idle connection holds none of it and the steady state allocates nothing.
// Objects come back constructed and keep their storage; the taker resets what it uses (a
// parser's 128 header slots are not zeroed on every request).
//
// Owning thread only. The pool may grow past max_free under load; beyond it a returned
// object is freed, so a burst does not pin its peak for ever (the BufferPool rule,
// lb/net/buffer_pool.h).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace lb {

template <typename T>
class ObjectPool {
 public:
  // The free list is reserved up front, so put() never allocates.
  explicit ObjectPool(size_t max_free) : max_free_(max_free) { free_.reserve(max_free); }
  ~ObjectPool() {
    for (T* t : free_) delete t;
  }
  ObjectPool(const ObjectPool&) = delete;
  ObjectPool& operator=(const ObjectPool&) = delete;

  // A cached object as it was given back, or a new one; nullptr when memory is exhausted.
  T* get() noexcept {
    T* t;
    if (!free_.empty()) {
      t = free_.back();
      free_.pop_back();
    } else {
      t = new (std::nothrow) T;
      if (t == nullptr) return nullptr;
    }
    ++outstanding_;
    return t;
  }
  // Null is allowed.
  void put(T* t) noexcept {
    if (t == nullptr) return;
    --outstanding_;
    if (free_.size() < max_free_)
      free_.push_back(t);   // within the reserved capacity: no allocation
    else
      delete t;
  }

  size_t outstanding() const noexcept { return outstanding_; }   // objects handed out
  size_t freeCount() const noexcept { return free_.size(); }     // objects cached
  size_t maxFree() const noexcept { return max_free_; }

 private:
  size_t max_free_;
  size_t outstanding_ = 0;
  std::vector<T*> free_;
};

}  // namespace lb
