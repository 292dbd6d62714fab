// lb/proxy/h2/h2_memory.h: nghttp2's allocations from size-class free lists. A freed block
// is what the next allocation of its class gets, content survives realloc across classes,
// the cache per class stays under its cap, and an nghttp2 session that served a request
// through it gives every block back when deleted.
#include "lb/proxy/h2/h2_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace lb {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

nghttp2_nv field(std::string_view name, std::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

TEST(H2MemoryTest, EveryClassAndLargeBlocksAreAlignedAndWritable) {
  H2Memory m;
  std::vector<void*> got;
  for (size_t n : {size_t{1}, size_t{48}, size_t{49}, size_t{100}, size_t{1000},
                   H2Memory::kMaxClassBytes - H2Memory::kHeader,
                   H2Memory::kMaxClassBytes - H2Memory::kHeader + 1, size_t{70000}}) {
    void* p = m.allocate(n);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_TRUE(aligned16(p)) << n;
    memset(p, 0xAB, n);
    got.push_back(p);
  }
  EXPECT_EQ(m.outstanding(), got.size());
  for (void* p : got) m.release(p);
  EXPECT_EQ(m.outstanding(), 0u);
  m.release(nullptr);   // as free(NULL)
  EXPECT_EQ(m.outstanding(), 0u);
}

TEST(H2MemoryTest, AFreedBlockIsTheNextOfItsClass) {
  H2Memory m;
  void* a = m.allocate(200);
  m.release(a);
  EXPECT_EQ(m.cached(), 1u);
  EXPECT_EQ(m.allocate(150), a) << "150 and 200 bytes share the 256-byte class";
  EXPECT_EQ(m.cached(), 0u);
  void* b = m.allocate(20);
  EXPECT_NE(b, a);
  m.release(a);
  m.release(b);
}

TEST(H2MemoryTest, ReallocKeepsTheBytesAcrossClassesAndIntoMalloc) {
  H2Memory m;
  auto* p = static_cast<char*>(m.allocate(10));
  memcpy(p, "0123456789", 10);
  EXPECT_EQ(m.reallocate(p, 40), p) << "40 bytes still fit the 64-byte block";
  auto* q = static_cast<char*>(m.reallocate(p, 3000));
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(std::string(q, 10), "0123456789");
  auto* r = static_cast<char*>(m.reallocate(q, 100000));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(std::string(r, 10), "0123456789");
  r[99999] = 'z';
  auto* s = static_cast<char*>(m.reallocate(r, 200000));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(std::string(s, 10), "0123456789");
  EXPECT_EQ(s[99999], 'z');
  auto* t = static_cast<char*>(m.reallocate(s, 16));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(std::string(t, 10), "0123456789");
  EXPECT_EQ(m.outstanding(), 1u);
  m.release(t);
  EXPECT_EQ(m.outstanding(), 0u);
  void* u = m.reallocate(nullptr, 30);   // as malloc
  EXPECT_NE(u, nullptr);
  m.release(u);
}

TEST(H2MemoryTest, CallocZeroesAndRefusesAnOverflowingCount) {
  H2Memory m;
  nghttp2_mem* mem = m.mem();
  void* dirty = mem->malloc(64, mem->mem_user_data);
  memset(dirty, 0xFF, 64);
  mem->free(dirty, mem->mem_user_data);
  auto* z = static_cast<unsigned char*>(mem->calloc(8, 8, mem->mem_user_data));
  ASSERT_EQ(static_cast<void*>(z), dirty) << "the dirty block comes back, zeroed";
  for (int i = 0; i < 64; ++i) EXPECT_EQ(z[i], 0) << i;
  mem->free(z, mem->mem_user_data);
  EXPECT_EQ(mem->calloc(SIZE_MAX / 2, 4, mem->mem_user_data), nullptr);
  EXPECT_EQ(m.outstanding(), 0u);
}

TEST(H2MemoryTest, ABurstIsNotCachedPastTheCapOfItsClass) {
  H2Memory m;
  std::vector<void*> burst;
  for (int i = 0; i < 5000; ++i) burst.push_back(m.allocate(100));   // the 128-byte class
  for (void* p : burst) m.release(p);
  EXPECT_EQ(m.cached(), H2Memory::kCachePerClass / 128);
  EXPECT_EQ(m.outstanding(), 0u);
}

// A server session on H2Memory takes a client's preface, SETTINGS and one GET, answers it,
// and is deleted: nothing stays handed out, and what it freed is cached for the next.
TEST(H2MemoryTest, ASessionGivesBackEveryBlockItTook) {
  H2Memory m;
  nghttp2_session_callbacks* cb = nullptr;
  ASSERT_EQ(nghttp2_session_callbacks_new(&cb), 0);
  nghttp2_session* server = nullptr;
  ASSERT_EQ(nghttp2_session_server_new3(&server, cb, nullptr, nullptr, m.mem()), 0);
  nghttp2_session* client = nullptr;
  ASSERT_EQ(nghttp2_session_client_new(&client, cb, nullptr), 0);
  nghttp2_session_callbacks_del(cb);
  ASSERT_EQ(nghttp2_submit_settings(client, NGHTTP2_FLAG_NONE, nullptr, 0), 0);
  const nghttp2_nv req[] = {field(":method", "GET"), field(":scheme", "http"),
                            field(":authority", "cache.example"), field(":path", "/k/1")};
  const int32_t id = nghttp2_submit_request(client, nullptr, req, 4, nullptr, nullptr);
  ASSERT_GT(id, 0);
  std::string wire;
  for (;;) {
    const uint8_t* d = nullptr;
    const ssize_t n = nghttp2_session_mem_send(client, &d);
    ASSERT_GE(n, 0);
    if (n == 0) break;
    wire.append(reinterpret_cast<const char*>(d), static_cast<size_t>(n));
  }
  ASSERT_EQ(nghttp2_session_mem_recv(server, reinterpret_cast<const uint8_t*>(wire.data()),
                                     wire.size()),
            static_cast<ssize_t>(wire.size()));
  EXPECT_GT(m.outstanding(), 0u);
  const nghttp2_nv resp[] = {field(":status", "200"), field("Server", "origin")};
  ASSERT_EQ(nghttp2_submit_response(server, id, resp, 2, nullptr), 0);
  size_t sent = 0;
  for (;;) {
    const uint8_t* d = nullptr;
    const ssize_t n = nghttp2_session_mem_send(server, &d);
    ASSERT_GE(n, 0);
    if (n == 0) break;
    sent += static_cast<size_t>(n);
  }
  EXPECT_GT(sent, 0u);
  nghttp2_session_del(server);
  nghttp2_session_del(client);
  EXPECT_EQ(m.outstanding(), 0u);
  EXPECT_GT(m.cached(), 0u);
}

}  // namespace
}  // namespace lb
