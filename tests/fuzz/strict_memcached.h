// An independent, strict reading of a memcached client byte stream as memcached 1.6.18
// itself reads it, for tests/fuzz/memcached_fuzz.cc: proto_text.c's try_read_command_ascii
// (a line ends at '\n', one '\r' before it dropped, the line cut at a NUL), tokenize_command
// (split on ' ' only), process_command_ascii's token counts, the process_*_command field
// checks and util.c's safe_strto* (C's strtoul family: "+5", "-0", "5\t" all read).
// Written from memcached's source, sharing nothing with lb's parser. Test code only.
#pragma once

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace strict_memcached {

struct Command {
  bool complete = false;          // the whole command (line and data block) is there
  size_t consumed = 0;            // what memcached reads for it (its line, and a block read
                                  // or swallowed; after a bad field, only the line)
  bool error = false;             // memcached answers an error line
  std::string name;
  std::vector<std::string> keys;  // the key (meta b: decoded), or a retrieval's keys
  std::string data;               // the data block, its "\r\n" excluded
  bool noreply = false;           // classic noreply: memcached sends nothing
  bool quiet = false;             // meta q: a nominal reply is skipped
};

namespace detail {

inline bool cSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
// util.c safe_strtoul: strtoul, then a 64-bit long truncated into 32 bits.
inline bool u32(const std::string& s) {
  const char* str = s.c_str();
  char* end = nullptr;
  errno = 0;
  unsigned long l = strtoul(str, &end, 10);
  if (errno == ERANGE || end == str) return false;
  if (!(cSpace(*end) || *end == '\0')) return false;
  if (static_cast<long>(l) < 0 && strchr(str, '-') != nullptr) return false;
  return true;
}
inline bool i32(const std::string& s, long* out = nullptr) {
  const char* str = s.c_str();
  char* end = nullptr;
  errno = 0;
  long l = strtol(str, &end, 10);
  if (errno == ERANGE || end == str) return false;
  if (!(cSpace(*end) || *end == '\0')) return false;
  if (out) *out = static_cast<int32_t>(l);   // safe_strtol stores it in an int32_t
  return true;
}
inline bool u64(const std::string& s) {
  const char* str = s.c_str();
  char* end = nullptr;
  errno = 0;
  unsigned long long l = strtoull(str, &end, 10);
  if (errno == ERANGE || end == str) return false;
  if (!(cSpace(*end) || *end == '\0')) return false;
  if (static_cast<long long>(l) < 0 && strchr(str, '-') != nullptr) return false;
  return true;
}
// Standard base64 with '=' padding; false when not.
inline bool base64(const std::string& in, std::string* out) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (in.empty() || in.size() % 4 != 0) return false;
  out->clear();
  for (size_t i = 0; i < in.size(); i += 4) {
    uint32_t w = 0;
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = in[i + j];
      size_t v = kAlphabet.find(c);
      if (c == '=' && i + 4 == in.size() && j >= 2) {
        v = 0;
        ++pad;
      } else if (v == std::string::npos || pad > 0) {
        return false;
      }
      w = (w << 6) | static_cast<uint32_t>(v);
    }
    for (int j = 0; j < 3 - pad; ++j) out->push_back(static_cast<char>((w >> (16 - 8 * j)) & 0xff));
  }
  return !out->empty();
}

// _meta_flag_preparse: every flag by its first character, once; the numeric ones read.
inline bool metaFlags(const std::vector<std::string>& t, size_t start, char command,
                      Command* c) {
  bool seen[128] = {};
  for (size_t i = start; i < t.size(); ++i) {
    const unsigned char o = static_cast<unsigned char>(t[i][0]);
    if (o >= 127 || seen[o]) return false;
    seen[o] = true;
    const std::string v = t[i].substr(1);
    switch (o) {
      case 'b': {
        std::string decoded;
        if (!base64(c->keys[0], &decoded)) return false;
        c->keys[0] = decoded;
        break;
      }
      case 'N': case 'T': case 'R': if (!i32(v)) return false; break;
      case 'F': if (!u32(v)) return false; break;
      case 'C': case 'J': case 'D': if (!u64(v)) return false; break;
      case 'M':
        if (t[i].size() != 2) return false;
        if (command == 's' && std::string_view("EAPRS").find(t[i][1]) == std::string_view::npos)
          return false;
        if (command == 'a' && std::string_view("I+D-").find(t[i][1]) == std::string_view::npos)
          return false;
        break;
      case 'O': if (t[i].size() > 32) return false; break;
      case 'q': c->quiet = true; break;
      case 'l': case 'P': case 'L': case 'k': case 's': case 't': case 'c': case 'f':
      case 'v': case 'h': case 'u': case 'I':
        break;
      default:
        return false;
    }
  }
  return true;
}

}  // namespace detail

