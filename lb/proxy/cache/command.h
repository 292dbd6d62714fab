// The two objects a cache protocol's command becomes (twemproxy's request and its fragments,
// src/nc_request.c): a CacheCommand is what the client sent and gets exactly one reply for,
// in its own order; a CacheFragment is the part of it sent to one backend (a single-key
// command has one; MGET over three servers three). The client's session owns its commands;
// a server connection owns the fragments in its queue, and a fragment whose command went away
// (the client closed, or the command was answered early with an error) stays in the queue,
// detached, until its backend's reply arrives, so that the queue stays aligned with the
// replies.
//
// Both come from per-worker free lists (CacheWorker), so the steady state allocates nothing.
// Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lb/core/stats.h"

namespace lb {

// A key of a merged read in a handover window (handover_reads.h): its bytes and place among
// the client's keys; once its owner missed it and it was read through, the owner a hit is
// copied to, the host it was read at, the first of the fragments that read took, and the
// hit's answer for that key, which the merge puts in place of the owner's miss (null: none).
struct HandoverKeyRead {
  const char* key = nullptr;
  uint32_t key_len = 0;
  uint32_t position = 0;
  uint32_t owner = 0;
  uint32_t from = 0;
  uint16_t first_fragment = 0;
  uint16_t asked_fragment = 0;   // the owner asked again behind the copy (0: not asked)
  const char* reply = nullptr;
  uint32_t reply_len = 0;
};

struct BackendState;
struct CacheCommand;
struct CacheFragment;

// Whoever a command belongs to (the client's CacheSession), as the server connection that
// carries its fragments sees it: the reply of a fragment still attached, or the failure
// that ends it. Loop thread; the owner may answer, detach or free the command inside.
class FragmentOwner {
 public:
  virtual void fragmentReply(CacheFragment* f, const char* p, size_t n) noexcept = 0;
  virtual void fragmentFailed(CacheFragment* f, CacheErrorReason reason,
                              std::string_view text) noexcept = 0;

 protected:
  ~FragmentOwner() = default;
};

// How the session uses one backend reply (CacheSession::useReply, per protocol).
enum class ReplyUse : uint8_t {
  kPass,    // the reply is the command's reply, byte for byte
  kStore,   // keep it: the command's reply is merged from several (MGET, get k1 k2)
  kDrop,    // the client asked for no reply (memcached noreply, meta quiet mode)
};

struct CacheFragment {
  CacheFragment* next = nullptr;              // in its server's queue, or the free list
  CacheFragment* next_in_command = nullptr;   // the command's fragments still unanswered
  CacheCommand* command = nullptr;            // nullptr once detached
  uint64_t sent_ns = 0;                       // uv_hrtime when queued: the latency's start
  uint64_t deadline_ms = 0;                   // uv_now by which the reply is due
  uint32_t timeout_ms = 0;                    // timeouts.response of its listener
  uint16_t index = 0;                         // among its command's fragments
  uint8_t reply_kind = 0;                     // the protocol's framing hint for its reply
  bool timed_out = false;                     // its command has been answered with a timeout
  // A copy of a write of several keys to one of their replicas (HandoverSink): the backend
  // it went to, where a failure is counted.
  BackendState* copy_of = nullptr;
};

// One key of a multi-key read whose element of a fragment's reply may fill the near cache:
// the key (a copy in the arena), its near-cache hash, the ticket taken before the read was
// sent, the backend it went to, and where its element is (the fragment, and the element's
// place in that fragment's array). `live` is cleared when it may not fill (tracker down).
struct NearFill {
  const char* key;
  uint64_t hash;
  uint32_t key_len;
  uint32_t stripe;
  uint32_t flushes;
  uint32_t source;
  uint32_t element;
  uint16_t fragment;
  bool live;
};

// One stored fragment reply of a merged command (in the session's reply arena).
struct FragmentReply {
  const char* bytes;
  uint32_t len;
  // A fan-out command's part whose server failed (refused, reset, timed out): no bytes; the
  // merge names the server.
  bool failed = false;
};

struct CacheCommand {
  enum class State : uint8_t {
    kWaiting,   // fragments out, or not yet answered
    kDone,      // answered: `reply`, or merged from `parts` when emitted
  };

