// A second, independent model of how Redis 7.0 reads what a client sends and how a Redis
// server writes replies, for the RESP fuzz target (resp_fuzz.cc), and nothing else: never
// linked into lb. Written from Redis 7.0's behaviour (networking.c processInputBuffer,
// processMultibulkBuffer, processInlineBuffer; util.c string2ll; sds.c sdssplitargs) in its
// own shape: over a NUL-terminated copy of the input with strchr() and C-string loops, as
// Redis reads its sds query buffer, so that a NUL stops it where it stops Redis, and with
// Redis' leniencies kept (the two bytes after a bulk and the byte after a header's CR are
// skipped unread): lb may refuse more than this, never accept what this does not read the
// same way.
//
//   command    '*' string2ll-count CR ? (count <= 0: an empty command), then count times
//              '$' string2ll-length CR ? data ? ?; anything else an inline line up to '\n'
//              (one '\r' before it dropped) split by sdssplitargs
//   reply      what addReply* writes: '+' or '-' and a line with no CR or LF, CRLF; ':' a
//              canonical int64 CRLF; '$' -1 CRLF or a length CRLF data CRLF; '*' -1 or a
//              count CRLF then that many replies (nested at most 32 deep, lb's own bound)
#pragma once

#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace strict_resp {

enum class Status { kCommand, kEmpty, kIncomplete, kError };

struct Command {
  Status status = Status::kIncomplete;
  size_t consumed = 0;
  std::vector<std::string> argv;
  std::string error;
};

// util.c string2ll, over slen bytes at s.
inline bool string2ll(const char* s, size_t slen, long long* value) {
  if (slen == 0 || slen >= 21) return false;
  if (slen == 1 && s[0] == '0') {
    *value = 0;
    return true;
  }
  size_t i = 0;
  bool negative = false;
  if (s[0] == '-') {
    negative = true;
    if (++i == slen) return false;
  }
  if (!(s[i] >= '1' && s[i] <= '9')) return false;
  unsigned long long v = static_cast<unsigned long long>(s[i] - '0');
  ++i;
  for (; i < slen && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (v > ULLONG_MAX / 10) return false;
    v *= 10;
    const unsigned d = static_cast<unsigned>(s[i] - '0');
    if (v > ULLONG_MAX - d) return false;
    v += d;
  }
  if (i < slen) return false;
  if (negative) {
    if (v > static_cast<unsigned long long>(LLONG_MAX) + 1) return false;
    *value = v == static_cast<unsigned long long>(LLONG_MAX) + 1 ? LLONG_MIN
                                                                 : -static_cast<long long>(v);
  } else {
    if (v > static_cast<unsigned long long>(LLONG_MAX)) return false;
    *value = static_cast<long long>(v);
  }
  return true;
}

