// A strict, minimal JSON reader (RFC 8259) for the tests of `lb analyze`: it proves that the
// output parses, and lets tests read figures by key instead of by regex. Test-only; not for
// untrusted or large input.
#pragma once

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lb::testjson {

struct Value {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string text;                       // string value, or a number's literal text
  std::vector<Value> items;               // array
  std::vector<std::pair<std::string, Value>> members;   // object, in order

  const Value* get(std::string_view key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
  // obj["a"]["b"] with a null Value for anything missing, so chains never crash a test.
  const Value& operator[](std::string_view key) const {
    static const Value kMissing;
    const Value* v = get(key);
    return v ? *v : kMissing;
  }
};

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  // The single value that `s` holds (surrounding whitespace allowed); nullopt if not JSON.
  std::optional<Value> document() {
    Value v;
    if (!value(v)) return std::nullopt;
    space();
    if (i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  bool value(Value& v) {
    if (++depth_ > 64) return false;
    space();
    if (i_ >= s_.size()) return false;
    bool ok;
    const char c = s_[i_];
    if (c == '{') {
      ok = object(v);
    } else if (c == '[') {
      ok = array(v);
    } else if (c == '"') {
      v.kind = Value::Kind::kString;
      ok = string(v.text);
    } else if (c == 't' || c == 'f') {
      v.kind = Value::Kind::kBool;
      v.boolean = c == 't';
      ok = literal(c == 't' ? "true" : "false");
    } else if (c == 'n') {
      ok = literal("null");
    } else {
      ok = number(v);
    }
    --depth_;
    return ok;
  }
  bool number(Value& v) {
    const size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    const auto digits = [&] {
      const size_t from = i_;
      while (i_ < s_.size() && isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      return i_ - from;
    };
    const size_t int_start = i_;
    const size_t n = digits();
    if (n == 0 || (n > 1 && s_[int_start] == '0')) return false;
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (digits() == 0) return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (digits() == 0) return false;
    }
    v.kind = Value::Kind::kNumber;
    v.text = std::string(s_.substr(start, i_ - start));
    v.number = strtod(v.text.c_str(), nullptr);
    return true;
  }
  bool string(std::string& out) {
    ++i_;   // opening quote
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i_ >= s_.size()) return false;
      const char e = s_[i_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) return false;
          unsigned cp = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = s_[i_++];
            if (!isxdigit(static_cast<unsigned char>(h))) return false;
            cp = cp * 16 + static_cast<unsigned>(isdigit(h) ? h - '0' : (tolower(h) - 'a' + 10));
          }
          // UTF-8 of a BMP code point (enough for these tests; surrogates kept as is).
          if (cp < 0x80) {
            out += static_cast<char>(cp);
          } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
          }
          break;
        }
        default: return false;
      }
    }
    return false;
  }
  bool array(Value& v) {
    v.kind = Value::Kind::kArray;
    ++i_;
    space();
    if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
    while (true) {
      Value item;
      if (!value(item)) return false;
      v.items.push_back(std::move(item));
      space();
      if (i_ >= s_.size()) return false;
      if (s_[i_] == ']') return ++i_, true;
      if (s_[i_++] != ',') return false;
    }
  }
  bool object(Value& v) {
    v.kind = Value::Kind::kObject;
    ++i_;
    space();
    if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
    while (true) {
      space();
      if (i_ >= s_.size() || s_[i_] != '"') return false;
      std::string key;
      if (!string(key)) return false;
      space();
      if (i_ >= s_.size() || s_[i_++] != ':') return false;
      Value item;
      if (!value(item)) return false;
      v.members.emplace_back(std::move(key), std::move(item));
      space();
      if (i_ >= s_.size()) return false;
      if (s_[i_] == '}') return ++i_, true;
      if (s_[i_++] != ',') return false;
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;
};

inline std::optional<Value> parse(std::string_view s) { return Reader(s).document(); }

}  // namespace lb::testjson
