// FlushList (lb/runtime/flush_list.h) on a real libuv loop run by the test thread: each
// queued Flushable flushes once per loop turn, after the turn's I/O callbacks; what a flush
// queues flushes in the same turn; what a timer queues does not wait for the next timer; and
// the handles keep the loop alive only while something is queued.
#include <uv.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lb/runtime/flush_list.h"

namespace lb {
namespace {

class Recorder final : public Flushable {
 public:
  Recorder(std::vector<std::string>& log, std::string name) : log_(log), name_(std::move(name)) {}
  void flush() noexcept override {
    log_.push_back(name_);
    if (then) {
      auto f = std::move(then);
      then = nullptr;
      f();
    }
  }
  std::function<void()> then;   // run once, inside the next flush

 private:
  std::vector<std::string>& log_;
  std::string name_;
};

class FlushListTest : public ::testing::Test {
 protected:
  FlushListTest() : list_(std::make_unique<FlushList>(initLoop())) {}
  ~FlushListTest() override {
    list_->close();
    uv_run(&loop_, UV_RUN_DEFAULT);   // the close callbacks
    EXPECT_EQ(uv_loop_close(&loop_), 0) << "a handle was left open";
  }
  // One loop turn that does not block.
  void turn() { uv_run(&loop_, UV_RUN_NOWAIT); }
  uv_loop_t* initLoop() {
    uv_loop_init(&loop_);
    return &loop_;
  }

  uv_loop_t loop_;
  std::unique_ptr<FlushList> list_;
  std::vector<std::string> log_;
  Recorder a_{log_, "a"}, b_{log_, "b"}, c_{log_, "c"};
};

TEST_F(FlushListTest, AnEmptyListKeepsTheLoopIdle) {
  EXPECT_FALSE(uv_loop_alive(&loop_));
  turn();
  EXPECT_TRUE(log_.empty());
}

TEST_F(FlushListTest, QueuedFlushablesFlushOnceInTheOrderAdded) {
  list_->add(&b_);
  list_->add(&a_);
  list_->add(&b_);   // already queued: stays where it is
  list_->add(&c_);
  EXPECT_TRUE(log_.empty()) << "flushed at add, not at the end of the turn";
  EXPECT_TRUE(uv_loop_alive(&loop_));
  turn();
  EXPECT_EQ(log_, (std::vector<std::string>{"b", "a", "c"}));
  // Nothing queued any more: the handles stopped, the loop has nothing to do.
  EXPECT_FALSE(uv_loop_alive(&loop_));
  turn();
  EXPECT_EQ(log_.size(), 3u);
}

TEST_F(FlushListTest, ARemovedFlushableDoesNotFlush) {
  list_->add(&a_);
  list_->add(&b_);
  list_->add(&c_);
  list_->remove(&b_);
  list_->remove(&b_);   // idempotent
  turn();
  EXPECT_EQ(log_, (std::vector<std::string>{"a", "c"}));
}

TEST_F(FlushListTest, RemovingTheOnlyOneLeavesAnEmptyList) {
  list_->add(&a_);
  list_->remove(&a_);
  turn();
  EXPECT_TRUE(log_.empty());
  list_->add(&a_);   // and it can join again
  turn();
  EXPECT_EQ(log_, (std::vector<std::string>{"a"}));
}

TEST_F(FlushListTest, WhatAFlushQueuesFlushesInTheSameTurn) {
  a_.then = [&] {
    list_->add(&b_);
    list_->add(&a_);   // itself again, for more work
  };
  list_->add(&a_);
  turn();
  EXPECT_EQ(log_, (std::vector<std::string>{"a", "b", "a"}));
}

// A timer callback queues; the next timer is far away. The idle handle keeps the poll after
// the timers from blocking until then, so the flush comes at once.
TEST_F(FlushListTest, WhatATimerQueuesDoesNotWaitForTheNextTimer) {
  uv_timer_t soon, far;
  uv_timer_init(&loop_, &soon);
  uv_timer_init(&loop_, &far);
  struct Ctx {
    FlushList* list;
    Recorder* a;
  } ctx{list_.get(), &a_};
  soon.data = &ctx;
  uv_timer_start(&soon, [](uv_timer_t* t) {
    auto* c = static_cast<Ctx*>(t->data);
    c->list->add(c->a);
  }, 0, 0);
  uv_timer_start(&far, [](uv_timer_t*) {}, 10000, 0);
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::seconds(5);
  while (log_.empty() && std::chrono::steady_clock::now() < deadline) uv_run(&loop_, UV_RUN_ONCE);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(log_, (std::vector<std::string>{"a"}));
  EXPECT_LT(took, std::chrono::seconds(5)) << "the flush waited for the far timer";
  uv_close(reinterpret_cast<uv_handle_t*>(&soon), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&far), nullptr);
  uv_run(&loop_, UV_RUN_NOWAIT);   // their close callbacks
}

TEST_F(FlushListTest, CloseDropsWhatIsQueuedAndIgnoresLaterAdds) {
  list_->add(&a_);
  list_->close();
  list_->close();   // idempotent
  list_->add(&b_);
  uv_run(&loop_, UV_RUN_DEFAULT);
  EXPECT_TRUE(log_.empty());
}

}  // namespace
}  // namespace lb
