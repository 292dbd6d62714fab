#include "lb/routing/handover.h"

#include <algorithm>

namespace lb {

namespace {

// The i-th of kHandoverSamples evenly spaced hashes over a `bits`-bit key hash: the midpoint
// of each of equal intervals, as tableFingerprint samples them.
uint64_t sampleHash(uint64_t i, int bits) {
  const uint64_t step =
      bits >= 64 ? (~0ull / kHandoverSamples) + 1
                 : std::max<uint64_t>((uint64_t{1} << bits) / kHandoverSamples, 1);
  return i * step + step / 2;
}

// Each of `from`'s names as an index of `to`, kLeaving when absent; `leaving` gets the
// absent names.
std::vector<uint32_t> indexByName(const std::vector<std::string>& from,
                                  const std::vector<std::string>& to,
                                  std::vector<std::string>* leaving) {
  std::vector<uint32_t> out(from.size(), HandoverWindow::kLeaving);
  for (size_t i = 0; i < from.size(); ++i) {
    const auto it = std::find(to.begin(), to.end(), from[i]);
    if (it != to.end())
      out[i] = static_cast<uint32_t>(it - to.begin());
    else
      leaving->push_back(from[i]);
  }
  return out;
}

}  // namespace

double rampMoment(uint64_t hash) noexcept {
  uint64_t z = hash + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

double HandoverWindow::progressAt(int64_t now_ms) const noexcept {
  if (now_ms >= until_ms || until_ms <= since_ms) return 1;
  if (now_ms <= since_ms) return 0;
  return static_cast<double>(now_ms - since_ms) / static_cast<double>(until_ms - since_ms);
}

bool HandoverWindow::holdsAt(uint64_t hash, int64_t now_ms) const noexcept {
  return now_ms < until_ms && rampMoment(hash) >= progressAt(now_ms);
}

double HandoverWindow::rampRatioAt(int64_t now_ms) const noexcept {
  if (moved_moments.empty()) return 1;
  const double p = progressAt(now_ms);
  if (p >= 1) return 1;
  const auto moved = std::lower_bound(moved_moments.begin(), moved_moments.end(), p);
  return static_cast<double>(moved - moved_moments.begin()) /
         static_cast<double>(moved_moments.size());
}

std::shared_ptr<HandoverWindow> handoverAcross(
    const std::shared_ptr<const SelectorTable>& previous,
    const std::vector<std::string>& previous_names, uint64_t previous_fingerprint,
    const std::shared_ptr<const HandoverWindow>& open, const SelectorTable& current,
    const std::vector<std::string>& current_names, int hash_bits, int64_t now_ms,
    int64_t window_ms, int64_t stamped_ms) {
  if (window_ms <= 0 || previous == nullptr || previous->hostCount() == 0 ||
      previous_names.size() != previous->hostCount())
    return nullptr;
  auto w = std::make_shared<HandoverWindow>();
  for (uint64_t i = 0; i < kHandoverSamples; ++i) {
    const uint64_t h = sampleHash(i, hash_bits);
    if (previous_names[previous->pick(h, 0)] != current_names[current.pick(h, 0)])
      w->moved_moments.push_back(rampMoment(h));
  }
  if (w->moved_moments.empty()) {
    // Nobody's owner changed: the open window, if any, goes on over the new table.
    if (open == nullptr || now_ms >= open->until_ms) return nullptr;
    auto carried = std::make_shared<HandoverWindow>(*open);
    carried->leaving.clear();
    carried->leaving_backends.clear();
    carried->to_current = indexByName(carried->previous_names, current_names, &carried->leaving);
    return carried;
  }
  std::sort(w->moved_moments.begin(), w->moved_moments.end());
  w->moved_ratio =
      static_cast<double>(w->moved_moments.size()) / static_cast<double>(kHandoverSamples);
  w->previous = previous;
  w->previous_names = previous_names;
  w->to_current = indexByName(previous_names, current_names, &w->leaving);
  w->from_fingerprint = previous_fingerprint;
  const bool stamped = stamped_ms > 0 && stamped_ms > now_ms - window_ms &&
                       stamped_ms <= now_ms + kMaxStampAheadMs;
  w->since_ms = stamped ? stamped_ms : now_ms;
  w->until_ms = w->since_ms + window_ms;
  return w;
}

}  // namespace lb
