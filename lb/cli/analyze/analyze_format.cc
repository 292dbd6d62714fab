#include "lb/cli/analyze/analyze_format.h"

#include <cmath>
#include <cstdio>

namespace lb {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one (RFC 3629:
// no overlongs, no surrogates, nothing above U+10FFFF).
size_t utf8SequenceLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;   // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return len;
}

std::string shareList(const SelectorFigures& f) {
  std::string out = "{";
  for (size_t i = 0; i < f.backends.size(); ++i) {
    if (i > 0) out += ", ";
    out += jsonString(f.backends[i]) + ": " + fixedDecimal(f.balance.shares[i]);
  }
  return out + "}";
}

std::string moveObject(const MoveFigures& m) {
  return "{\"backend\": " + jsonString(m.backend) + ", \"moved\": " + fixedDecimal(m.moved) +
         ", \"ideal\": " + fixedDecimal(m.ideal) +
         ", \"collateral\": " + fixedDecimal(m.collateral) + "}";
}

std::string padLeft(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string padRight(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// moved / ideal as "4.00x"; "-" when the ideal is zero.
std::string overIdeal(const MoveFigures& m) {
  return m.ideal > 0 ? fixedDecimal(m.moved / m.ideal, 2) + "x" : "-";
}

}  // namespace

std::string jsonString(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else if (c >= 0x80) {
      const size_t len = utf8SequenceLength(s, i);
      if (len == 0) {
        out += "\\ufffd";
        ++i;
        continue;
      }
      out.append(s.substr(i, len));
      i += len;
      continue;
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  out += '"';
  return out;
}

std::string fixedDecimal(double v, int decimals) {
  if (!std::isfinite(v)) v = 0;
  char buf[64];
  snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  // "-0.0000" is valid JSON but reads as a bug.
  std::string s = buf;
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

std::string analyzeJson(std::span<const SelectorFigures> figures) {
  std::string out = "[";
  for (size_t i = 0; i < figures.size(); ++i) {
    const auto& f = figures[i];
    if (i > 0) out += ",\n ";
    out += "{\"selector\": " + jsonString(f.selector) +
           ", \"backends\": " + std::to_string(f.backends.size()) +
           ", \"keys\": " + std::to_string(f.keys) + ",\n";
    out += "  \"balance\": {\"max_over_mean\": " + fixedDecimal(f.balance.max_over_mean) +
           ", \"stddev_pct\": " + fixedDecimal(f.balance.stddev_pct) +
           ", \"shares\": " + shareList(f) + "},\n";
    out += "  \"remove\": " + moveObject(f.remove) + ",\n";
    out += "  \"add\":    " + moveObject(f.add) + "}";
  }
  return out + "]\n";
}

std::string analyzeText(std::span<const SelectorFigures> figures) {
  if (figures.empty()) return "no selectors\n";
  const auto& first = figures.front();
  std::string out = std::to_string(first.backends.size()) + " backends (" +
                    first.backends.front() + ".." + first.backends.back() + "), " +
                    std::to_string(first.keys) + " keys; remove " + first.remove.backend +
                    " (ideal moved " + fixedDecimal(first.remove.ideal) + "), add " +
                    first.add.backend + " (ideal moved " + fixedDecimal(first.add.ideal) +
                    ")\n\n";
  size_t name_width = 8;
  for (const auto& f : figures) name_width = std::max(name_width, f.selector.size());
  const std::string rm = "remove " + first.remove.backend;
  const std::string add = "add " + first.add.backend;
  // Group titles start over the first column of their group: balance is 2+8+2+7 wide, each
  // movement group 2+8+2+7+2+10.
  out += padRight("", name_width) + "  " + padRight("balance", 17) + "  " +
         padRight(rm, 29) + "  " + add + "\n";
  out += padRight("selector", name_width) + "  max/mean  stddev%     moved  x ideal  collateral" +
         "     moved  x ideal  collateral\n";
  for (const auto& f : figures) {
    out += padRight(f.selector, name_width) + "  " +
           padLeft(fixedDecimal(f.balance.max_over_mean), 8) + "  " +
           padLeft(fixedDecimal(f.balance.stddev_pct, 2), 7) + "  " +
           padLeft(fixedDecimal(f.remove.moved), 8) + "  " + padLeft(overIdeal(f.remove), 7) +
           "  " + padLeft(fixedDecimal(f.remove.collateral), 10) + "  " +
           padLeft(fixedDecimal(f.add.moved), 8) + "  " + padLeft(overIdeal(f.add), 7) + "  " +
           padLeft(fixedDecimal(f.add.collateral), 10) + "\n";
  }
  return out;
}

std::string preferenceLine(std::string_view key, std::string_view hashed, uint64_t hash,
                           std::span<const std::string> order,
                           std::span<const std::string> zones) {
  // hash_hex: the same 64 bits as a string (the access log's key= field): jq and JavaScript
  // read the number as a double and round it.
  char hex[24];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  std::string out = "{\"key\": " + jsonString(key);
  if (!hashed.empty()) out += ", \"hashed\": " + jsonString(hashed);
  out += ", \"hash\": " + std::to_string(hash) + ", \"hash_hex\": \"" + hex + "\", \"order\": [";
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0) out += ", ";
    out += jsonString(order[i]);
  }
  out += "]";
  if (!zones.empty()) {
    out += ", \"zones\": [";
    for (size_t i = 0; i < zones.size(); ++i) out += (i > 0 ? ", " : "") + jsonString(zones[i]);
    out += "]";
  }
  return out + "}\n";
}

}  // namespace lb
