// The memcached reply side's pure functions (lb/proxy/memcached/memcached_replies.h): a get
// split over several servers merged back (mergeValues over the plan writePlan makes), and
// which replies noreply and quiet mode drop (dropReply). Byte-exact: what a client of one
// memcached 1.6 would have read for the same get.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "lb/proxy/memcached/memcached_replies.h"

namespace lb {
namespace {

// get with `keys`, key k answered by fragment owner[k], fragment f replying replies[f];
// `overrides`: the keys read through (handover), in order.
std::string merge(const std::vector<std::string_view>& keys, const std::vector<uint16_t>& owner,
                  const std::vector<std::string>& replies,
                  const std::vector<HandoverKeyRead>& overrides = {}) {
  std::string plan(mc::planSize(keys), '\0');
  mc::writePlan(keys, owner.data(), plan.data());
  std::vector<FragmentReply> parts;
  for (const auto& r : replies) parts.push_back({r.data(), static_cast<uint32_t>(r.size())});
  BufferPool pool;
  ByteChain out(pool);
  std::vector<uint32_t> cursor;
  mc::mergeValues(parts.data(), static_cast<uint16_t>(parts.size()), plan.data(),
                  static_cast<uint32_t>(keys.size()), cursor, out, overrides.data(),
                  static_cast<uint32_t>(overrides.size()));
  uv_buf_t bufs[16];
  const int n = out.buffers(bufs, 16);
  std::string s;
  for (int i = 0; i < n; ++i) s.append(bufs[i].base, bufs[i].len);
  return s;
}

// The places of the keys no part has an item for, as the merge reads the parts.
std::vector<uint32_t> missed(const std::vector<std::string_view>& keys,
                             const std::vector<uint16_t>& owner,
                             const std::vector<std::string>& replies) {
  std::string plan(mc::planSize(keys), '\0');
  mc::writePlan(keys, owner.data(), plan.data());
  std::vector<FragmentReply> parts;
  for (const auto& r : replies) parts.push_back({r.data(), static_cast<uint32_t>(r.size())});
  std::vector<uint32_t> cursor, positions(keys.size());
  positions.resize(mc::missedKeys(parts.data(), static_cast<uint16_t>(parts.size()), plan.data(),
                                  static_cast<uint32_t>(keys.size()), cursor, positions.data(),
                                  static_cast<uint32_t>(positions.size())));
  return positions;
}

TEST(MemcachedMergeTest, HitsFromSeveralServersComeInTheClientsKeyOrderWithOneEnd) {
  EXPECT_EQ(merge({"a", "b", "c"}, {0, 1, 0},
                  {"VALUE a 0 1\r\n1\r\nVALUE c 0 1\r\n3\r\nEND\r\n", "VALUE b 5 2\r\nbb\r\nEND\r\n"}),
            "VALUE a 0 1\r\n1\r\nVALUE b 5 2\r\nbb\r\nVALUE c 0 1\r\n3\r\nEND\r\n");
}

TEST(MemcachedMergeTest, MissesAreLeftOut) {
  EXPECT_EQ(merge({"a", "b", "c", "d"}, {0, 1, 0, 1},
                  {"VALUE c 0 1\r\n3\r\nEND\r\n", "VALUE b 0 1\r\n2\r\nEND\r\n"}),
            "VALUE b 0 1\r\n2\r\nVALUE c 0 1\r\n3\r\nEND\r\n");
}

TEST(MemcachedMergeTest, EveryKeyMissingIsOneEnd) {
  EXPECT_EQ(merge({"a", "b"}, {0, 1}, {"END\r\n", "END\r\n"}), "END\r\n");
}

TEST(MemcachedMergeTest, GetsKeepsEachItemsCas) {
  EXPECT_EQ(merge({"a", "b"}, {1, 0}, {"VALUE b 0 1 8\r\n2\r\nEND\r\n", "VALUE a 3 1 7\r\n1\r\nEND\r\n"}),
            "VALUE a 3 1 7\r\n1\r\nVALUE b 0 1 8\r\n2\r\nEND\r\n");
}

// The data block is counted, not searched: END or VALUE inside a value is data.
TEST(MemcachedMergeTest, AValueThatLooksLikeRepliesIsData) {
  const std::string tricky = "VALUE a 0 17\r\nEND\r\nVALUE b 0 1\r\r\n";
  EXPECT_EQ(tricky.size(), std::string("VALUE a 0 17\r\n").size() + 17 + 2);
  EXPECT_EQ(merge({"a", "b"}, {0, 1}, {tricky + "END\r\n", "VALUE b 0 1\r\nB\r\nEND\r\n"}),
            tricky + "VALUE b 0 1\r\nB\r\nEND\r\n");
}

TEST(MemcachedMergeTest, ARepeatedKeyGetsEachOfItsItems) {
  EXPECT_EQ(merge({"a", "b", "a"}, {0, 1, 0},
                  {"VALUE a 0 1\r\n1\r\nVALUE a 0 1\r\n1\r\nEND\r\n", "END\r\n"}),
            "VALUE a 0 1\r\n1\r\nVALUE a 0 1\r\n1\r\nEND\r\n");
}

// An item for a key the fragment was not asked for is never passed on as another's.
TEST(MemcachedMergeTest, AnItemForAnotherKeyIsNotPassedOn) {
  EXPECT_EQ(merge({"a", "b"}, {0, 1}, {"VALUE z 0 1\r\n1\r\nEND\r\n", "END\r\n"}), "END\r\n");
}

TEST(MemcachedMergeTest, AFragmentsErrorIsTheWholeReply) {
  EXPECT_EQ(merge({"a", "b"}, {0, 1},
                  {"VALUE a 0 1\r\n1\r\nEND\r\n", "SERVER_ERROR out of memory\r\n"}),
            "SERVER_ERROR out of memory\r\n");
}

TEST(MemcachedMergeTest, TheFirstErrorInFragmentOrderWins) {
  EXPECT_EQ(merge({"a", "b", "c"}, {0, 1, 2},
                  {"END\r\n", "CLIENT_ERROR bad data chunk\r\n", "SERVER_ERROR busy\r\n"}),
            "CLIENT_ERROR bad data chunk\r\n");
  EXPECT_EQ(merge({"a", "b"}, {0, 1}, {"ERROR\r\n", "END\r\n"}), "ERROR\r\n");
}

TEST(MemcachedMergeTest, AFragmentWithNoStoredReplyIsAnLbError) {
  std::vector<std::string_view> keys{"a", "b"};
  std::vector<uint16_t> owner{0, 1};
  std::string plan(mc::planSize(keys), '\0');
  mc::writePlan(keys, owner.data(), plan.data());
  const std::string end = "END\r\n";
  FragmentReply parts[2] = {{end.data(), 5}, {nullptr, 0}};
  BufferPool pool;
  ByteChain out(pool);
  std::vector<uint32_t> cursor;
  mc::mergeValues(parts, 2, plan.data(), 2, cursor, out);
  uv_buf_t b[4];
  ASSERT_EQ(out.buffers(b, 4), 1);
  EXPECT_EQ(std::string(b[0].base, b[0].len), "SERVER_ERROR lb: out of memory\r\n");
}

bool drops(uint8_t quiet, std::string_view reply) {
  return mc::dropReply(quiet, reply.data(), reply.size());
}

TEST(MemcachedMergeTest, NoreplyDropsEverythingErrorsIncluded) {
  EXPECT_TRUE(drops(mc::kNoreply, "STORED\r\n"));
  EXPECT_TRUE(drops(mc::kNoreply, "SERVER_ERROR out of memory\r\n"));
  EXPECT_FALSE(drops(mc::kLoud, "STORED\r\n"));
}

// memcached 1.6.18 proto_text.c skips, under quiet mode, mg's EN, ms's and md's HD, ma's HD
// and VA; anything else (errors, NS, NF, EX, a hit) is sent.
TEST(MemcachedMergeTest, QuietModesDropOnlyTheirSuccess) {
  EXPECT_TRUE(drops(mc::kQuietGet, "EN\r\n"));
  EXPECT_FALSE(drops(mc::kQuietGet, "VA 1 f0\r\n1\r\n"));
  EXPECT_FALSE(drops(mc::kQuietGet, "ENX\r\n"));
  EXPECT_TRUE(drops(mc::kQuietStore, "HD\r\n"));
  EXPECT_TRUE(drops(mc::kQuietStore, "HD c123\r\n"));
  EXPECT_FALSE(drops(mc::kQuietStore, "NS\r\n"));
  EXPECT_FALSE(drops(mc::kQuietStore, "NF\r\n"));
  EXPECT_TRUE(drops(mc::kQuietMath, "HD\r\n"));
  EXPECT_TRUE(drops(mc::kQuietMath, "VA 2\r\n42\r\n"));
  EXPECT_FALSE(drops(mc::kQuietMath, "NF\r\n"));
  for (uint8_t q : {mc::kQuietGet, mc::kQuietStore, mc::kQuietMath})
    EXPECT_FALSE(drops(q, "SERVER_ERROR out of memory\r\n")) << int(q);
}

// Handover (lb/proxy/cache/handover_reads.h): the keys its owners missed are found in the
// client's order, a key asked twice twice, and an item read through takes its key's place.
TEST(MemcachedMergeTest, MissesAreFoundAndAReadThroughFillsTheirPlace) {
  const std::vector<std::string_view> keys = {"a", "b", "a", "c"};
  const std::vector<uint16_t> owner = {0, 1, 0, 1};
  const std::vector<std::string> parts = {"END\r\n", "VALUE c 0 1\r\n3\r\nEND\r\n"};
  EXPECT_EQ(missed(keys, owner, parts), (std::vector<uint32_t>{0, 1, 2}));
  HandoverKeyRead a1, b, a2;
  a1.position = 0;
  a1.reply = "VALUE a 9 2\r\naa\r\nEND\r\n";
  a1.reply_len = static_cast<uint32_t>(strlen(a1.reply));
  b.position = 1;   // read, but missed there too
  a2 = a1;
  a2.position = 2;
  EXPECT_EQ(merge(keys, owner, parts, {a1, b, a2}),
            "VALUE a 9 2\r\naa\r\nVALUE a 9 2\r\naa\r\nVALUE c 0 1\r\n3\r\nEND\r\n");
  EXPECT_TRUE(missed(keys, owner, {"SERVER_ERROR busy\r\n", parts[1]}).empty())
      << "an error part names no miss: the merge answers it";
}

}  // namespace
}  // namespace lb