inline bool cIsSpace(char c) {   // isspace() in the C locale
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
inline bool cIsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
inline int cHex(char c) {
  return c <= '9' ? c - '0' : c <= 'F' ? c - 'A' + 10 : c - 'a' + 10;
}

// sds.c sdssplitargs over the C string `line`; false where it returns NULL.
inline bool sdssplitargs(const char* line, std::vector<std::string>* out) {
  const char* p = line;
  for (;;) {
    while (*p && cIsSpace(*p)) p++;
    if (!*p) return true;
    std::string current;
    bool inq = false, insq = false, done = false;
    while (!done) {
      if (inq) {
        if (*p == '\\' && *(p + 1) == 'x' && cIsHex(*(p + 2)) && cIsHex(*(p + 3))) {
          current.push_back(static_cast<char>(cHex(*(p + 2)) * 16 + cHex(*(p + 3))));
          p += 3;
        } else if (*p == '\\' && *(p + 1)) {
          p++;
          char c;
          switch (*p) {
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'b': c = '\b'; break;
            case 'a': c = '\a'; break;
            default: c = *p; break;
          }
          current.push_back(c);
        } else if (*p == '"') {
          if (*(p + 1) && !cIsSpace(*(p + 1))) return false;
          done = true;
        } else if (!*p) {
          return false;
        } else {
          current.push_back(*p);
        }
      } else if (insq) {
        if (*p == '\\' && *(p + 1) == '\'') {
          p++;
          current.push_back('\'');
        } else if (*p == '\'') {
          if (*(p + 1) && !cIsSpace(*(p + 1))) return false;
          done = true;
        } else if (!*p) {
          return false;
        } else {
          current.push_back(*p);
        }
      } else {
        switch (*p) {
          case ' ': case '\n': case '\r': case '\t': case '\0':
            done = true;
            break;
          case '"':
            inq = true;
            break;
          case '\'':
            insq = true;
            break;
          default:
            current.push_back(*p);
            break;
        }
      }
      if (*p) p++;
    }
    out->push_back(std::move(current));
  }
}

constexpr size_t kInlineMax = 64 * 1024;   // PROTO_INLINE_MAX_SIZE

// The command at the start of `input`, as a Redis 7.0 client connection reads it; a client
// that has not authenticated (requirepass set) has authRequired() true.
inline Command readCommand(const std::string& input, bool auth_required) {
  Command r;
  const char* qb = input.c_str();   // NUL-terminated, as an sds
  const size_t len = input.size();
  auto fail = [&](const char* e) {
    r.status = Status::kError;
    r.error = e;
    return r;
  };
  if (len == 0) return r;
  if (qb[0] != '*') {
    const char* newline = strchr(qb, '\n');
    if (newline == nullptr) {
      if (len > kInlineMax) return fail("Protocol error: too big inline request");
      return r;
    }
    size_t linefeed = 1;
    if (newline != qb && *(newline - 1) == '\r') {
      newline--;
      linefeed++;
    }
    const std::string aux(qb, static_cast<size_t>(newline - qb));
    if (!sdssplitargs(aux.c_str(), &r.argv))
      return fail("Protocol error: unbalanced quotes in request");
    r.consumed = aux.size() + linefeed;
    r.status = r.argv.empty() ? Status::kEmpty : Status::kCommand;
    return r;
  }
  size_t pos = 0;
  const char* newline = strchr(qb, '\r');
  if (newline == nullptr) {
    if (len > kInlineMax) return fail("Protocol error: too big mbulk count string");
    return r;
  }
  if (static_cast<size_t>(newline - qb) + 2 > len) return r;
  long long ll = 0;
  if (!string2ll(qb + 1, static_cast<size_t>(newline - (qb + 1)), &ll) || ll > INT_MAX)
    return fail("Protocol error: invalid multibulk length");
  if (ll > 10 && auth_required) return fail("Protocol error: unauthenticated multibulk length");
  pos = static_cast<size_t>(newline - qb) + 2;
  if (ll <= 0) {
    r.status = Status::kEmpty;
    r.consumed = pos;
    return r;
  }
  long long left = ll;
  while (left > 0) {
    newline = strchr(qb + pos, '\r');
    if (newline == nullptr) {
      if (len - pos > kInlineMax) return fail("Protocol error: too big bulk count string");
      return Command{};
    }
    if (static_cast<size_t>(newline - qb) + 2 > len) return Command{};
    if (qb[pos] != '$') return fail("Protocol error: expected '$'");
    if (!string2ll(qb + pos + 1, static_cast<size_t>(newline - (qb + pos + 1)), &ll) || ll < 0 ||
        ll > 512LL * 1024 * 1024)
      return fail("Protocol error: invalid bulk length");
    if (ll > 16384 && auth_required) return fail("Protocol error: unauthenticated bulk length");
    pos = static_cast<size_t>(newline - qb) + 2;
    if (len - pos < static_cast<size_t>(ll) + 2) return Command{};
    r.argv.emplace_back(qb + pos, static_cast<size_t>(ll));
    pos += static_cast<size_t>(ll) + 2;
    --left;
  }
  r.status = Status::kCommand;
  r.consumed = pos;
  return r;
}

// A reply a Redis server writes, at input[at]: its end, 0 when incomplete, -1 when it is not
// one.
inline long long readReply(const std::string& in, size_t at, int depth = 0) {
  if (at >= in.size()) return 0;
  const char type = in[at];
  if (type != '+' && type != '-' && type != ':' && type != '$' && type != '*') return -1;
  size_t i = at + 1;
  for (; i < in.size() && in[i] != '\r'; ++i)
    if (in[i] == '\n') return -1;
  if (i + 1 >= in.size()) return 0;
  if (in[i + 1] != '\n') return -1;
  const std::string line = in.substr(at + 1, i - at - 1);
  const size_t next = i + 2;
  if (type == '+' || type == '-') return static_cast<long long>(next);
  long long v = 0;
  if (!string2ll(line.data(), line.size(), &v)) return -1;
  if (type == ':') return static_cast<long long>(next);
  if (v < -1) return -1;
  if (type == '$') {
    if (v == -1) return static_cast<long long>(next);
    if (in.size() < next + static_cast<size_t>(v) + 2) return 0;
    if (in[next + v] != '\r' || in[next + v + 1] != '\n') return -1;
    return static_cast<long long>(next + static_cast<size_t>(v) + 2);
  }
  if (v <= 0) return static_cast<long long>(next);
  if (depth >= 32) return -1;
  size_t pos = next;
  for (long long k = 0; k < v; ++k) {
    const long long end = readReply(in, pos, depth + 1);
    if (end <= 0) return end;
    pos = static_cast<size_t>(end);
  }
  return static_cast<long long>(pos);
}

}  // namespace strict_resp
