// The reply side of the Redis protocol: how a pipelined server connection frames RESP2
// replies and authenticates (redisWire), and how the replies of a command split by owner
// become the one reply its client gets (mergeReplies). Pure apart from the output chain.
#pragma once

#include <cstdint>
#include <string_view>

#include "lb/proxy/cache/byte_chain.h"
#include "lb/proxy/cache/command.h"
#include "lb/proxy/cache/wire.h"
#include "lb/proxy/cache/cache_worker.h"

namespace lb {

// RESP2 framing, and AUTH with the cluster's password on every new server connection.
const CacheWire& redisWire() noexcept;

namespace redis {

// What a command can be answered with: the framing hint of its fragments
// (CacheFragment::reply_kind). A reply of another type cannot be this command's, so the
// server connection's replies are not where lb thinks they are: frameReply says -1 and the
// connection fails (every command waiting on it gets an error, and it is replaced), rather
// than let a reply reach a client it is not for.
enum ReplyKind : uint8_t {
  kAnyReply = 0,       // any RESP2 value (lb does not know every command's reply types)
  kArrayReply = 1,     // MGET: an array, or an error
  kIntegerReply = 2,   // DEL, UNLINK, EXISTS, TOUCH: an integer, or an error
  kOkReply = 3,        // MSET, and the AUTH handshake: exactly +OK, or an error
};

// How a split command's replies combine (CacheCommand::kind of a merged Redis command).
enum MergeKind : uint8_t {
  kPass = 0,    // not merged: one owner, its reply as it is
  kMget = 1,    // each fragment an array of its keys' values: every key's value in key order
  kSum = 2,     // DEL, UNLINK, EXISTS, TOUCH: the integers summed
  kAllOk = 3,   // MSET: +OK when every fragment said +OK
};

struct MergeInput {
  uint8_t kind = kPass;
  const FragmentReply* parts = nullptr;   // one per fragment, in fragment order
  uint16_t fragment_count = 0;
  const uint16_t* plan = nullptr;         // kMget: the fragment of each key
  uint32_t keys = 0;
  // kMget in a handover window: keys (in the client's order) whose nil is answered by the
  // value read through instead (those with a reply; handover_reads.h).
  const HandoverKeyRead* overrides = nullptr;
  uint32_t override_count = 0;
};

// Appends the client's reply to `out`. The first fragment (in fragment order) that answered
// an error gives the whole reply, as one server would have. Each other fragment must be what
// its part of the command can produce (the type is checked already by frameReply; the rest
// only here, where the plan says how many keys each fragment had): for MGET an array of
// exactly its key count of bulk strings or nils, for the sums an integer from 0 to its key
// count, for MSET +OK. Anything else gives "-ERR lb: a backend answered a split command
// unexpectedly", never a merge of it. `scratch` holds positions meanwhile.
void mergeReplies(const MergeInput& in, CacheScratch& scratch, ByteChain& out) noexcept;

// MGET: the places of the keys whose element is a nil, in order, into positions[0..cap);
// how many. None when a part is missing, an error or not what the merge takes.
uint32_t missedKeys(const MergeInput& cmd, CacheScratch& scratch, uint32_t* positions,
                    uint32_t cap) noexcept;

// The elements of an array reply, walked forward (a near-cached MGET's fills from a
// fragment's reply: redis_near_mget.cc).
class ArrayCursor {
 public:
  // False when [p, p + n) does not start with an array header.
  bool open(const char* p, size_t n) noexcept;
  // Element `index` (no lower than any earlier call's) into `element`: false when the array
  // has no such element or it is not whole.
  bool seek(uint32_t index, std::string_view* element) noexcept;

 private:
  const char* p_ = nullptr;
  size_t n_ = 0;
  size_t pos_ = 0;
  uint64_t count_ = 0;
  uint32_t at_ = 0;   // the element at pos_
};

// Whether an MGET element may fill the near cache as its key's GET reply: a bulk string,
// never a nil (MGET's nil is also its answer for a key that is not a string, which GET
// answers with WRONGTYPE).
bool mgetElementFills(std::string_view element) noexcept;

}  // namespace redis
}  // namespace lb
