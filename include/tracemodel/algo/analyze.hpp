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
// On large tables the forward/backward linker's pass over the table runs on a second thread
// meanwhile and then its matching, which reads only its own records; the replay reads a
// forward thread id only once that pass has gone past its row (detail::collect_progress).
// HTA's tie rule replays in a computed order: the device links then come first, as a pass of
// their own.
#pragma once

#include <cstddef>
#include <exception>
#include <thread>

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
};

namespace detail {

/// The replay hook that feeds the device linker (see the header comment and
/// `build_tree_fn::build`).
template <class Schema, class DevicePolicy>
struct device_link_hook {
  static constexpr bool active = true;
  device_linker<Schema, DevicePolicy> linker;
  collect_progress* progress;  // null: the forward/backward pass is done
  std::size_t n;
  std::size_t next = 0;  // rows given to the linker
  std::uint64_t safe;    // rows below this may be read
  device_link_stats stats;

  device_link_hook(basic_event_table<Schema>& t, collect_progress* p)
      : linker(t), progress(p), n(t.size()), safe(p == nullptr ? collect_progress::done : 0) {}

  TRACEMODEL_ALWAYS_INLINE int pre(std::size_t r) {
    next = r + 1;
    return linker.step(r) == device_linker<Schema, DevicePolicy>::placed::waiting ? 1 : 0;
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
    linker.for_each_waiting(f);
    return pass_ended();
  }
  bool rest() {
    if (progress != nullptr) progress->ack();
    for (; next < n; ++next) linker.step(next);
    stats = linker.finish();
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
    // (`progress`) or is done (null).
    auto device_and_tree = [&](detail::collect_progress* progress) {
      if constexpr (TreePolicy::ties_type::close_first) {
        a.device = link_device_activities(t, DevicePolicy{});
        if (progress != nullptr) {
          progress->ack();  // no op fields read before the pass ends (it may have to undo)
          if (progress->wait_end() != detail::collect_progress::done) return;
        }
        a.tree = build_tree(t, TreePolicy{});
      } else {
        detail::device_link_hook<Schema, DevicePolicy> hook(t, progress);
        a.tree = build_tree.build(t, TreePolicy{}, hook);
        a.device = std::move(hook.stats);
      }
    };
    if (parallel) {
      // Second thread: the forward/backward linker's pass over the table, then its matching
      // on its own records. This thread: the device links and the tree.
      detail::collect_progress progress(opt.progress_rows);
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
        } catch (...) {
          failure = std::current_exception();
        }
      });
      try {
        device_and_tree(&progress);
      } catch (...) {
        progress.ack();  // the pass may wait for it (a table out of order)
        linker.join();
        throw;
      }
      linker.join();
      if (failure) std::rethrow_exception(failure);
    } else {
      fwd_bwd_records r = link_forward_backward.collect(t, LinkPolicy{});
      device_and_tree(nullptr);
      fwd_bwd = link_forward_backward.match(r, LinkPolicy{});
    }
    a.fwd_bwd_links = fwd_bwd.size();
    // Forward/backward links first, then the device links. The device linker reserved room for
    // one link per event, which is an upper bound of both together (every link has its own
    // target event): its array takes the others in front, with no new array to fill.
    auto& links = a.device.links;
    links.reserve(links.size() + fwd_bwd.size());  // room already, unless no device activities
    links.insert(links.begin(), fwd_bwd.begin(), fwd_bwd.end());
    t.links = std::move(links);
    links = {};
    return a;
  }
};

/// Device links, forward/backward links and the call tree (see the header comment).
inline constexpr analyze_fn<> analyze{};

TRACEMODEL_END_NAMESPACE
