#include "lb/membership/json_positions.h"

#include <algorithm>
#include <cstdint>

namespace lb {

namespace {

// A cursor over the text that knows its line and column.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  bool done() const { return at_ >= text_.size(); }
  char peek() const { return done() ? '\0' : text_[at_]; }
  SourcePos pos() const { return {line_, column_}; }

  void advance() {
    if (done()) return;
    const auto c = static_cast<unsigned char>(text_[at_++]);
    if (c == '\n') {
      ++line_;
      column_ = 1;
    } else if (at_ >= text_.size() || (static_cast<unsigned char>(text_[at_]) & 0xC0) != 0x80) {
      // The column moves once per character: after its last UTF-8 byte.
      ++column_;
    }
  }

  void skipSpace() {
    while (!done() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      advance();
  }

  // At a '"': reads the string, decoding its escapes (keys are compared decoded, as nlohmann
  // stores them).
  std::string readString() {
    std::string out;
    advance();   // the opening quote
    while (!done() && peek() != '"') {
      if (peek() != '\\') {
        out.push_back(peek());
        advance();
        continue;
      }
      advance();
      const char e = peek();
      advance();
      switch (e) {
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': appendUtf8(out, readCodePoint()); break;
        default: out.push_back(e); break;   // '"', '\\', '/'
      }
    }
    advance();   // the closing quote
    return out;
  }

  // A number, true, false or null: everything up to the next delimiter.
  void skipLiteral() {
    while (!done() && std::string_view(",]} \t\r\n").find(peek()) == std::string_view::npos)
      advance();
  }

 private:
  uint32_t readHex4() {
    uint32_t v = 0;
    for (int i = 0; i < 4 && !done(); ++i) {
      const char c = peek();
      advance();
      v = v * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
  }

  // After "\u": one code point, joining a surrogate pair.
  uint32_t readCodePoint() {
    uint32_t cp = readHex4();
    if (cp >= 0xD800 && cp <= 0xDBFF && peek() == '\\') {
      advance();
      advance();   // 'u'
      const uint32_t low = readHex4();
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    return cp;
  }

  static void appendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  std::string_view text_;
  size_t at_ = 0;
  uint32_t line_ = 1;
  uint32_t column_ = 1;
};

// An object or array being walked.
struct Frame {
  bool object = false;
  std::string path;
  size_t count = 0;                       // elements so far (arrays)
  std::vector<std::string> keys;          // keys so far (objects; documents have a handful)
};

std::string childPath(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

}  // namespace

JsonPositions indexJsonPositions(std::string_view text) {
  JsonPositions out;
  // nlohmann skips a UTF-8 byte order mark before the text; editors do not show it, so it
  // takes no column either.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  Cursor c(text);
  std::vector<Frame> stack;
  std::string path;   // of the value about to be read
  enum class Next { kValue, kKey, kAfterValue };
  Next next = Next::kValue;
  while (true) {
    c.skipSpace();
    if (c.done()) break;
    if (next == Next::kKey) {
      if (c.peek() != '"') break;
      Frame& f = stack.back();
      const SourcePos at = c.pos();
      std::string key = c.readString();
      path = childPath(f.path, key);
      for (const auto& k : f.keys)
        if (k == key) {
          out.duplicates.emplace_back(path, at);
          break;
        }
      f.keys.push_back(std::move(key));
      // The first of two equal keys keeps its position: it is what a reader looks for first.
      out.keys.emplace(path, at);
      c.skipSpace();
      if (c.peek() != ':') break;
      c.advance();
      next = Next::kValue;
      continue;
    }
    if (next == Next::kValue) {
      out.values.emplace(path, c.pos());
      const char ch = c.peek();
      if (ch == '{' || ch == '[') {
        if (stack.size() >= kJsonIndexMaxDepth) break;
        c.advance();
        stack.push_back({ch == '{', path, 0, {}});
        c.skipSpace();
        if (c.peek() == (ch == '{' ? '}' : ']')) {
          c.advance();
          stack.pop_back();
          next = Next::kAfterValue;
        } else if (ch == '{') {
          next = Next::kKey;
        } else {
          path = stack.back().path + "[0]";
        }
        continue;
      }
      if (ch == '"')
        c.readString();
      else
        c.skipLiteral();
      next = Next::kAfterValue;
      continue;
    }
    // After a value: a separator or the end of its container.
    if (stack.empty()) break;
    const char ch = c.peek();
    c.advance();
    Frame& f = stack.back();
    if (ch == ',') {
      if (f.object) {
        next = Next::kKey;
      } else {
        path = f.path + "[" + std::to_string(++f.count) + "]";
        next = Next::kValue;
      }
    } else if (ch == '}' || ch == ']') {
      stack.pop_back();
    } else {
      break;
    }
  }
  return out;
}

SourcePos positionOfOffset(std::string_view text, size_t offset) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF" && offset >= 3) {
    text.remove_prefix(3);
    offset -= 3;
  }
  Cursor c(text.substr(0, std::min(offset, text.size())));
  while (!c.done()) c.advance();
  return c.pos();
}

}  // namespace lb
