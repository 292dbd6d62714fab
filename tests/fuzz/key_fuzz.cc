// libFuzzer target for the key plugins and the key chain: arbitrary request targets, header
// lists and socket addresses must never crash a plugin, never make one read outside its
// input, and always give the same hash for the same request.
//
// Build and run (clang's libFuzzer; not part of `make`, which builds with g++):
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I. \
//     tests/fuzz/key_fuzz.cc plugins/builtin.cc plugins/keys/*.cc plugins/selectors/*.cc \
//     -lxxhash -lz -o build/key_fuzz
//   build/key_fuzz -max_total_time=60 tests/fuzz/corpus/key
//
// Input layout: byte 0 = flags (bit 0: CRC32 instead of XXH64; bit 1: a place for a generated
// cookie; bits 2-3: peer family, bits 4-5: local family: 0 none, 1 IPv4, 2 IPv6, 3 AF_UNIX);
// bytes 1-36 = peer and local, each 16 address bytes + 2 port bytes; the rest is text: the
// first line is the request-target, each further line a header "name:value".
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "plugins/builtin.h"
#include "plugins/keys/key_chain.h"
#include "plugins/keys/key_plugins.h"

namespace {

using namespace lb;

bool within(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

void check(bool ok) {
  if (!ok) abort();
}

sockaddr_storage address(int family, const uint8_t* bytes) {
  sockaddr_storage ss{};
  uint16_t port = static_cast<uint16_t>(bytes[16] << 8 | bytes[17]);
  if (family == 1) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    memcpy(&a->sin_addr, bytes, 4);
  } else if (family == 2) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    memcpy(&a->sin6_addr, bytes, 16);
  } else {
    ss.ss_family = AF_UNIX;
  }
  return ss;
}

struct Plugins {
  std::vector<std::unique_ptr<KeyPlugin>> each;
  KeyChain chain;
};

const Plugins& plugins() {
  static const Plugins p = [] {
    Plugins out;
    std::vector<HashPolicy> policies;
    for (const auto& info : allKeyPlugins()) {
      HashPolicy hp;
      hp.kind = std::string(info.name);
      hp.name = info.name == "cookie" ? "lb" : info.name == "query" ? "k" : "x-key";
      hp.ttl = Duration(info.name == "cookie" ? 1000 : 0);
      out.each.push_back(info.build(hp));
      policies.push_back(hp);
    }
    policies[1].terminal = true;
    auto chain = KeyChain::build(policies, "http");
    check(chain.ok());
    out.chain = std::move(chain.value());
    return out;
  }();
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 37) return 0;
  uint8_t flags = data[0];
  KeyHash kh = (flags & 1) ? KeyHash::kCrc32 : KeyHash::kXxh64;
  sockaddr_storage peer = address((flags >> 2) & 3, data + 1);
  sockaddr_storage local = address((flags >> 4) & 3, data + 19);
  std::string_view text(reinterpret_cast<const char*>(data + 37), size - 37);

  // First line: the target; then "name:value" lines.
  size_t eol = text.find('\n');
  std::string_view target = text.substr(0, eol);
  std::vector<HttpHeader> headers;
  std::string_view rest = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
  while (!rest.empty() && headers.size() < 64) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    size_t colon = line.find(':');
    headers.push_back({line.substr(0, colon),
                       colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1)});
  }
  HttpRequestView request{"GET", target, headers};

  // The parsing helpers only ever return views into their input.
  check(within(targetPath(target), target) || targetPath(target) == "/");
  if (auto q = findQueryParam(target, "k")) check(within(*q, target));
  for (const auto& h : headers)
    if (auto c = findCookie(h.value, "lb")) check(within(*c, h.value));

  const Plugins& p = plugins();
  for (const auto& plugin : p.each) {
    GeneratedCookie out1, out2;
    KeyContext ctx{reinterpret_cast<sockaddr*>(&peer), reinterpret_cast<sockaddr*>(&local),
                   &request, (flags & 2) ? &out1 : nullptr};
    uint64_t h1 = 0, h2 = 0;
    bool ok1 = plugin->extract(ctx, kh, &h1);
    ctx.cookie_out = (flags & 2) ? &out2 : nullptr;
    bool ok2 = plugin->extract(ctx, kh, &h2);
    check(ok1 == ok2);
    // Same request, same key, unless each call generated its own fresh cookie.
    if (ok1 && !out1.set) check(h1 == h2);
    check(out1.set == out2.set);
    if (out1.set) check(out1.value_len == 32);
    KeyContext tcp{reinterpret_cast<sockaddr*>(&peer), reinterpret_cast<sockaddr*>(&local),
                   nullptr, nullptr};
    uint64_t h3 = 0;
    plugin->extract(tcp, kh, &h3);   // no request: L7 plugins must say "no key", not crash
  }
  GeneratedCookie out;
  KeyContext ctx{reinterpret_cast<sockaddr*>(&peer), reinterpret_cast<sockaddr*>(&local),
                 &request, &out};
  uint64_t h = 0;
  p.chain.compute(ctx, kh, &h);
  return 0;
}
