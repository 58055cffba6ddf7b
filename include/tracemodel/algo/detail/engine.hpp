// tracemodel/algo/detail — `analyze` as it runs: the three plain algorithms fused for speed.
//
// `analyze` must write exactly what `link_forward_backward`, `link_device_activities` and
// `build_tree` write when called in that order (tests/fuzz/analyze_check.hpp compares the two on
// random tables, on every real trace of tests/data and on the fuzz inputs, for every setting of
// `engine_options`). How it gets there faster:
//  * The tree needs what both linkers write (it leaves linked parents alone, and its fall-back
//    reads the forward thread ids that wrappers inherit). The device linker reads each event
//    once, in table order, and so does the tree's replay on a sorted table: the two run as one
//    pass (the replay feeds each row to the device linker before placing it; a row whose link
//    waits for the linker's second pass is skipped and counted once the link is made, and
//    should one of them find no parent after all, the replay runs again). See
//    `device_link_hook` and detail::replay_tree.
//  * The replay takes the table in chunks of rows, each thread's rows of a chunk in turn (the
//    branches then follow one thread's pattern); the device linker rechecks a chunk's answers
//    where its id maps changed inside the chunk (detail::device_linker::begin_chunk).
//  * On large tables, and when the caller's thread options allow a second thread, the
//    forward/backward linker's pass over the table runs on that thread meanwhile and then its
//    matching, which reads only its own records; the replay reads a forward thread id only once
//    that pass has gone past its row (detail::collect_progress), and reads each row's thread from
//    it. Once the device links are final, the second thread puts its links in front of them in
//    the table (`links_handover`) while the tree builds its children lists.
//  * A tie rule that closes first replays in a computed order: the device links then come first,
//    as a pass of their own.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <system_error>
#include <type_traits>

#include "tracemodel/algo/detail/device_linker.hpp"
#include "tracemodel/algo/detail/fwd_bwd_pass.hpp"
#include "tracemodel/algo/detail/replay.hpp"
#include "tracemodel/algo/flows.hpp"
#include "tracemodel/algo/fwd_bwd.hpp"
#include "tracemodel/algo/tree.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"
#include "tracemodel/threads.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

/// How the engine runs; the same results whatever they are (tests set them to reach every path).
struct engine_options {
  /// The forward/backward linker runs on a second thread from this many events on.
  std::size_t parallel_threshold = std::size_t{1} << 16;
  /// Rows between two reports of the second thread's progress.
  std::size_t progress_rows = 4096;
  /// The tree's replay takes the table in chunks of this many rows; 0 replays row by row.
  std::size_t replay_chunk = 512;
};

/// The device links, handed from the tree's thread, once they are final, to the thread of the
/// forward/backward linker, which puts its own links in front of them while the tree builds
/// its children lists (the tree reads and writes neither).
class links_handover {
 public:
  /// The tree's thread: `links` are final, and the other thread may take them.
  void give(scratch_vector<flow_link>& links) noexcept {
    links_ = &links;
    publish(given);
  }
  /// The tree's thread: no links will be given (the caller joins them itself).
  void withdraw() noexcept {
    if (state_.load(std::memory_order_relaxed) == pending) publish(withdrawn);
  }
  /// The linker's thread: waits for `give` or `withdraw`; the links, or null.
  [[nodiscard]] scratch_vector<flow_link>* take() const noexcept {
    std::uint8_t s = state_.load(std::memory_order_acquire);
    while (s == pending) {
      state_.wait(s, std::memory_order_acquire);
      s = state_.load(std::memory_order_acquire);
    }
    return s == given ? links_ : nullptr;
  }

 private:
  static constexpr std::uint8_t pending = 0, given = 1, withdrawn = 2;
  void publish(std::uint8_t s) noexcept {
    state_.store(s, std::memory_order_release);
    state_.notify_all();
  }
  std::atomic<std::uint8_t> state_{pending};
  scratch_vector<flow_link>* links_ = nullptr;
};

