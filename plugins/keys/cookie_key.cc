// `cookie`: the affinity key is the value of a named cookie. With a ttl, a client that has
// none is given one: the plugin generates a value, hashes it for this request, and hands it
// to the session to send as Set-Cookie, so the client's next requests carry it and land on
// the same backend. This is Envoy's cookie hash policy (route.v3.RouteAction.HashPolicy.Cookie
// with ttl), which HAProxy users know as `cookie ... insert`.
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "lb/core/hash.h"
#include "lb/core/strings.h"
#include "plugins/keys/key_plugins.h"

namespace lb {

namespace {

// xoshiro256** (Blackman & Vigna, "Scrambled Linear Pseudorandom Number Generators", 2018):
// fast, 256 bits of state, good enough that cookie values do not collide. Not a CSPRNG: a
// cookie value only spreads clients over backends, it is no secret and no authenticator.
struct Xoshiro256 {
  uint64_t s[4];
  bool seeded;
};
thread_local Xoshiro256 t_rng;   // zero-initialised, no TLS constructor

uint64_t rotl(uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }

uint64_t splitmix64(uint64_t* x) noexcept {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Once per thread: one getrandom(2). Should the kernel refuse, fall back to time and thread
// id through splitmix64, which still differs per thread and per process start.
void seed(Xoshiro256* r) noexcept {
  if (getrandom(r->s, sizeof(r->s), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(r->s))) {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
                  static_cast<uint64_t>(ts.tv_nsec)) ^
                 (static_cast<uint64_t>(gettid()) << 32);
    for (auto& w : r->s) w = splitmix64(&x);
  }
  if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) r->s[0] = 1;   // the one bad state
  r->seeded = true;
}

uint64_t next(Xoshiro256* r) noexcept {
  if (!r->seeded) seed(r);
  uint64_t result = rotl(r->s[1] * 5, 7) * 9;
  uint64_t t = r->s[1] << 17;
  r->s[2] ^= r->s[0];
  r->s[3] ^= r->s[1];
  r->s[1] ^= r->s[2];
  r->s[0] ^= r->s[3];
  r->s[2] ^= t;
  r->s[3] = rotl(r->s[3], 45);
  return result;
}

// Reads every Cookie header: HTTP/1.1 clients send one, but an intermediary may have split
// them (RFC 6265 §5.4 says one; RFC 9113 §8.2.3 splits them for HTTP/2). The first
// occurrence of the name wins. An empty value counts as absent, as in Envoy, so a client
// with a cleared cookie is given a fresh one.
class CookieKey final : public KeyPlugin {
 public:
  CookieKey(std::string name, Duration ttl) : name_(std::move(name)), ttl_(ttl) {}

  bool extract(const KeyContext& ctx, KeyHash key_hash, uint64_t* hash) const noexcept override {
    if (ctx.request == nullptr) return false;
    for (const auto& h : ctx.request->headers) {
      if (!equalsNoCase(h.name, "cookie")) continue;
      auto value = findCookie(h.value, name_);
      if (!value) continue;
      if (value->empty()) break;
      *hash = hashKeyBytes(key_hash, *value);
      if (ctx.text_out != nullptr) ctx.text_out->bytes = *value;
      return true;
    }
    // Generate only where the session can send it back, and at most one per response: a
    // second cookie policy with a ttl yields no key rather than overwrite the first's.
    if (ttl_.count() <= 0 || ctx.cookie_out == nullptr || ctx.cookie_out->set) return false;
    GeneratedCookie& out = *ctx.cookie_out;
    generateCookieValue(out.value);
    out.value_len = sizeof(out.value);
    out.name = name_;
    out.ttl = ttl_;
    out.set = true;
    *hash = hashKeyBytes(key_hash, std::string_view(out.value, out.value_len));
    // The generated value lives in the session's GeneratedCookie for the whole request.
    if (ctx.text_out != nullptr) ctx.text_out->bytes = std::string_view(out.value, out.value_len);
    return true;
  }

 private:
  std::string name_;
  Duration ttl_;
};

}  // namespace

void generateCookieValue(char (&value)[32]) noexcept {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int half = 0; half < 2; ++half) {
    uint64_t r = next(&t_rng);
    for (int i = 0; i < 16; ++i) value[half * 16 + i] = kHex[(r >> (4 * i)) & 0xf];
  }
}

std::unique_ptr<KeyPlugin> buildCookieKey(const HashPolicy& policy) {
  return std::make_unique<CookieKey>(policy.name, policy.ttl);
}

}  // namespace lb
