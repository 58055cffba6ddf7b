// tracemodel/algo — the usual post-processing in one call.
//
//   tracemodel::analysis a = tracemodel::analyze(table);
//
// Links device activities to what launched them, links forward to backward ops, builds the call
// tree, and stores both kinds of links in `table.links` (forward/backward first, in flow-id
// order, then host/device). The two linkers touch disjoint events (device activities; ops), so
// on large tables they run at the same time on two threads. The tree needs what both wrote to
// the table (it leaves linked parents alone, and the forward-thread fallback reads the forward
// thread ids the wrapper inheritance sets), so it waits for the device links and for the
// forward/backward linker's pass over the table; the linker's matching, which reads only its
// own records, goes on meanwhile.
#pragma once

#include <atomic>
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
  bool parallel = true;                      ///< run the two linkers on two threads
  std::size_t parallel_threshold = 1 << 16;  ///< ... when the table has at least this many events
};

template <class TreePolicy = pytorch_tree, class LinkPolicy = pytorch_links,
          class DevicePolicy = pytorch_device_links>
struct analyze_fn {
  template <class Schema>
  analysis operator()(basic_event_table<Schema>& t, analyze_options opt = {}) const {
    analysis a;
    table_vector<flow_link> fwd_bwd;
    const bool parallel = opt.parallel && t.size() >= opt.parallel_threshold &&
                          std::thread::hardware_concurrency() > 1;
    if (parallel) {
      // Second thread: the linker's table pass, then its matching on its own records. This
      // thread: the device links, then (once the linker's pass is done) the tree, while the
      // matching goes on.
      std::exception_ptr failure;  // read after the join
      bool collect_ok = false;     // read after `collected`
      std::atomic<bool> collected{false};
      std::thread linker([&] {
        fwd_bwd_records r;
        try {
          r = link_forward_backward.collect(t, LinkPolicy{});
          collect_ok = true;
        } catch (...) {
          failure = std::current_exception();
        }
        collected.store(true, std::memory_order_release);
        collected.notify_one();
        if (!collect_ok) return;
        try {
          fwd_bwd = link_forward_backward.match(r, LinkPolicy{});
        } catch (...) {
          failure = std::current_exception();
        }
      });
      try {
        a.device = link_device_activities(t, DevicePolicy{});
        collected.wait(false, std::memory_order_acquire);
        if (collect_ok) a.tree = build_tree(t, TreePolicy{});
      } catch (...) {
        linker.join();
        throw;
      }
      linker.join();
      if (failure) std::rethrow_exception(failure);
    } else {
      a.device = link_device_activities(t, DevicePolicy{});
      fwd_bwd = link_forward_backward(t, LinkPolicy{});
      a.tree = build_tree(t, TreePolicy{});
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
