// tracemodel — the threads an operation may use, and where they come from.
//
//   tracemodel::analyze_options o;
//   o.threads = 1;                                      // everything on the calling thread
//   o.start_thread = [&pool](auto task) { pool.run(std::move(task)); };  // or the caller's own
//
// An operation that can use more than one thread (`analyze`, the trace readers) takes a
// `thread_options`: at most `threads` threads, the caller's included (0: as many as the machine
// has cores), each one beyond the caller's started by `start_thread` when it is set, else as a
// `std::thread`. Whatever starts it, a task given to `start_thread` must start without waiting
// for the calling thread to return: the two work at once and wait for each other. Every place in
// tracemodel that runs work on another thread goes through `detail::worker` below.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// Starts a task on a thread of the caller's (see the header comment).
using thread_starter = std::function<void(std::function<void()>)>;

struct thread_options {
  /// The most threads an operation runs on, the calling thread included: 1 runs everything on
  /// the calling thread; 0 (the default) as many as the machine has cores.
  unsigned threads = 0;
  /// Starts the threads beyond the caller's; empty: `std::thread`.
  thread_starter start_thread{};
};

namespace detail {

/// How many threads `o` allows, the caller's included (at least 1).
[[nodiscard]] inline unsigned thread_budget(const thread_options& o) noexcept {
  if (o.threads != 0) return o.threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

/// One task on another thread: started at construction (by the options' `start_thread`, or as a
/// `std::thread`), waited for by `join` (or the destructor). An exception the task lets out is
/// kept and rethrown by `join`. Construction throws what starting the thread throws (a
/// `std::system_error` when the system has no thread to give): callers that can do the work
/// themselves catch it.
class worker {
 public:
  worker() = default;
  template <class F>
  worker(const thread_options& o, F&& task) : state_(std::make_shared<state>()) {
    auto run = [s = state_, f = std::forward<F>(task)]() mutable {
      try {
        f();
      } catch (...) {
        s->error = std::current_exception();
      }
      s->done.store(true, std::memory_order_release);
      s->done.notify_all();
    };
    if (o.start_thread)
      o.start_thread(std::move(run));
    else
      thread_ = std::thread(std::move(run));
  }
  worker(const worker&) = delete;
  worker& operator=(const worker&) = delete;
  worker(worker&& o) noexcept = default;
  worker& operator=(worker&& o) noexcept {
    if (this != &o) {
      wait();
      thread_ = std::move(o.thread_);
      state_ = std::move(o.state_);
    }
    return *this;
  }
  ~worker() { wait(); }

  /// Whether a task was started and not joined yet.
  [[nodiscard]] bool running() const noexcept { return state_ != nullptr; }

  /// Waits for the task's end; rethrows what it let out.
  void join() {
    if (state_ == nullptr) return;
    wait_done();
    const std::exception_ptr e = state_->error;
    state_.reset();
    if (e) std::rethrow_exception(e);
  }

 private:
  struct state {
    std::atomic<bool> done{false};
    std::exception_ptr error;
  };
  void wait_done() noexcept {
    if (thread_.joinable()) thread_.join();
    while (!state_->done.load(std::memory_order_acquire))
      state_->done.wait(false, std::memory_order_acquire);
  }
  /// Waits without rethrowing (destruction, an exception under way).
  void wait() noexcept {
    if (state_ == nullptr) return;
    wait_done();
    state_.reset();
  }

  std::thread thread_;
  std::shared_ptr<state> state_;
};

}  // namespace detail
TRACEMODEL_END_NAMESPACE
