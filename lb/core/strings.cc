#include "lb/core/strings.h"

namespace lb {

bool equalsNoCase(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    unsigned char x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    if (x >= 'A' && x <= 'Z') x += 32;
    if (y >= 'A' && y <= 'Z') y += 32;
    if (x != y) return false;
  }
  return true;
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