  CacheCommand* next = nullptr;               // the session's queue, or the free list
  FragmentOwner* session = nullptr;
  CacheFragment* fragments = nullptr;         // unanswered fragments
  uint64_t seq = 0;                           // the session's numbering: arena lifetimes
  uint32_t pending = 0;                       // fragments not yet answered
  uint16_t fragment_count = 0;
  uint8_t kind = 0;                           // the protocol's: how its reply is made
  State state = State::kWaiting;
  bool merged = false;                        // emitted by the protocol's merge from `parts`
  bool quiet = false;                         // the protocol may drop its reply (noreply)
  // Sent to every server (CacheSession::beginFanOut): a part that fails is kept as failed
  // and the others are waited for, so that the reply names every server that failed;
  // `plan` holds each fragment's server name (const std::string*).
  bool fan_out = false;
  // A write to each of its key's copies (CacheSession::beginReplicated): `parts` holds each
  // copy's reply, `plan` each fragment's host (uint32_t); the first copy that answered, in
  // the key's order, gives the client's reply.
  bool replicated = false;

  // kDone and !merged: the bytes the client gets (in the arena, or static).
  const char* reply = nullptr;
  uint32_t reply_len = 0;
  // Merged commands: one stored reply per fragment, and the protocol's own plan (which
  // fragment holds each key), both in the arena.
  FragmentReply* parts = nullptr;
  void* plan = nullptr;
  uint32_t keys = 0;
  uint32_t flags = 0;                         // the protocol's

  // The near cache (near_cache.h). A read whose reply may fill it: the key (a copy in the
  // arena), its near-cache hash, the ticket taken before it was sent and the backend it went
  // to. A write: the near-cache hashes of its keys (in the arena), whose stripes are bumped
  // again when its backend answers, so that a read that raced it cannot leave the old value
  // cached past the write's acknowledgement.
  bool near_fill = false;
  uint32_t near_key_len = 0;
  const char* near_key = nullptr;
  uint64_t near_hash = 0;
  uint32_t near_stripe = 0;
  uint32_t near_flushes = 0;
  uint32_t near_source = 0;
  uint32_t near_writes = 0;
  char* near_write_hashes = nullptr;        // near_writes uint64_t, unaligned
  // A read of several keys (Redis MGET) whose hot keys the near cache did not have: one
  // NearFill each (in the arena), filled from its element of its fragment's reply.
  NearFill* near_fills = nullptr;
  uint32_t near_fill_count = 0;

  // A handover read (handover_reads.h): the owner it went to, the host a miss there is read
  // from (UINT32_MAX: not one), how far it got, and its key (a copy in the arena); once read
  // through, the owner's reply and the previous host's in `parts`.
  uint32_t handover_owner = 0;
  uint32_t handover_from = UINT32_MAX;
  uint8_t handover_stage = 0;                 // HandoverReads::Stage
  // handover_from is the key's next copy (replicas), not its previous owner; and the copy
  // read first failed, so the next copy's answer (or its miss) is the client's.
  bool handover_copy = false;
  bool handover_owner_failed = false;
  uint32_t handover_key_len = 0;
  const char* handover_key = nullptr;
  // A read whose answer must come from the owner (memcached gets: the CAS is the owner's;
  // mg: its flags ask what the owner has): the bytes asked again of the owner behind the
  // copy, and the kind of their reply; null: the previous host's hit is the answer. For a
  // merged read of several keys, what goes before each key asked again ("gets ").
  const char* handover_reask = nullptr;
  uint32_t handover_reask_len = 0;
  uint8_t handover_reask_kind = 0;
  // A merged read of several keys in a handover window (a memcached get, a redis MGET):
  // its keys, in the arena; once read through, the ones read, in the client's order.
  HandoverKeyRead* handover_keys = nullptr;
  uint32_t handover_key_count = 0;
};

}  // namespace lb
