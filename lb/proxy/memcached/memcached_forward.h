// The bytes lb sends a backend for a command mc::parseRequest accepted: always its canonical
// form, rebuilt from the parsed tokens (one space between them, "\r\n" at the end), never
// the client's line as it came, so that memcached reads exactly the command lb parsed.
// noreply and the meta q flag are lb's to keep and are not sent: every forwarded command
// has exactly one reply (of mc::replyKindOf(command)), which lb drops or passes on.
// Pure: `out` is anything with append(const char*, size_t) (a ByteChain, a std::string).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "lb/proxy/memcached/memcached_text.h"

namespace lb::mc {

// How many of a command's tokens go on: a classic command's trailing noreply and delete's
// hold time of 0 do not.
inline size_t forwardedTokens(const Request& r, const std::vector<std::string_view>& tokens) noexcept {
  switch (r.command) {
    case Command::kDelete:
      return 2;
    case Command::kSet: case Command::kAdd: case Command::kReplace: case Command::kAppend:
    case Command::kPrepend: case Command::kCas: case Command::kIncr: case Command::kDecr:
    case Command::kTouch: case Command::kFlushAll: case Command::kVerbosity:
      return tokens.size() - (r.noreply ? 1 : 0);
    default:
      return tokens.size();
  }
}

inline bool isMetaWithFlags(Command c) noexcept {
  return c == Command::kMetaGet || c == Command::kMetaSet || c == Command::kMetaDelete ||
         c == Command::kMetaArithmetic;
}

// A command with one key (anything but get, gets, gat, gats), its data block included; `p`
// is where the command starts in the client's input.
template <class Out>
void writeForwarded(const Request& r, const std::vector<std::string_view>& tokens, const char* p,
                    Out& out) noexcept {
  const size_t last = forwardedTokens(r, tokens);
  // memcached reads a meta flag by its first character: the whole token of the q flag goes
  // (a "qv" is flag q, nothing else). The flags start after the key (ms: after its length).
  const size_t flags = r.command == Command::kMetaSet ? 3 : 2;
  const bool strip_q = isMetaWithFlags(r.command);
  bool first = true;
  for (size_t i = 0; i < last; ++i) {
    if (strip_q && i >= flags && tokens[i][0] == 'q') continue;
    if (!first) out.append(" ", 1);
    out.append(tokens[i].data(), tokens[i].size());
    first = false;
  }
  out.append("\r\n", 2);
  if (r.data_length > 0) out.append(p + r.data, r.data_length);
}

// get, gets, gat, gats with some of its keys: key_index[0..count) index the keys (0 is the
// first key); all of them when key_index is null.
template <class Out>
void writeRetrieval(const Request& r, const std::vector<std::string_view>& tokens,
                    const uint32_t* key_index, size_t count, Out& out) noexcept {
  out.append(tokens[0].data(), tokens[0].size());
  if (r.first_key == 2) {   // gat, gats: the exptime first
    out.append(" ", 1);
    out.append(tokens[1].data(), tokens[1].size());
  }
  if (key_index == nullptr) count = tokens.size() - r.first_key;
  for (size_t i = 0; i < count; ++i) {
    const std::string_view key = tokens[r.first_key + (key_index ? key_index[i] : i)];
    out.append(" ", 1);
    out.append(key.data(), key.size());
  }
  out.append("\r\n", 2);
}

}  // namespace lb::mc
