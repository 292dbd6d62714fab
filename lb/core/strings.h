// Small string helpers every layer needs. Pure, allocation-free, any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace lb {

// ASCII case-insensitive equality: header names, tokens and cookie attributes compare this
// way (RFC 9110 §5.1). Locale-free on purpose: strcasecmp would fold by the C locale.
// The length test inline, so that a caller comparing many names against one pays a call
// only for those of its length.
bool equalsNoCaseSameSize(std::string_view a, std::string_view b) noexcept;
inline bool equalsNoCase(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && equalsNoCaseSameSize(a, b);
}

// A command-line argument of the form "--name=value" split in place: true, with *arg now
// "--name" and *value "value"; false, both untouched, for anything else ("-x", "--name",
// "a=b"). Every subcommand's parser accepts both "--name value" and "--name=value" this way.
bool splitLongOption(std::string* arg, std::string* value);

// The value of the option args[*i], whose name is `name` once splitLongOption has split it:
// the part after '=' when it had one (`has_inline`, already in *value), else the next
// argument (and *i moves past it). False, with *error "NAME: missing value", when there is
// none. The one way every subcommand takes an option's value.
bool takeOptionValue(std::span<char* const> args, size_t* i, bool has_inline,
                     const std::string& name, std::string* value, std::string* error);

}  // namespace lb
