// The headers nearly every test file includes, compiled once per build into a precompiled
// header (Makefile, TEST_PCH) and put in front of each test file with -include. gtest alone
// is ~60% of a small test file's compile; precompiled, a test file builds ~30% faster, which
// on CI's 2 cores is minutes per build. Only standard and gtest headers belong here: a test
// must still include what it uses, so that it builds the same without the precompiled copy
// (GCC falls back to this text whenever the flags differ from the ones it was built with).
// No include guard: compiled on its own, GCC takes "#pragma once" in a main file for a slip.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