/// `t.links` as the plain algorithms leave it: the forward/backward links, then the links the
/// table had that are not forward/backward ones (an earlier analysis's device links), then the
/// device links made now. The device linker reserved room for one link per event, an upper bound
/// of what it and the forward/backward linker make (every link has its own target event): on a
/// table without links its array takes the others in front, with no new array to fill.
template <class Schema>
void join_links(basic_event_table<Schema>& t, scratch_vector<flow_link>& device,
                const table_vector<flow_link>& fwd_bwd) {
  std::size_t kept = 0;
  for (const flow_link& l : t.links) kept += l.kind != flow_kind::fwd_bwd ? 1 : 0;
  if (kept != 0) [[unlikely]] {
    table_vector<flow_link> all;
    all.reserve(fwd_bwd.size() + kept + device.size());
    all.insert(all.end(), fwd_bwd.begin(), fwd_bwd.end());
    for (const flow_link& l : t.links)
      if (l.kind != flow_kind::fwd_bwd) all.push_back(l);
    all.insert(all.end(), device.begin(), device.end());
    t.links = std::move(all);
  } else {
    device.reserve(device.size() + fwd_bwd.size());  // room already, unless no device activities
    device.insert(device.begin(), fwd_bwd.begin(), fwd_bwd.end());
    t.links = std::move(device);
  }
  device = {};
}

/// The replay hook that feeds the device linker (see the header comment and
/// detail::replay_tree).
template <class Schema, class DevicePolicy>
struct device_link_hook {
  static constexpr bool active = true;
  device_linker<Schema, DevicePolicy> linker;
  collect_progress* progress;  // null: the forward/backward pass is done
  links_handover* handover;    // null: nobody takes the device links early
  std::size_t n;
  std::size_t next = 0;  // rows given to the linker
  std::uint64_t safe;    // rows below this may be read
  device_link_stats stats;

  device_link_hook(basic_event_table<Schema>& t, collect_progress* p, links_handover* h)
      : linker(t),
        progress(p),
        handover(h),
        n(t.size()),
        safe(p == nullptr ? collect_progress::done : 0) {}

  TRACEMODEL_ALWAYS_INLINE int pre(std::size_t r) {
    next = r + 1;
    return linker.step(r) == device_linker<Schema, DevicePolicy>::placed::waiting ? 1 : 0;
  }
  void begin_chunk(std::size_t first, std::size_t rows) { linker.begin_chunk(first, rows); }
  template <class F>
  void end_chunk(F&& moved) {
    linker.end_chunk(moved);
  }
  /// The replay stopped: the rows before `r` were given to the linker, and none after.
  void stopped_at(std::size_t r) noexcept { next = r; }
  /// Each row's thread below `end`, as the forward/backward pass numbered them (its stacks'
  /// numbering), once that pass has written them; else null (the replay looks them up).
  [[nodiscard]] const std::uint8_t* row_threads(std::size_t end) const noexcept {
    if (progress == nullptr || progress->row_threads() == nullptr ||
        progress->row_threads_ready() < end)
      return nullptr;
    return progress->row_threads();
  }
  TRACEMODEL_ALWAYS_INLINE bool before_fallback(std::size_t r) {
    if (r < safe) [[likely]]
      return true;
    safe = progress->wait_past(r);
    return safe == collect_progress::done || safe < collect_progress::stopped;
  }
  template <class F>
  bool finish(F&& f) {
    stats = linker.finish();
    if (handover != nullptr) handover->give(linker.links());
    linker.for_each_waiting(f);
    return pass_ended();
  }
  bool rest() {
    if (progress != nullptr) progress->ack();
    for (; next < n; ++next) linker.step(next);
    stats = linker.finish();
    if (handover != nullptr) handover->give(linker.links());
    return pass_ended();
  }

 private:
  /// Waits for the forward/backward pass's end (the tree writes borrowed ends next, which the
  /// pass reads); false when it failed.
  bool pass_ended() {
    return progress == nullptr || progress->wait_end() == collect_progress::done;
  }
};

