// H2Memory: size classes with free lists under nghttp2's allocations.
#include "lb/proxy/h2/h2_memory.h"

#include <bit>
#include <cstdlib>
#include <cstring>

namespace lb {

namespace {
// The header in front of every block: its class (H2Memory::kClasses for a malloc'd one),
// padded to 16 bytes so that the caller's pointer keeps malloc's alignment.
struct alignas(16) BlockHeader {
  uint32_t cls;
};
static_assert(sizeof(BlockHeader) == H2Memory::kHeader);

BlockHeader* headerOf(void* p) {
  return reinterpret_cast<BlockHeader*>(static_cast<char*>(p) - H2Memory::kHeader);
}
}  // namespace

H2Memory::H2Memory() noexcept {
  mem_.mem_user_data = this;
  mem_.malloc = onMalloc;
  mem_.free = onFree;
  mem_.calloc = onCalloc;
  mem_.realloc = onRealloc;
}

H2Memory::~H2Memory() {
  for (FreeBlock*& head : free_) {
    while (head != nullptr) {
      FreeBlock* next = head->next;
      std::free(head);
      head = next;
    }
  }
}

size_t H2Memory::classOf(size_t bytes) noexcept {
  if (bytes > kMaxClassBytes) return kClasses;
  if (bytes <= classBytes(0)) return 0;
  return static_cast<size_t>(std::bit_width(bytes - 1)) - kMinShift;   // the next power of two
}

size_t H2Memory::cached() const noexcept {
  size_t n = 0;
  for (size_t k : free_count_) n += k;
  return n;
}

void* H2Memory::allocate(size_t n) noexcept {
  if (n > SIZE_MAX - kHeader) return nullptr;
  const size_t c = classOf(n + kHeader);
  void* block;
  if (c < kClasses && free_[c] != nullptr) {
    FreeBlock* b = free_[c];
    free_[c] = b->next;
    --free_count_[c];
    block = b;
  } else {
    block = std::malloc(c < kClasses ? classBytes(c) : n + kHeader);
    if (block == nullptr) return nullptr;
  }
  auto* h = static_cast<BlockHeader*>(block);
  h->cls = static_cast<uint32_t>(c);
  ++outstanding_;
  return static_cast<char*>(block) + kHeader;
}

void H2Memory::release(void* p) noexcept {
  if (p == nullptr) return;
  BlockHeader* h = headerOf(p);
  const size_t c = h->cls;
  --outstanding_;
  if (c < kClasses && (free_count_[c] + 1) * classBytes(c) <= kCachePerClass) {
    auto* b = reinterpret_cast<FreeBlock*>(h);
    b->next = free_[c];
    free_[c] = b;
    ++free_count_[c];
    return;
  }
  std::free(h);
}

void* H2Memory::reallocate(void* p, size_t n) noexcept {
  if (p == nullptr) return allocate(n);
  if (n == 0) {
    release(p);
    return nullptr;
  }
  const size_t c = headerOf(p)->cls;
  if (c < kClasses && n + kHeader <= classBytes(c)) return p;   // still fits its block
  if (c == kClasses && n + kHeader > kMaxClassBytes) {         // large stays large
    void* block = std::realloc(headerOf(p), n + kHeader);
    return block == nullptr ? nullptr : static_cast<char*>(block) + kHeader;
  }
  void* q = allocate(n);
  if (q == nullptr) return nullptr;
  // A large block's old size is not kept: it was over kMaxClassBytes, and q is smaller.
  const size_t old = c < kClasses ? classBytes(c) - kHeader : n;
  memcpy(q, p, old < n ? old : n);
  release(p);
  return q;
}

void* H2Memory::onMalloc(size_t size, void* user) {
  return static_cast<H2Memory*>(user)->allocate(size);
}

void H2Memory::onFree(void* ptr, void* user) { static_cast<H2Memory*>(user)->release(ptr); }

void* H2Memory::onCalloc(size_t nmemb, size_t size, void* user) {
  if (size != 0 && nmemb > SIZE_MAX / size) return nullptr;
  void* p = static_cast<H2Memory*>(user)->allocate(nmemb * size);
  if (p != nullptr) memset(p, 0, nmemb * size);
  return p;
}

void* H2Memory::onRealloc(void* ptr, size_t size, void* user) {
  return static_cast<H2Memory*>(user)->reallocate(ptr, size);
}

}  // namespace lb
