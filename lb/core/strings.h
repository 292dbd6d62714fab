// Small string helpers every layer needs. Pure, allocation-free, any thread.
#pragma once

#include <string_view>

namespace lb {

// ASCII case-insensitive equality: header names, tokens and cookie attributes compare this
// way (RFC 9110 §5.1). Locale-free on purpose: strcasecmp would fold by the C locale.
bool equalsNoCase(std::string_view a, std::string_view b) noexcept;

}  // namespace lb
