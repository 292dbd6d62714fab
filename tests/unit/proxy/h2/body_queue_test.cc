// BodyQueue: bytes in, the same bytes out in order, across block boundaries; every block back
// in the pool once consumed; and a refusal, with nothing taken, past what flow control allows.
#include <gtest/gtest.h>

#include <string>

#include "lb/proxy/h2/body_queue.h"

namespace lb {
namespace {

std::string pattern(size_t n, size_t from = 0) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (from + i) % 23);
  return s;
}

TEST(BodyQueueTest, BytesComeOutInOrderAcrossBlocks) {
  BufferPool pool;
  BodyQueue q;
  q.setPool(&pool);
  const std::string in = pattern(3 * BufferPool::kBlockSize + 123);
  ASSERT_TRUE(q.append(in.data(), 1000));
  ASSERT_TRUE(q.append(in.data() + 1000, in.size() - 1000));
  EXPECT_EQ(q.size(), in.size());
  EXPECT_EQ(pool.outstanding(), 4u);
  std::string out(in.size(), '\0');
  size_t got = 0;
  while (got < in.size()) got += q.take(out.data() + got, 7000);
  EXPECT_EQ(out, in);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(pool.outstanding(), 0u);
}

TEST(BodyQueueTest, FrontAndConsumeWalkTheBlocks) {
  BufferPool pool;
  BodyQueue q;
  q.setPool(&pool);
  const std::string in = pattern(BufferPool::kBlockSize + 10);
  ASSERT_TRUE(q.append(in.data(), in.size()));
  EXPECT_EQ(q.front().size(), BufferPool::kBlockSize);
  q.consume(BufferPool::kBlockSize - 5);
  EXPECT_EQ(q.front(), in.substr(BufferPool::kBlockSize - 5, 5));
  q.consume(5);
  EXPECT_EQ(q.front(), in.substr(BufferPool::kBlockSize));
  EXPECT_EQ(pool.outstanding(), 1u);
  q.clear();
  EXPECT_EQ(pool.outstanding(), 0u);
}

TEST(BodyQueueTest, RefusesPastItsBlocksAndTakesNothing) {
  BufferPool pool;
  BodyQueue q;
  q.setPool(&pool);
  const std::string block = pattern(BufferPool::kBlockSize);
  for (size_t i = 0; i < BodyQueue::kMaxBlocks; ++i) ASSERT_TRUE(q.append(block.data(), block.size()));
  EXPECT_FALSE(q.append("x", 1));
  EXPECT_EQ(q.size(), BodyQueue::kMaxBlocks * BufferPool::kBlockSize);
  q.consume(1);
  EXPECT_FALSE(q.append("xy", 2));   // one byte of room at the head is not room at the tail
  q.consume(BufferPool::kBlockSize - 1);
  EXPECT_TRUE(q.append("x", 1));
}

}  // namespace
}  // namespace lb
