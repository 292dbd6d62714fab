#include "lb/config/prescan.h"

namespace lb {

namespace {

bool isBareKeyChar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '-';
}

// Walks the text byte by byte, knowing only as much TOML as it takes to tell strings and
// comments (where any character is fine) from everything else (where TOML 1.0 allows ASCII
// only), and a table header's '[' from an array's.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  std::optional<PrescanError> run() {
    while (i_ < text_.size()) {
      std::optional<PrescanError> e;
      switch (state_) {
        case State::kNormal: e = normal(); break;
        case State::kBare: e = bare(); break;
        case State::kComment: comment(); break;
        case State::kBasic: quoted('"', true); break;
        case State::kLiteral: quoted('\'', false); break;
        case State::kMultiBasic: e = multiline('"'); break;
        case State::kMultiLiteral: e = multiline('\''); break;
      }
      if (e) return e;
    }
    return std::nullopt;
  }

 private:
  enum class State { kNormal, kBare, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral };

  unsigned char at(size_t j) const { return j < text_.size() ? text_[j] : 0; }
  // The position of the character starting at byte i_ (a UTF-8 lead byte).
  SourcePos here() const { return {line_, column_ + 1}; }

  void step() {
    unsigned char c = text_[i_++];
    if (c == '\n') {
      ++line_;
      column_ = 0;
    } else if ((c & 0xC0) != 0x80) {
      ++column_;   // continuation bytes belong to the code point already counted
    }
  }
  void step(size_t n) {
    for (size_t k = 0; k < n && i_ < text_.size(); ++k) step();
  }
  size_t quoteRun(char q) const {
    size_t n = 0;
    while (at(i_ + n) == static_cast<unsigned char>(q)) ++n;
    return n;
  }

  static bool endsBareValue(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',' || c == ']' ||
           c == '}' || c == '#';
  }

  std::optional<PrescanError> nonAscii() const {
    return PrescanError{here(), "non-ASCII character outside a string or comment (TOML keys "
                                "are ASCII; quote the key or the value)"};
  }

  // After a value, or an opening bracket: does a value or a key come next?
  void settleContext() { value_ = !nesting_.empty() && nesting_.back() == '['; }

  std::optional<PrescanError> normal() {
    unsigned char c = text_[i_];
    if (c == '\n') {
      line_start_ = true;
      in_header_ = false;
      if (nesting_.empty()) value_ = false;
      step();
      return std::nullopt;
    }
    if (c >= 0x80) return nonAscii();
    if (c == '#') {
      state_ = State::kComment;
    } else if (c == '"' || c == '\'') {
      bool multi = quoteRun(static_cast<char>(c)) >= 3;
      state_ = c == '"' ? (multi ? State::kMultiBasic : State::kBasic)
                        : (multi ? State::kMultiLiteral : State::kLiteral);
      step(multi ? 3 : 1);
      line_start_ = false;
      return std::nullopt;
    } else if (c == '[' && line_start_ && nesting_.empty()) {
      // A table header: toml++ 3.3 assumes a key follows (#294).
      in_header_ = true;
      size_t j = i_ + 1;
      if (at(j) == '[') ++j;
      while (at(j) == ' ' || at(j) == '\t') ++j;
      unsigned char k = at(j);
      if (!(isBareKeyChar(k) || k == '"' || k == '\'' || k == ']')) {
        line_start_ = false;
        step(j - i_);
        return PrescanError{here(), "expected a table name after '['"};
      }
    } else if ((c == '[' || c == '{') && !in_header_) {
      nesting_.push_back(static_cast<char>(c));
      settleContext();
    } else if ((c == ']' || c == '}') && !in_header_ && !nesting_.empty()) {
      nesting_.pop_back();
      settleContext();
    } else if (c == ',' && !in_header_) {
      settleContext();
    } else if (c == '=' && !in_header_) {
      value_ = true;
    } else if (value_ && !endsBareValue(c)) {
      // A bare value (number, date, true, or garbage): toml++ scans it up to 127 characters
      // ahead, quotes included, testing each for whitespace, which is undefined for most
      // non-ASCII characters (#295). So a quote here does not open a string.
      state_ = State::kBare;
    }
    if (c != ' ' && c != '\t' && c != '\r') line_start_ = false;
    step();
    return std::nullopt;
  }

  std::optional<PrescanError> bare() {
    unsigned char c = text_[i_];
    if (endsBareValue(c)) {
      state_ = State::kNormal;   // the terminator is Normal's
      settleContext();
      return std::nullopt;
    }
    if (c >= 0x80) return nonAscii();
    step();
    return std::nullopt;
  }

  void comment() {
    if (text_[i_] == '\n')
      state_ = State::kNormal;   // the newline itself is Normal's
    else
      step();
  }

  // A one-line string; an unterminated one ends at the newline (toml++ reports it).
  void quoted(char q, bool escapes) {
    unsigned char c = text_[i_];
    if (c == '\n') {
      state_ = State::kNormal;
    } else if (escapes && c == '\\') {
      step(2);
    } else {
      if (c == static_cast<unsigned char>(q)) state_ = State::kNormal;
      step();
    }
  }

  std::optional<PrescanError> multiline(char q) {
    unsigned char c = text_[i_];
    if (c == static_cast<unsigned char>(q)) {
      size_t run = quoteRun(q);
      if (run >= 3) {
        // Up to two quotes may sit right before the closing delimiter ("""a""""").
        step(run > 5 ? 5 : run);
        state_ = State::kNormal;
        return std::nullopt;
      }
      step(run);
      return std::nullopt;
    }
    if (q == '"' && c == '\\') {
      size_t j = i_ + 1;
      while (at(j) == ' ' || at(j) == '\t' || at(j) == '\r') ++j;
      if (at(j) == '\n') {
        // A line-ending backslash: toml++ 3.3 trims the following whitespace with a check that
        // is undefined for most non-ASCII characters (#190, #295).
        while (at(j) == ' ' || at(j) == '\t' || at(j) == '\r' || at(j) == '\n') ++j;
        if (at(j) >= 0x80) {
          step(j - i_);
          return PrescanError{here(), "a non-ASCII character right after a line-ending "
                                      "backslash is not supported; escape it (\\uXXXX)"};
        }
        step(j - i_);
        return std::nullopt;
      }
      step(2);
      return std::nullopt;
    }
    step();
    return std::nullopt;
  }

  std::string_view text_;
  size_t i_ = 0;
  uint32_t line_ = 1;
  uint32_t column_ = 0;   // code points before i_ on this line
  State state_ = State::kNormal;
  bool line_start_ = true;   // only whitespace so far on this line
  bool in_header_ = false;
  std::string nesting_;      // the open '[' and '{' of values, innermost last
  bool value_ = false;       // a value, not a key, comes next
};

}  // namespace

std::optional<PrescanError> prescanToml(std::string_view text) { return Scanner(text).run(); }

}  // namespace lb