// The first command of `s`; complete is false when memcached would wait for more bytes.
inline Command read(std::string_view s) {
  using namespace detail;
  Command c;
  const size_t nl = s.find('\n');
  if (nl == std::string_view::npos) return c;
  std::string line(s.substr(0, nl));
  if (line.size() > 1 && line.back() == '\r') line.pop_back();
  line = line.c_str();   // process_command_ascii reads a C string
  c.complete = true;
  c.consumed = nl + 1;
  std::vector<std::string> t;
  for (size_t i = 0; i < line.size();) {
    const size_t sp = line.find(' ', i);
    const size_t end = sp == std::string::npos ? line.size() : sp;
    if (end > i) t.push_back(line.substr(i, end - i));
    i = end + 1;
  }
  const size_t real = t.size();
  auto fail = [&c] {
    c.error = true;
    return c;
  };
  // The data block of `block` bytes (its "\r\n" included) after the line: conn_nread's
  // read, then complete_nread_ascii's check of its last two bytes.
  auto dataBlock = [&c, s](size_t block) {
    if (s.size() < c.consumed + block) {
      c.complete = false;
      return c;
    }
    c.data = std::string(s.substr(c.consumed, block - 2));
    if (s.substr(c.consumed + block - 2, 2) != "\r\n") c.error = true;
    c.consumed += block;
    return c;
  };
  if (real == 0 || t[0].size() < 2) return fail();
  c.name = t[0];
  const std::string& n = t[0];
  if (n.size() == 2 && n[0] == 'm') {
    const char m = n[1];
    if (m == 'n') return c;
    if (m != 'g' && m != 's' && m != 'd' && m != 'a' && m != 'e') return fail();
    if (real < 2 || t[1].size() > 250) return fail();
    c.keys.push_back(t[1]);
    if (m == 'e') {
      if (real >= 3 && t[2] == "b") {
        std::string decoded;
        if (!base64(t[1], &decoded)) return fail();
        c.keys[0] = decoded;
      }
      return c;
    }
    if (real + 1 > 20) return fail();
    if (m != 's') return metaFlags(t, 2, m, &c) ? c : fail();
    long vlen = 0;
    if (real < 3 || !i32(t[2], &vlen) || vlen < 0 || vlen > INT_MAX - 2) return fail();
    const size_t block = static_cast<size_t>(vlen) + 2;
    if (!metaFlags(t, 3, m, &c)) {
      c.consumed += block;   // process_mset_command swallows the block after an error
      return fail();
    }
    return dataBlock(block);
  }
  if (n == "get" || n == "gets" || n == "gat" || n == "gats") {
    const size_t first = n == "gat" || n == "gats" ? 2 : 1;
    if (real <= first) return fail();
    if (first == 2 && !i32(t[1])) return fail();
    for (size_t i = first; i < real; ++i) {
      if (t[i].size() > 250) return fail();
      c.keys.push_back(t[i]);
    }
    return c;
  }
  const bool storage = n == "set" || n == "add" || n == "replace" || n == "append" ||
                       n == "prepend" || n == "cas";
  if (storage) {
    const size_t base = n == "cas" ? 6 : 5;
    if (real != base && real != base + 1) return fail();
    c.noreply = t[real - 1] == "noreply";   // set_noreply_maybe: the last token
    c.keys.push_back(t[1]);
    long vlen = 0;
    if (t[1].size() > 250 || !u32(t[2]) || !i32(t[3]) || !i32(t[4], &vlen)) return fail();
    if (base == 6 && !u64(t[5])) return fail();
    if (vlen < 0 || vlen > INT_MAX - 2) return fail();
    const size_t block = static_cast<size_t>(vlen) + 2;
    return dataBlock(block);
  }
  if (n == "incr" || n == "decr" || n == "touch") {
    if (real != 3 && real != 4) return fail();
    c.noreply = t[real - 1] == "noreply";
    c.keys.push_back(t[1]);
    if (t[1].size() > 250 || !(n == "touch" ? i32(t[2]) : u64(t[2]))) return fail();
    return c;
  }
  if (n == "delete") {
    if (real < 2 || real > 4) return fail();
    c.keys.push_back(t[1]);
    if (t[1].size() > 250) return fail();
    if (real > 2) {
      const bool zero = t[2] == "0";
      c.noreply = t[real - 1] == "noreply";
      if (!((real == 3 && (zero || c.noreply)) || (real == 4 && zero && c.noreply))) return fail();
    }
    return c;
  }
  if (n == "version" || n == "quit") return c;
  return fail();   // lb forwards nothing else
}

}  // namespace strict_memcached
