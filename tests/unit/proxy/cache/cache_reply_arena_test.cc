// ReplyArena (lb/proxy/cache/reply_arena.h): a bump allocator over pool blocks whose blocks
// are freed by sequence number, as its header states it. The pool's outstanding() count says
// what the arena holds of it.
#include <cstdint>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "lb/proxy/cache/reply_arena.h"

namespace lb {
namespace {

// Bytes one pool block holds for allocations: a block less the arena's header (at most 64
// bytes; the exact size is the arena's business, so tests stay well inside or outside it).
constexpr size_t kRoughlyABlock = BufferPool::kBlockSize - 64;

TEST(ReplyArenaTest, AnEmptyArenaHoldsNoBlock) {
  BufferPool pool;
  ReplyArena arena(pool);
  EXPECT_EQ(arena.blocks(), 0u);
  EXPECT_EQ(pool.outstanding(), 0u);
  arena.release(100);
  arena.clear();
  EXPECT_EQ(arena.blocks(), 0u);
}

TEST(ReplyArenaTest, AllocationsAreEightByteAlignedAndDistinct) {
  BufferPool pool;
  ReplyArena arena(pool);
  char* a = arena.allocate(1, 1);
  char* b = arena.allocate(3, 1);
  char* c = arena.allocate(8, 2);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 8, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 8, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 8, 0u);
  EXPECT_GE(b - a, 8);
  EXPECT_GE(c - b, 8);
  EXPECT_EQ(arena.blocks(), 1u);
}

TEST(ReplyArenaTest, CopyHoldsTheBytesUntilReleased) {
  BufferPool pool;
  ReplyArena arena(pool);
  const std::string s = "$5\r\nhello\r\n";
  char* p = arena.copy(s.data(), s.size(), 7);
  ASSERT_NE(p, nullptr);
  arena.allocate(100, 8);   // more in the same block does not disturb it
  EXPECT_EQ(std::string(p, s.size()), s);
}

TEST(ReplyArenaTest, ACopyOfNothingIsStillAPointer) {
  BufferPool pool;
  ReplyArena arena(pool);
  EXPECT_NE(arena.copy(nullptr, 0, 1), nullptr);
}

TEST(ReplyArenaTest, ReleasingTheLastCommandOfTheOnlyBlockEmptiesTheArena) {
  BufferPool pool;
  ReplyArena arena(pool);
  arena.allocate(10, 1);
  arena.allocate(10, 2);
  arena.release(1);   // command 2 still uses the block
  EXPECT_EQ(arena.blocks(), 1u);
  EXPECT_EQ(pool.outstanding(), 1u);
  arena.release(2);
  EXPECT_EQ(arena.blocks(), 0u);
  EXPECT_EQ(pool.outstanding(), 0u) << "an idle client kept a block";
}

TEST(ReplyArenaTest, AllocationsSpillIntoANewBlockAndOldBlocksFreeBySequence) {
  BufferPool pool;
  ReplyArena arena(pool);
  // Block 1: commands 1 and 2; block 2: command 3 (it does not fit beside them).
  arena.allocate(kRoughlyABlock / 2, 1);
  arena.allocate(kRoughlyABlock / 2 - 64, 2);
  arena.allocate(kRoughlyABlock / 2, 3);
  EXPECT_EQ(arena.blocks(), 2u);
  arena.release(1);
  EXPECT_EQ(arena.blocks(), 2u) << "freed a block command 2 still uses";
  arena.release(2);
  EXPECT_EQ(arena.blocks(), 1u);
  EXPECT_EQ(pool.outstanding(), 1u);
  arena.release(3);
  EXPECT_EQ(arena.blocks(), 0u);
  EXPECT_EQ(pool.outstanding(), 0u);
}

// Freed blocks go back to the pool, and the next allocations take them from there.
TEST(ReplyArenaTest, ReleasedBlocksGoBackToThePoolForReuse) {
  BufferPool pool;
  ReplyArena arena(pool);
  arena.allocate(kRoughlyABlock - 64, 1);   // block A: command 1, nearly full
  arena.allocate(kRoughlyABlock / 2, 2);    // block B (the tail): command 2
  arena.allocate(16, 5);                    // A is full: B, now also command 5's
  ASSERT_EQ(arena.blocks(), 2u);
  arena.release(5);                         // both free: the arena empties
  EXPECT_EQ(arena.blocks(), 0u);
  EXPECT_EQ(pool.outstanding(), 0u);
  EXPECT_EQ(pool.freeCount(), 2u);
  // Again: now pooled blocks are reused, none allocated.
  arena.allocate(10, 6);
  EXPECT_EQ(pool.freeCount(), 1u);
  EXPECT_EQ(pool.outstanding(), 1u);
}

// The block new allocations go to is started over, not returned, when its commands have left
// while an older block still lives (a heap block sits before it): the next allocation
// reuses its start.
TEST(ReplyArenaTest, TheTailBlockStartsOverWhileAnOlderBlockLives) {
  BufferPool pool;
  ReplyArena arena(pool);
  char* first = arena.allocate(16, 2);                     // the pool block: command 2
  arena.allocate(BufferPool::kBlockSize * 2, 3);           // a heap block before it: command 3
  ASSERT_EQ(arena.blocks(), 2u);
  arena.release(2);
  EXPECT_EQ(arena.blocks(), 2u) << "the tail block was returned while the arena is in use";
  EXPECT_EQ(pool.outstanding(), 1u);
  EXPECT_EQ(arena.allocate(16, 4), first) << "the tail block was not started over";
  arena.release(4);
  EXPECT_EQ(arena.blocks(), 0u);
  EXPECT_EQ(pool.outstanding(), 0u);
}

TEST(ReplyArenaTest, AnAllocationLargerThanABlockGetsAHeapBlockOfItsOwn) {
  BufferPool pool;
  ReplyArena arena(pool);
  char* small = arena.allocate(16, 1);
  char* big = arena.allocate(BufferPool::kBlockSize * 2, 2);
  ASSERT_NE(big, nullptr);
  memset(big, 'x', BufferPool::kBlockSize * 2);   // all of it is usable
  EXPECT_EQ(arena.blocks(), 2u);
  EXPECT_EQ(pool.outstanding(), 1u) << "the large allocation came from the pool";
  // The pool block before it keeps being filled.
  char* after = arena.allocate(16, 3);
  EXPECT_EQ(arena.blocks(), 2u);
  EXPECT_EQ(after - small, 16);
  arena.release(2);   // command 3 is in the pool block; the heap block is command 2's only
  EXPECT_EQ(arena.blocks(), 1u);
  arena.release(3);
  EXPECT_EQ(arena.blocks(), 0u);
  EXPECT_EQ(pool.outstanding(), 0u);
}

TEST(ReplyArenaTest, ExactlyABlocksWorthIsStillAPoolBlock) {
  BufferPool pool;
  ReplyArena arena(pool);
  // The largest allocation a pool block takes: find it from below, in 8-byte steps, as the
  // largest n for which a fresh arena takes a pool block.
  size_t n = BufferPool::kBlockSize;
  for (;; n -= 8) {
    ReplyArena probe(pool);
    const size_t before = pool.outstanding();
    ASSERT_NE(probe.allocate(n, 1), nullptr);
    if (pool.outstanding() == before + 1) break;
  }
  EXPECT_GE(n, BufferPool::kBlockSize - 64);
  char* p = arena.allocate(n, 1);
  memset(p, 'y', n);
  EXPECT_EQ(pool.outstanding(), 1u);
  // Full: the next byte goes to a second block.
  arena.allocate(1, 1);
  EXPECT_EQ(arena.blocks(), 2u);
  EXPECT_EQ(pool.outstanding(), 2u);
  arena.clear();
  EXPECT_EQ(arena.blocks(), 0u);
  EXPECT_EQ(pool.outstanding(), 0u);
}

TEST(ReplyArenaTest, ClearAndTheDestructorReturnEveryBlock) {
  BufferPool pool;
  {
    ReplyArena arena(pool);
    arena.allocate(kRoughlyABlock, 1);
    arena.allocate(kRoughlyABlock, 2);
    arena.allocate(BufferPool::kBlockSize * 3, 3);
    EXPECT_EQ(arena.blocks(), 3u);
    EXPECT_EQ(pool.outstanding(), 2u);
  }
  EXPECT_EQ(pool.outstanding(), 0u);
}

}  // namespace
}  // namespace lb
