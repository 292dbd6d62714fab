// A small strict JSON reader (RFC 8259) for tests: the Grafana dashboard, the admin API's
// bodies and Prometheus' HTTP API. Rejects what a strict parser rejects (trailing commas,
// comments, single quotes, leading zeros, unescaped control characters, trailing garbage) and
// throws std::runtime_error naming the byte offset. Not for lb/ itself: lb only writes JSON.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lb::testing {

class JsonValue {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  Type type() const { return type_; }
  bool isNull() const { return type_ == Type::kNull; }
  bool isObject() const { return type_ == Type::kObject; }
  bool isArray() const { return type_ == Type::kArray; }
  bool isString() const { return type_ == Type::kString; }
  bool isNumber() const { return type_ == Type::kNumber; }
  bool isBool() const { return type_ == Type::kBool; }

  bool asBool() const { return expect(Type::kBool).bool_; }
  double asNumber() const { return expect(Type::kNumber).number_; }
  const std::string& numberText() const { return expect(Type::kNumber).string_; }
  const std::string& asString() const { return expect(Type::kString).string_; }
  const std::vector<JsonValue>& items() const { return expect(Type::kArray).items_; }
  // Object members in document order.
  const std::vector<std::pair<std::string, JsonValue>>& members() const {
    return expect(Type::kObject).members_;
  }
  bool has(std::string_view key) const { return find(key) != nullptr; }
  const JsonValue* find(std::string_view key) const {
    for (const auto& [k, v] : expect(Type::kObject).members_)
      if (k == key) return &v;
    return nullptr;
  }
  const JsonValue& operator[](std::string_view key) const {
    const JsonValue* v = find(key);
    if (v == nullptr) throw std::runtime_error("json: no member '" + std::string(key) + "'");
    return *v;
  }
  const JsonValue& operator[](size_t i) const { return items().at(i); }

 private:
  friend class JsonReader;
  const JsonValue& expect(Type t) const {
    if (type_ != t) throw std::runtime_error("json: value has another type");
    return *this;
  }
  Type type_ = Type::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;   // string value, or a number's text
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

class JsonReader {
 public:
  // Parses one whole document; throws std::runtime_error on anything RFC 8259 rejects.
  static JsonValue parse(std::string_view text) {
    JsonReader r(text);
    r.ws();
    JsonValue v = r.value(0);
    r.ws();
    if (r.pos_ != text.size()) r.fail("trailing characters");
    return v;
  }

 private:
  explicit JsonReader(std::string_view t) : t_(t) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("json: " + why + " at offset " + std::to_string(pos_));
  }
  bool eof() const { return pos_ >= t_.size(); }
  char peek() const { return eof() ? '\0' : t_[pos_]; }
  void ws() {
    while (!eof() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      ++pos_;
  }
  void literal(std::string_view word) {
    if (t_.substr(pos_, word.size()) != word) fail("bad literal");
    pos_ += word.size();
  }

  JsonValue value(int depth) {
    if (depth > 200) fail("nesting too deep");
    JsonValue v;
    switch (peek()) {
      case '{': object(v, depth); break;
      case '[': array(v, depth); break;
      case '"': v.type_ = JsonValue::Type::kString; v.string_ = string(); break;
      case 't': literal("true"); v.type_ = JsonValue::Type::kBool; v.bool_ = true; break;
      case 'f': literal("false"); v.type_ = JsonValue::Type::kBool; break;
      case 'n': literal("null"); break;
      default: number(v);
    }
    return v;
  }

  void object(JsonValue& v, int depth) {
    v.type_ = JsonValue::Type::kObject;
    ++pos_;
    ws();
    if (peek() == '}') { ++pos_; return; }
    for (;;) {
      ws();
      if (peek() != '"') fail("expected a member name");
      std::string key = string();
      ws();
      if (peek() != ':') fail("expected ':'");
      ++pos_;
      ws();
      v.members_.emplace_back(std::move(key), value(depth + 1));
      ws();
      if (peek() == ',') { ++pos_; continue; }
      if (peek() == '}') { ++pos_; return; }
      fail("expected ',' or '}'");
    }
  }

  void array(JsonValue& v, int depth) {
    v.type_ = JsonValue::Type::kArray;
    ++pos_;
    ws();
    if (peek() == ']') { ++pos_; return; }
    for (;;) {
      ws();
      v.items_.push_back(value(depth + 1));
      ws();
      if (peek() == ',') { ++pos_; continue; }
      if (peek() == ']') { ++pos_; return; }
      fail("expected ',' or ']'");
    }
  }

  unsigned hex4() {
    if (pos_ + 4 > t_.size()) fail("short \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = t_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else fail("bad \\u escape");
    }
    return v;
  }

  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    ++pos_;   // opening quote
    std::string out;
    for (;;) {
      if (eof()) fail("unterminated string");
      char c = t_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') { out += c; continue; }
      if (eof()) fail("unterminated escape");
      char e = t_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (t_.substr(pos_, 2) != "\\u") fail("lone high surrogate");
            pos_ += 2;
            unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("lone low surrogate");
          }
          utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }

  void number(JsonValue& v) {
    size_t start = pos_;
    auto digits = [&] {
      size_t s = pos_;
      while (!eof() && peek() >= '0' && peek() <= '9') ++pos_;
      return pos_ - s;
    };
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (digits() == 0) {
      fail("unexpected character");
    }
    if (peek() == '.') {
      ++pos_;
      if (digits() == 0) fail("digit expected after '.'");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (digits() == 0) fail("digit expected in exponent");
    }
    v.type_ = JsonValue::Type::kNumber;
    v.string_ = std::string(t_.substr(start, pos_ - start));
    v.number_ = std::strtod(v.string_.c_str(), nullptr);
  }

  std::string_view t_;
  size_t pos_ = 0;
};

}  // namespace lb::testing
