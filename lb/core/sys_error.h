// The text of a libuv error as lb shows it to clients, operators and logs.
//
// strerror's capitalised form ("Connection refused"), not uv_strerror's ("connection
// refused"): that is what nutcracker, redis-cli, hiredis and the C library say, and what
// clients and scripts match. libuv on Unix reports a system error as -errno, so the text is
// strerror's; its own codes (UV_EOF, the UV_EAI_* of getaddrinfo) have no errno and keep
// uv_strerror's text. Any thread: strerrordesc_np (glibc 2.32) returns a constant string, no
// per-thread buffer, no allocation.
#pragma once

#include <string.h>
#include <uv.h>

namespace lb {

inline const char* sysErrorText(int uv_err) noexcept {
  // UV_EAI_* sit around -3000 and UV_EOF at -4095 on Unix; errno values stay far below.
  if (uv_err < 0 && uv_err > -1000) {
    if (const char* s = strerrordesc_np(-uv_err); s != nullptr) return s;
  }
  return uv_strerror(uv_err);
}

}  // namespace lb
