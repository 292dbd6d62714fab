#include "lb/runtime/session.h"

namespace lb {

void SessionList::link(Session* s) noexcept {
  s->prev_ = nullptr;
  s->next_ = head_;
  if (head_ != nullptr) head_->prev_ = s;
  head_ = s;
  count_.store(count_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void SessionList::unlink(Session* s) noexcept {
  if (s->prev_ != nullptr) s->prev_->next_ = s->next_;
  else if (head_ == s) head_ = s->next_;
  else return;   // not linked
  if (s->next_ != nullptr) s->next_->prev_ = s->prev_;
  s->prev_ = s->next_ = nullptr;
  count_.store(count_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
}

}  // namespace lb
