// tracemodel/algo — the usual post-processing in one call.
//
//   tracemodel::analysis a = tracemodel::analyze(table);
//
// Links device activities to what launched them, links forward to backward ops, builds the call
// tree, and stores both kinds of links in `table.links` (forward/backward first, in flow-id
// order, then host/device).
//
// The tree needs what both linkers write to the table: it leaves linked parents alone, and the
// forward-thread fallback reads the forward thread ids that the wrapper inheritance sets. The
// device linker reads each event once, in table order, and so does the tree's replay on a
// sorted table: the two run as one pass (the replay feeds each row to the device linker before
// placing it; a row whose link waits for the linker's second pass is skipped and counted once
// the link is made, and should one of them find no parent after all, the replay runs again).
// The replay takes the table in chunks of 512 rows, each thread's rows of a chunk in turn (the
// branches then follow one thread's pattern): the same tree and links as row by row (see
// `build_tree_fn::build` and `device_linker::begin_chunk`; `analyze_options::replay_chunk`).
// On large tables the forward/backward linker's pass over the table runs on a second thread
// meanwhile and then its matching, which reads only its own records; the replay reads a
// forward thread id only once that pass has gone past its row (detail::collect_progress).
// Once the device links are final, the second thread puts its links in front of them in the
// table (detail::links_handover) while the tree builds its children lists.
// HTA's tie rule replays in a computed order: the device links then come first, as a pass of
// their own.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <thread>
#include <type_traits>

#include "tracemodel/algo/flows.hpp"
#include "tracemodel/algo/fwd_bwd.hpp"
#include "tracemodel/algo/tree.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct analysis {
  device_link_stats device;
  tree_stats tree;
  std::size_t fwd_bwd_links = 0;
};

struct analyze_options {
  bool parallel = true;                      ///< run the forward/backward linker on a second thread
  std::size_t parallel_threshold = 1 << 16;  ///< ... when the table has at least this many events
  /// Rows of the table between two reports of the second thread's progress (tests make it
  /// small to exercise the hand-over).
  std::size_t progress_rows = 4096;
  /// The tree's replay takes the table in chunks of this many rows, each thread's rows of a
  /// chunk in turn (the same tree and links as in table order: see `build_tree_fn::build`);
  /// 0 replays row by row in table order.
  std::size_t replay_chunk = 512;
};

namespace detail {

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

/// `t.links`: the forward/backward links, then the device links. The device linker reserved
/// room for one link per event, an upper bound of both together (every link has its own
/// target event): its array takes the others in front, with no new array to fill.
template <class Schema>
void join_links(basic_event_table<Schema>& t, scratch_vector<flow_link>& device,
                const table_vector<flow_link>& fwd_bwd) {
  device.reserve(device.size() + fwd_bwd.size());  // room already, unless no device activities
  device.insert(device.begin(), fwd_bwd.begin(), fwd_bwd.end());
  t.links = std::move(device);
  device = {};
}

/// The replay hook that feeds the device linker (see the header comment and
/// `build_tree_fn::build`).
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
      : linker(t), progress(p), handover(h), n(t.size()),
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
    if (handover != nullptr) handover->give(stats.links);
    linker.for_each_waiting(f);
    return pass_ended();
  }
  bool rest() {
    if (progress != nullptr) progress->ack();
    for (; next < n; ++next) linker.step(next);
    stats = linker.finish();
    if (handover != nullptr) handover->give(stats.links);
    return pass_ended();
  }

 private:
  /// Waits for the forward/backward pass's end (the tree writes borrowed ends next, which the
  /// pass reads); false when it failed.
  bool pass_ended() { return progress == nullptr || progress->wait_end() == collect_progress::done; }
};

}  // namespace detail

template <class TreePolicy = pytorch_tree, class LinkPolicy = pytorch_links,
          class DevicePolicy = pytorch_device_links>
struct analyze_fn {
  template <class Schema>
  analysis operator()(basic_event_table<Schema>& t, analyze_options opt = {}) const {
    analysis a;
    table_vector<flow_link> fwd_bwd;
    const bool parallel = opt.parallel && t.size() >= opt.parallel_threshold &&
                          std::thread::hardware_concurrency() > 1;
    // The device links and the tree, once the forward/backward pass has gone far enough
    // (`progress`) or is done (null). The device links go to `a.device` once the other thread
    // is done with them (`handover`).
    std::optional<detail::device_link_hook<Schema, DevicePolicy>> hook;
    auto device_and_tree = [&](detail::collect_progress* progress,
                               detail::links_handover* handover) {
      if constexpr (TreePolicy::ties_type::close_first) {
        a.device = link_device_activities(t, DevicePolicy{});
        if (handover != nullptr) handover->give(a.device.links);
        if (progress != nullptr) {
          progress->ack();  // no op fields read before the pass ends (it may have to undo)
          if (progress->wait_end() != detail::collect_progress::done) return;
        }
        a.tree = build_tree(t, TreePolicy{});
      } else {
        hook.emplace(t, progress, handover);
        a.tree = build_tree.build(t, TreePolicy{}, *hook, opt.replay_chunk);
      }
    };
    bool joined = false;  // t.links set by the second thread
    if (parallel) {
      // Second thread: the forward/backward linker's pass over the table, then its matching
      // on its own records, then (once the device links are final) the table's links. This
      // thread: the device links and the tree.
      detail::collect_progress progress(opt.progress_rows);
      // The pass on the second thread writes each row's thread, which the replay's first
      // step per chunk then reads instead of looking it up (the pass looks up the ops'
      // threads anyway, and runs ahead of the replay).
      detail::fill_vector<std::uint8_t> row_threads;
      if constexpr (!TreePolicy::ties_type::close_first &&
                    std::is_same_v<typename TreePolicy::thread_key_type, pid_tid_key>) {
        if (opt.replay_chunk > 0) {
          row_threads.resize(t.size());
          progress.set_row_threads(row_threads.data());
        }
      }
      detail::links_handover handover;
      std::exception_ptr failure;  // read after the join
      std::thread linker([&] {
        fwd_bwd_records r;
        try {
          r = link_forward_backward.collect(t, LinkPolicy{}, &progress);
        } catch (...) {
          failure = std::current_exception();
          progress.publish(detail::collect_progress::failed);
          return;
        }
        try {
          fwd_bwd = link_forward_backward.match(r, LinkPolicy{});
          r = {};
          if (auto* device = handover.take()) {
            detail::join_links(t, *device, fwd_bwd);
            joined = true;
          }
        } catch (...) {
          failure = std::current_exception();
        }
      });
      try {
        device_and_tree(&progress, &handover);
      } catch (...) {
        handover.withdraw();
        progress.ack();  // the pass may wait for it (a table out of order)
        linker.join();
        throw;
      }
      handover.withdraw();  // unless given: the tree stopped before its device links were final
      linker.join();
      if (failure) std::rethrow_exception(failure);
    } else {
      fwd_bwd_records r = link_forward_backward.collect(t, LinkPolicy{});
      device_and_tree(nullptr, nullptr);
      fwd_bwd = link_forward_backward.match(r, LinkPolicy{});
    }
    if (hook) a.device = std::move(hook->stats);
    a.fwd_bwd_links = fwd_bwd.size();
    // Forward/backward links first, then the device links.
    if (!joined) detail::join_links(t, a.device.links, fwd_bwd);
    return a;
  }
};

/// Device links, forward/backward links and the call tree (see the header comment).
inline constexpr analyze_fn<> analyze{};

TRACEMODEL_END_NAMESPACE
