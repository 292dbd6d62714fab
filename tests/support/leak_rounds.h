// How many times a leak test repeats what it checks (a connection, a spliced request): every
// descriptor and pipe it takes must come back. The sanitizer build runs a fifth of the
// rounds: under AddressSanitizer each round costs ~20 times as much (the 10,000 spliced
// connections took 3.5 minutes of a CI run), and the plain build runs them all. The
// integration tests themselves build without the sanitizers (Makefile, INTEG_OPT): the SAN
// build says the lb they start is sanitized with LB_SANITIZED_LB.
#pragma once

namespace lb::test {

#if defined(LB_SANITIZED_LB)
inline constexpr int kLeakRoundsDivisor = 5;
#else
inline constexpr int kLeakRoundsDivisor = 1;
#endif

// `n` rounds in the plain build, n / kLeakRoundsDivisor under the sanitizers.
constexpr int leakRounds(int n) { return n / kLeakRoundsDivisor; }

}  // namespace lb::test
