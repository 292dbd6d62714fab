#include "lb/core/strings.h"

#include <cstdint>
#include <cstring>

namespace lb {

namespace {
unsigned char lowerByte(unsigned char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

// Eight bytes folded at once (SIMD within a register, as in Hacker's Delight ch. 6): a byte
// is an ASCII capital when its low seven bits are >= 'A' and not > 'Z' and its top bit is
// clear; that byte gets 0x20 added (its top-bit marker shifted down by two).
uint64_t lowerWord(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  const uint64_t low7 = w & (0x7F * kOnes);
  const uint64_t ge_a = low7 + (0x80 - 'A') * kOnes;   // top bit set: >= 'A'
  const uint64_t gt_z = low7 + (0x7F - 'Z') * kOnes;   // top bit set: > 'Z'
  const uint64_t upper = (ge_a ^ gt_z) & ~w & (0x80 * kOnes);
  return w | (upper >> 2);
}

uint64_t load(const char* p) {
  uint64_t w;
  memcpy(&w, p, 8);
  return w;
}
}  // namespace

// Whole words, ending on the word that ends the strings, overlapping the one before it:
// comparing a byte twice changes nothing. Under eight bytes, a byte at a time.
bool equalsNoCaseSameSize(std::string_view a, std::string_view b) noexcept {
  const size_t n = a.size();
  if (n < 8) {
    for (size_t i = 0; i < n; ++i)
      if (lowerByte(static_cast<unsigned char>(a[i])) !=
          lowerByte(static_cast<unsigned char>(b[i])))
        return false;
    return true;
  }
  for (size_t i = 0; i + 8 < n; i += 8)
    if (lowerWord(load(a.data() + i)) != lowerWord(load(b.data() + i))) return false;
  return lowerWord(load(a.data() + n - 8)) == lowerWord(load(b.data() + n - 8));
}

bool splitLongOption(std::string* arg, std::string* value) {
  const size_t eq = arg->find('=');
  if (arg->rfind("--", 0) != 0 || eq == std::string::npos) return false;
  *value = arg->substr(eq + 1);
  arg->resize(eq);
  return true;
}

bool takeOptionValue(std::span<char* const> args, size_t* i, bool has_inline,
                     const std::string& name, std::string* value, std::string* error) {
  if (has_inline) return true;
  if (*i + 1 >= args.size()) {
    *error = name + ": missing value";
    return false;
  }
  *value = args[++*i];
  return true;
}

}  // namespace lb
