#include "lb/runtime/flush_list.h"

namespace lb {

FlushList::FlushList(uv_loop_t* loop) noexcept {
  uv_check_init(loop, &check_);
  check_.data = this;
  uv_idle_init(loop, &idle_);
  idle_.data = this;
}

void FlushList::add(Flushable* f) noexcept {
  if (f->queued_ || closed_) return;
  f->queued_ = true;
  f->next_ = nullptr;
  f->prev_ = tail_;
  if (tail_ != nullptr)
    tail_->next_ = f;
  else
    head_ = f;
  tail_ = f;
  if (!active_) {
    active_ = true;
    uv_check_start(&check_, onCheck);
    uv_idle_start(&idle_, onIdle);
  }
}

void FlushList::remove(Flushable* f) noexcept {
  if (!f->queued_) return;
  f->queued_ = false;
  if (f->prev_ != nullptr)
    f->prev_->next_ = f->next_;
  else
    head_ = f->next_;
  if (f->next_ != nullptr)
    f->next_->prev_ = f->prev_;
  else
    tail_ = f->prev_;
  f->prev_ = f->next_ = nullptr;
}

void FlushList::onCheck(uv_check_t* check) { static_cast<FlushList*>(check->data)->run(); }
void FlushList::onIdle(uv_idle_t* idle) { static_cast<FlushList*>(idle->data)->run(); }

// Each flush may queue more (a session's replies freed room for commands it had not read
// yet, which go to servers): all of it goes out in this turn, before the loop polls again.
void FlushList::run() noexcept {
  while (head_ != nullptr) {
    Flushable* f = head_;
    remove(f);
    f->flush();
  }
  if (active_) {
    active_ = false;
    uv_check_stop(&check_);
    uv_idle_stop(&idle_);
  }
}

void FlushList::close() noexcept {
  if (closed_) return;
  closed_ = true;
  while (head_ != nullptr) remove(head_);
  uv_close(reinterpret_cast<uv_handle_t*>(&check_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&idle_), nullptr);
}

}  // namespace lb
