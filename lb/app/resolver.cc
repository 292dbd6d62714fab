#include "lb/app/resolver.h"

#include <netdb.h>

#include <cstring>

#include "lb/core/log.h"
#include "lb/core/sys_error.h"

namespace lb {

struct ResolveBatch::Lookup {
  uv_getaddrinfo_t req;
  ResolveBatch* batch;   // null once the batch stopped waiting for this one
  size_t index;
};

std::string resolveErrorText(int status, Duration wait) {
  if (status == UV_ETIMEDOUT) return "no answer within " + formatDuration(wait);
  // libuv maps glibc's EAI_* codes onto its own; glibc's text is the one operators know
  // from ping, curl and getent.
  static const struct {
    int uv;
    int eai;
  } kCodes[] = {{UV_EAI_NONAME, EAI_NONAME},   {UV_EAI_AGAIN, EAI_AGAIN},
                {UV_EAI_FAIL, EAI_FAIL},       {UV_EAI_NODATA, EAI_NODATA},
                {UV_EAI_FAMILY, EAI_FAMILY},   {UV_EAI_MEMORY, EAI_MEMORY},
                {UV_EAI_SERVICE, EAI_SERVICE}, {UV_EAI_ADDRFAMILY, EAI_ADDRFAMILY}};
  for (const auto& c : kCodes)
    if (c.uv == status) return gai_strerror(c.eai);
  return sysErrorText(status);
}

ResolveBatch::ResolveBatch(std::vector<std::string> names, Done done)
    : names_(std::move(names)),
      answers_(names_.size()),
      pending_(names_.size(), nullptr),
      done_(std::move(done)) {
  timer_.data = this;
}

ResolveBatch* ResolveBatch::start(uv_loop_t* loop, std::vector<std::string> names,
                                  Duration wait, Done done) {
  if (names.empty()) {
    done({}, {});
    return nullptr;
  }
  auto* batch = new ResolveBatch(std::move(names), std::move(done));
  uv_timer_init(loop, &batch->timer_);
  uv_timer_start(&batch->timer_, onWaitOver, static_cast<uint64_t>(wait.count()), 0);
  // SOCK_STREAM: one entry per address rather than one per socket type. No AI_ADDRCONFIG:
  // it ignores loopback addresses, so a host whose only addresses are loopback (a test
  // machine, some containers) would not resolve localhost.
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  batch->unanswered_ = batch->names_.size();
  for (size_t i = 0; i < batch->names_.size(); ++i) {
    auto* lookup = new Lookup{{}, batch, i};
    lookup->req.data = lookup;
    batch->pending_[i] = lookup;
    int rc = uv_getaddrinfo(loop, &lookup->req, onResolved, batch->names_[i].c_str(), nullptr,
                            &hints);
    if (rc != 0) {
      delete lookup;
      batch->pending_[i] = nullptr;
      batch->answer(i, rc, nullptr);   // may finish the batch, which stays allocated until
                                       // its timer closes on a later loop turn
    }
  }
  return batch->finished_ ? nullptr : batch;
}

void ResolveBatch::abandon() { finish(false); }

void ResolveBatch::onResolved(uv_getaddrinfo_t* req, int status, addrinfo* res) {
  auto* lookup = static_cast<Lookup*>(req->data);
  if (lookup->batch != nullptr) {
    lookup->batch->pending_[lookup->index] = nullptr;
    lookup->batch->answer(lookup->index, status, res);
  }
  uv_freeaddrinfo(res);
  delete lookup;
}

void ResolveBatch::answer(size_t index, int status, const addrinfo* res) {
  if (finished_) return;
  ResolveAnswer& a = answers_[index];
  a.status = status;
  if (status == 0) {
    a.status = UV_EAI_NODATA;   // unless an IPv4 or IPv6 address is among the answers
    for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
          ai->ai_addrlen > sizeof(a.address.address))
        continue;
      memcpy(&a.address.address, ai->ai_addr, ai->ai_addrlen);
      a.address.len = static_cast<socklen_t>(ai->ai_addrlen);
      a.status = 0;
      break;
    }
  }
  if (--unanswered_ == 0) finish();
}

void ResolveBatch::onWaitOver(uv_timer_t* timer) {
  auto* batch = static_cast<ResolveBatch*>(timer->data);
  for (size_t i = 0; i < batch->answers_.size(); ++i)
    if (batch->pending_[i] != nullptr) batch->answers_[i].status = UV_ETIMEDOUT;
  batch->finish();
}

void ResolveBatch::finish(bool call_done) {
  if (finished_) return;
  finished_ = true;
  // Lookups still running outlive the batch: they free themselves when they end. One that
  // has not left libuv's queue yet is cancelled (its callback then comes with
  // UV_EAI_CANCELED).
  for (Lookup*& lookup : pending_) {
    if (lookup == nullptr) continue;
    lookup->batch = nullptr;
    uv_cancel(reinterpret_cast<uv_req_t*>(&lookup->req));
    lookup = nullptr;
  }
  try {
    if (call_done) done_(names_, answers_);
  } catch (const std::exception& e) {
    LB_ERROR("dns: %s", e.what());
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), onClosed);
}

void ResolveBatch::onClosed(uv_handle_t* handle) {
  delete static_cast<ResolveBatch*>(handle->data);
}

AnsweredResolver::AnsweredResolver(const std::vector<std::string>& names,
                                   const std::vector<ResolveAnswer>& answers, Duration wait) {
  for (size_t i = 0; i < names.size() && i < answers.size(); ++i) {
    if (answers[i].status == 0)
      hosts_[names[i]] = answers[i].address;
    else
      failed_[names[i]] = resolveErrorText(answers[i].status, wait);
  }
}

std::vector<std::string> AnsweredResolver::resolve(const std::vector<std::string>& names) {
  std::vector<std::string> why(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    if (hosts_.count(names[i])) continue;
    auto it = failed_.find(names[i]);
    why[i] = it != failed_.end() ? it->second : "not looked up (the file changed meanwhile)";
  }
  return why;
}

BlockingResolver::BlockingResolver(Duration wait) : wait_(wait) { uv_loop_init(&loop_); }

BlockingResolver::~BlockingResolver() {
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
}

std::vector<std::string> BlockingResolver::resolve(const std::vector<std::string>& names) {
  hosts_.clear();
  std::vector<std::string> why(names.size());
  bool finished = false;
  ResolveBatch::start(&loop_, names, wait_,
                      [&](const std::vector<std::string>& asked,
                          const std::vector<ResolveAnswer>& answers) {
                        AnsweredResolver answered(asked, answers, wait_);
                        why = answered.resolve(asked);
                        hosts_ = answered.hosts();
                        finished = true;
                      });
  // The batch's own timer ends the wait; lookups it gave up on stay on the loop and are
  // collected by the next run (or the destructor).
  while (!finished && uv_run(&loop_, UV_RUN_ONCE) != 0) {
  }
  return why;
}

}  // namespace lb
