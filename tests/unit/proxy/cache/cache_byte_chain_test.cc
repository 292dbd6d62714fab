// ByteChain (lb/proxy/cache/byte_chain.h): a byte queue over pool blocks, written out from
// the head with buffers()/consume(), drained blocks back to the pool at once, an empty chain
// holding none. The pool's outstanding() count says what the chain holds.
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "lb/proxy/cache/byte_chain.h"

namespace lb {
namespace {

// Everything buffers() covers from `skip` on, concatenated.
std::string contents(const ByteChain& c, size_t skip = 0, int max = 64) {
  uv_buf_t bufs[64];
  const int n = c.buffers(bufs, max, skip);
  std::string s;
  for (int i = 0; i < n; ++i) s.append(bufs[i].base, bufs[i].len);
  return s;
}

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 23);
  return s;
}

TEST(ByteChainTest, AnEmptyChainHoldsNoBlock) {
  BufferPool pool;
  ByteChain c(pool);
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.size(), 0u);
  uv_buf_t b[4];
  EXPECT_EQ(c.buffers(b, 4), 0);
  c.append("", 0);
  EXPECT_EQ(pool.outstanding(), 0u);
  c.clear();
  EXPECT_EQ(pool.outstanding(), 0u);
}

TEST(ByteChainTest, AppendedBytesComeOutInOrder) {
  BufferPool pool;
  ByteChain c(pool);
  c.append("*2\r\n");
  c.append(std::string_view("$3\r\nget\r\n"));
  c.appendDecimal(-42);
  c.appendDecimal(0);
  c.appendDecimal(INT64_MAX);
  EXPECT_EQ(contents(c), "*2\r\n$3\r\nget\r\n-4209223372036854775807");
  EXPECT_EQ(c.size(), contents(c).size());
  EXPECT_EQ(pool.outstanding(), 1u);
}

TEST(ByteChainTest, ALargeAppendSpansBlocksAndReadsBackWhole) {
  BufferPool pool;
  ByteChain c(pool);
  const std::string big = pattern(3 * BufferPool::kBlockSize + 100);
  c.append(big);
  EXPECT_EQ(c.size(), big.size());
  EXPECT_EQ(pool.outstanding(), 4u);
  uv_buf_t bufs[8];
  EXPECT_EQ(c.buffers(bufs, 8), 4);
  EXPECT_EQ(contents(c), big);
  // At most `max` buffers, in order.
  EXPECT_EQ(c.buffers(bufs, 2), 2);
  EXPECT_EQ(contents(c, 0, 2), big.substr(0, bufs[0].len + bufs[1].len));
}

TEST(ByteChainTest, BuffersSkipTheBytesAlreadyInFlight) {
  BufferPool pool;
  ByteChain c(pool);
  const std::string big = pattern(BufferPool::kBlockSize + 500);
  c.append(big);
  EXPECT_EQ(contents(c, 10), big.substr(10));
  EXPECT_EQ(contents(c, BufferPool::kBlockSize), big.substr(BufferPool::kBlockSize));
  EXPECT_EQ(contents(c, big.size() - 1), big.substr(big.size() - 1));
}

TEST(ByteChainTest, ConsumeDropsFromTheHeadAndReturnsDrainedBlocks) {
  BufferPool pool;
  ByteChain c(pool);
  const std::string big = pattern(2 * BufferPool::kBlockSize);
  c.append(big);
  const size_t blocks = pool.outstanding();
  ASSERT_EQ(blocks, 3u);   // a block holds a little less than kBlockSize
  c.consume(5);
  EXPECT_EQ(contents(c), big.substr(5));
  EXPECT_EQ(pool.outstanding(), 3u);
  // Past the first block: it goes back at once.
  uv_buf_t first;
  ASSERT_EQ(c.buffers(&first, 1), 1);
  c.consume(first.len);
  EXPECT_EQ(pool.outstanding(), 2u);
  EXPECT_EQ(contents(c), big.substr(5 + first.len));
  c.consume(c.size());
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(pool.outstanding(), 0u) << "a drained chain kept a block";
}

TEST(ByteChainTest, ConsumingEverythingInOneBlockReturnsIt) {
  BufferPool pool;
  ByteChain c(pool);
  c.append("hello");
  c.consume(5);
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(pool.outstanding(), 0u);
  // And the chain works again from empty, on the recycled block.
  c.append("again");
  EXPECT_EQ(contents(c), "again");
  EXPECT_EQ(pool.outstanding(), 1u);
  EXPECT_EQ(pool.freeCount(), 0u);
}

TEST(ByteChainTest, AppendAfterAPartialConsumeKeepsOrder) {
  BufferPool pool;
  ByteChain c(pool);
  c.append("abcdef");
  c.consume(4);
  c.append("gh");
  EXPECT_EQ(contents(c), "efgh");
  EXPECT_EQ(c.size(), 4u);
}

// Exactly a block's worth: the next byte starts a second block, and draining the first
// leaves the second as head.
TEST(ByteChainTest, ExactlyFillingABlockSpillsTheNextByte) {
  BufferPool pool;
  ByteChain c(pool);
  // How much one block holds: append until a second block is taken.
  size_t cap = 0;
  while (pool.outstanding() < 2) {
    c.append("x", 1);
    ++cap;
  }
  --cap;
  EXPECT_GE(cap, BufferPool::kBlockSize - 64);
  EXPECT_LT(cap, BufferPool::kBlockSize);
  c.clear();
  EXPECT_EQ(pool.outstanding(), 0u);
  const std::string full = pattern(cap);
  c.append(full);
  EXPECT_EQ(pool.outstanding(), 1u);
  c.append("!");
  EXPECT_EQ(pool.outstanding(), 2u);
  c.consume(cap);
  EXPECT_EQ(pool.outstanding(), 1u);
  EXPECT_EQ(contents(c), "!");
}

TEST(ByteChainTest, ClearAndTheDestructorReturnEveryBlock) {
  BufferPool pool;
  {
    ByteChain c(pool);
    c.append(pattern(5 * BufferPool::kBlockSize));
    c.consume(7);
    EXPECT_GT(pool.outstanding(), 4u);
    c.clear();
    EXPECT_EQ(pool.outstanding(), 0u);
    EXPECT_TRUE(c.empty());
    c.append("kept until the destructor");
  }
  EXPECT_EQ(pool.outstanding(), 0u);
}

}  // namespace
}  // namespace lb
