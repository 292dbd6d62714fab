// Result-style returns for code that must report every problem at once (config loading and
// validation) rather than stop at the first.
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace lb {

// Where in a source file something was written; line 0 means "not from a file".
struct SourcePos {
  uint32_t line = 0;
  uint32_t column = 0;
};

struct ConfigError {
  std::string file;
  SourcePos pos;
  std::string path;      // key path: clusters.cache.backends[1].weight
  std::string message;   // must be >= 1, got 0

  // "lb.toml:14:3: clusters.cache.backends[1].weight: must be >= 1, got 0"
  std::string format() const {
    std::string out = file;
    if (pos.line > 0) out += ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column);
    out += ": ";
    if (!path.empty()) out += path + ": ";
    out += message;
    return out;
  }
};

using Errors = std::vector<ConfigError>;

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}            // NOLINT: implicit on purpose
  Result(Errors errors) : v_(std::move(errors)) {}     // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  const Errors& errors() const { return std::get<1>(v_); }

 private:
  std::variant<T, Errors> v_;
};

}  // namespace lb
