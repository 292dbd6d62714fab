// The reply side of the memcached protocol: how a pipelined server connection frames replies
// (memcachedWire), which replies noreply and quiet mode drop (dropReply), and how the replies
// of a get split by owner become the one reply its client gets (mergeValues, planKeys).
// Pure apart from the output chain.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "lb/proxy/cache/byte_chain.h"
#include "lb/proxy/cache/command.h"
#include "lb/proxy/cache/wire.h"

namespace lb {

// Framing by the kind of command a reply answers (mc::ReplyKind); no handshake.
const CacheWire& memcachedWire() noexcept;

namespace mc {

// Which backend answers the client asked not to get (CacheCommand::flags).
enum Quiet : uint8_t {
  kLoud,
  kNoreply,     // classic noreply: everything, errors included
  kQuietGet,    // mg q: EN (a miss)
  kQuietStore,  // ms q, md q: HD (success)
  kQuietMath,   // ma q: HD, or VA with the value (success)
};

// Whether a backend reply to a command of quiet mode `quiet` stays with lb. The quiet meta
// modes never drop an error; noreply drops everything.
bool dropReply(uint8_t quiet, const char* p, size_t n) noexcept;

// The plan of a split get: for each key in order, its fragment, its length and its bytes.
size_t planSize(const std::vector<std::string_view>& keys) noexcept;
void writePlan(const std::vector<std::string_view>& keys, const uint16_t* fragment_of_key,
               char* out) noexcept;

// Appends the client's reply: every hit among the fragments' replies in the order of the
// plan's keys, then one END. A fragment that answered an error line gives the whole reply.
// A key among `overrides` (in the plan's order) with a reply is answered by that reply
// instead (a handover read's hit: one VALUE item, and END). `cursor` holds positions
// meanwhile.
void mergeValues(const FragmentReply* parts, uint16_t fragment_count, const char* plan,
                 uint32_t keys, std::vector<uint32_t>& cursor, ByteChain& out,
                 const HandoverKeyRead* overrides = nullptr, uint32_t override_count = 0) noexcept;

// The places of the plan's keys that no part answers, as mergeValues reads the parts, in
// order, into positions[0..cap); how many. None when a part is missing or an error line
// (the merge answers that).
uint32_t missedKeys(const FragmentReply* parts, uint16_t fragment_count, const char* plan,
                    uint32_t keys, std::vector<uint32_t>& cursor, uint32_t* positions,
                    uint32_t cap) noexcept;

}  // namespace mc
}  // namespace lb
