// Rise/fall hysteresis over a backend's active checks (HAProxy's `rise` and `fall`): an up
// backend goes down after `fall` failed checks in a row, a down one comes up after `rise`
// passes in a row, and anything shorter changes nothing. A backend that flaps faster than
// that is never reported as flapping: it stays in the state it had.
//
// Pure state, no clock: the checker feeds it one result per check. Main thread only.
#pragma once

#include <cstdint>

namespace lb {

class CheckHysteresis {
 public:
  enum class Change : uint8_t { kNone, kWentUp, kWentDown };

  // A backend starts up: lb serves from it at once, as it did before it had checks, and the
  // checks take it out within fall x interval + timeout if it is not (docs/config.md).
  CheckHysteresis(uint32_t rise, uint32_t fall, bool up = true) noexcept
      : rise_(rise < 1 ? 1 : rise), fall_(fall < 1 ? 1 : fall), up_(up) {}

  // New thresholds (a reload); the state and the current runs stay. A run that already
  // reaches a lower threshold takes effect with the next result.
  void configure(uint32_t rise, uint32_t fall) noexcept {
    rise_ = rise < 1 ? 1 : rise;
    fall_ = fall < 1 ? 1 : fall;
  }

  // One check's result. Returns the transition it caused, if any.
  Change record(bool passed) noexcept {
    if (passed) {
      ++passes_;
      failures_ = 0;
      if (!up_ && passes_ >= rise_) {
        up_ = true;
        return Change::kWentUp;
      }
    } else {
      ++failures_;
      passes_ = 0;
      if (up_ && failures_ >= fall_) {
        up_ = false;
        return Change::kWentDown;
      }
    }
    return Change::kNone;
  }

  bool up() const noexcept { return up_; }
  // The current run of passes / failures (one of them is 0 once a check has run).
  uint32_t passes() const noexcept { return passes_; }
  uint32_t failures() const noexcept { return failures_; }
  uint32_t rise() const noexcept { return rise_; }
  uint32_t fall() const noexcept { return fall_; }

 private:
  uint32_t rise_;
  uint32_t fall_;
  bool up_;
  uint32_t passes_ = 0;
  uint32_t failures_ = 0;
};

}  // namespace lb
