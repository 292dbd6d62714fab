// Base64 as RFC 4648 §4 writes it (standard alphabet, '=' padding): how etcd's v3 JSON
// gateway carries keys and values (protobuf's JSON mapping of `bytes`, Go's
// base64.StdEncoding). A codec with no notion of etcd, so it sits in core. Pure; any thread.
#pragma once

#include <string>
#include <string_view>

namespace lb {

std::string base64Encode(std::string_view bytes);

// The 6-bit value of a symbol of the standard alphabet, or -1 ('=' included). For decoders
// that write into their own buffers (memcached's base64 keys, on the request path).
int base64SymbolValue(char c) noexcept;

// Strict: the length a multiple of 4, padding only at the end and only as much as the
// length needs, no whitespace, and the unused low bits of the last symbol zero (so every
// byte string has exactly one encoding that decodes). False, *out untouched, on anything
// else.
bool base64Decode(std::string_view text, std::string* out);

}  // namespace lb