/// The three algorithms on `t` (see the header comment); fills `a.fwd_bwd`, `a.device` and
/// `a.tree`.
template <class TreePolicy, class LinkPolicy, class DevicePolicy, class Analysis, class Schema>
void run_analysis(basic_event_table<Schema>& t, Analysis& a, const thread_options& threads,
                  const engine_options& knobs) {
  table_vector<flow_link> fwd_bwd;
  // The device links: the hook's linker's, or (ties that close first) `serial_links`.
  std::optional<device_link_hook<Schema, DevicePolicy>> hook;
  scratch_vector<flow_link> serial_links;
  // The device links and the tree, once the forward/backward pass has gone far enough
  // (`progress`) or is done (null). The device links go to the table once the other thread is
  // done with its own (`handover`).
  auto device_and_tree = [&](collect_progress* progress, links_handover* handover) {
    if constexpr (TreePolicy::ties_type::close_first) {
      a.device = link_devices_in_order<Schema, DevicePolicy>(t, serial_links);
      if (handover != nullptr) handover->give(serial_links);
      if (progress != nullptr) {
        progress->ack();  // no op fields read before the pass ends (it may have to undo)
        if (progress->wait_end() != collect_progress::done) return;
      }
      no_replay_hook none;
      a.tree = replay_tree(t, TreePolicy{}, none);
    } else {
      hook.emplace(t, progress, handover);
      a.tree = replay_tree(t, TreePolicy{}, *hook, knobs.replay_chunk);
    }
  };
  auto take_counts = [&](const fwd_bwd_records& r) {
    a.fwd_bwd.links = fwd_bwd.size();
    a.fwd_bwd.backward_ops = r.backward_ops;
    a.fwd_bwd.wrappers = r.wrappers;
  };
  bool joined = false;  // t.links set by the second thread
  bool serial = thread_budget(threads) < 2 || t.size() < knobs.parallel_threshold;
  if (!serial) {
    // Second thread: the forward/backward linker's pass over the table, then its matching on
    // its own records, then (once the device links are final) the table's links. This thread:
    // the device links and the tree.
    collect_progress progress(knobs.progress_rows);
    // The pass on the second thread writes each row's thread, which the replay's first step per
    // chunk then reads instead of looking it up (the pass looks up the ops' threads anyway, and
    // runs ahead of the replay).
    fill_vector<std::uint8_t> row_threads;
    if constexpr (!TreePolicy::ties_type::close_first &&
                  std::is_same_v<typename TreePolicy::thread_key_type, pid_tid_key>) {
      if (knobs.replay_chunk > 0) {
        row_threads.resize(t.size());
        progress.set_row_threads(row_threads.data());
      }
    }
    links_handover handover;
    std::exception_ptr failure;  // read after the join
    worker second;
    try {
      second = worker(threads, [&] {
        fwd_bwd_records r;
        try {
          r = fwd_bwd_collect<LinkPolicy>(t, &progress);
        } catch (...) {
          failure = std::current_exception();
          progress.publish(collect_progress::failed);
          return;
        }
        try {
          fwd_bwd = fwd_bwd_match<LinkPolicy>(r);
          take_counts(r);
          r = {};
          if (auto* device = handover.take()) {
            join_links(t, *device, fwd_bwd);
            joined = true;
          }
        } catch (...) {
          failure = std::current_exception();
        }
      });
    } catch (const std::system_error&) {
      serial = true;  // no second thread to be had
    }
    if (!serial) {
      try {
        device_and_tree(&progress, &handover);
      } catch (...) {
        handover.withdraw();
        progress.ack();  // the pass may wait for it (a table out of order)
        second.join();
        throw;
      }
      handover.withdraw();  // unless given: the tree stopped before its device links were final
      second.join();
      if (failure) std::rethrow_exception(failure);
    }
  }
  if (serial) {
    fwd_bwd_records r = fwd_bwd_collect<LinkPolicy>(t);
    device_and_tree(nullptr, nullptr);
    fwd_bwd = fwd_bwd_match<LinkPolicy>(r);
    take_counts(r);
  }
  if (hook) a.device = hook->stats;
  // Forward/backward links first, then the device links.
  if (!joined) join_links(t, hook ? hook->linker.links() : serial_links, fwd_bwd);
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
