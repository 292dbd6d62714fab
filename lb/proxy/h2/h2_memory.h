// nghttp2's memory for one worker (nghttp2_mem, nghttp2_session_server_new3): what the
// library allocates per stream and per frame (the stream, each outbound item, the copy of a
// response's fields, a decoded field's buffer) comes from free lists of a few size classes,
// so the steady state of a busy HTTP/2 connection calls no malloc. jemalloc's and tcmalloc's
// small-object caches are the model: a power-of-two class per request size, a block of the
// class's size handed back on free, a cap per class past which freed blocks go back to the
// system, so a burst does not pin its peak (the ObjectPool rule, lb/runtime/object_pool.h).
// Requests past the largest class (nghttp2's 16 KiB frame buffers, made once a session) go
// to malloc.
//
// Each block carries its class in a 16-byte header in front of what the caller gets, so free
// and realloc need no size and the caller's pointer keeps malloc's 16-byte alignment.
//
// Owning worker's thread only: every session made with mem() lives and dies on that thread,
// and is deleted before the H2Worker that owns this (the worker's loop closes every
// connection before its services go).
#pragma once

#include <nghttp2/nghttp2.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace lb {

class H2Memory {
 public:
  // Size classes: 64 bytes to 8 KiB of caller's bytes plus the header, in powers of two.
  static constexpr size_t kHeader = 16;
  static constexpr size_t kMinShift = 6;
  static constexpr size_t kClasses = 8;
  static constexpr size_t kMaxClassBytes = size_t{1} << (kMinShift + kClasses - 1);
  // Bytes each class keeps on its free list at most.
  static constexpr size_t kCachePerClass = 256 * 1024;

  H2Memory() noexcept;
  ~H2Memory();
  H2Memory(const H2Memory&) = delete;
  H2Memory& operator=(const H2Memory&) = delete;

  // What nghttp2_session_server_new3 takes; valid while this lives.
  nghttp2_mem* mem() noexcept { return &mem_; }

  void* allocate(size_t n) noexcept;
  void release(void* p) noexcept;
  void* reallocate(void* p, size_t n) noexcept;

  // Blocks handed out and not given back, and blocks cached, over all classes (tests).
  size_t outstanding() const noexcept { return outstanding_; }
  size_t cached() const noexcept;

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  // The class of a block whose whole size (header included) is `bytes`; kClasses: none.
  static size_t classOf(size_t bytes) noexcept;
  static size_t classBytes(size_t c) noexcept { return size_t{1} << (kMinShift + c); }

  static void* onMalloc(size_t size, void* user);
  static void onFree(void* ptr, void* user);
  static void* onCalloc(size_t nmemb, size_t size, void* user);
  static void* onRealloc(void* ptr, size_t size, void* user);

  nghttp2_mem mem_;
  std::array<FreeBlock*, kClasses> free_{};
  std::array<size_t, kClasses> free_count_{};
  size_t outstanding_ = 0;
};

}  // namespace lb
