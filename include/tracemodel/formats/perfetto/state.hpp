// tracemodel/formats — the Perfetto reader's state (formats/perfetto_reader.hpp): the tracks as
// their descriptors say, what a packet sequence keeps between its packets, and the batches of
// records handed to the table builder (on the reading thread, or on another through `handoff`).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace/parse.hpp"
#include "tracemodel/formats/chrome_trace/table_builder.hpp"
#include "tracemodel/formats/json_escape.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::perfetto {

using chrome_trace::batch;
using chrome_trace::fields;
using chrome_trace::key_value;

/// A slice begun and not ended yet: its number, and where its record is while its batch is
/// being filled (an end there makes it a complete record: no end record to build).
struct open_slice {
  std::uint32_t slice, batch, index;
};

/// A track as its descriptor says, and the thread its events belong to.
struct track_info {
  std::uint64_t parent = 0;
  std::string_view name;
  std::string_view description;
  bool has_process = false, has_thread = false, is_counter = false;
  std::int64_t pid = 0, tid = 0;
  std::string_view process_name, thread_name;
  // counters
  bool incremental = false;
  std::int64_t multiplier = 1;
  std::string_view unit_name;
  // resolved
  key_value rpid, rtid;
  bool resolved = false;
  mutable std::vector<open_slice> open;  // its open slices, the last on top
};

/// One clock snapshot: simultaneous readings of clocks (id; scoped ids carry their sequence).
struct snapshot {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> clocks;  // (key, timestamp ns-scaled)
};

/// A sequence's incremental state and defaults.
struct sequence_state {
  bool valid = false;  // cleared at least once (or never needs it)
  std::vector<std::string_view> names, categories, annotation_names, string_values;
  std::vector<std::uint8_t> annotation_kinds;  // by iid: what its name means (arg_kind)
  std::uint32_t clock = 0;                     // default timestamp clock (0: BOOTTIME)
  std::uint64_t default_track = 0;
  std::vector<std::uint64_t> extra_counter_tracks, extra_double_counter_tracks;
  bool has_thread = false;
  std::int64_t pid = 0, tid = 0;
  std::int64_t ref_us = 0, ref_thread_time_us = 0, ref_instructions = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> incremental_clocks;  // clock -> value
  std::unordered_map<std::uint64_t, double> counter_totals;  // incremental counter tracks
};

/// A batch of records and the text made for them, handed to the builder whole.
struct batch_text {
  batch b;
  std::deque<std::string> kept;  // text made while decoding (JSON of nested annotations, ...)
};

/// Where the decoder's records go: the table builder, called on this thread, or (two threads)
/// on the reading thread while the decoder runs on another, through a short queue of jobs kept
/// in order.
class handoff {
 public:
  using job = std::function<void(chrome_trace::record_sink&)>;
  handoff(chrome_trace::record_sink& to, bool threaded) : to_(to), threaded_(threaded) {}

  /// A job for the builder (the decoder's side).
  void post(job j) {
    if (!threaded_) {
      j(to_);
      return;
    }
    std::unique_lock lock(m_);
    cv_.wait(lock, [this] { return queue_.size() < max_queued || stop_; });
    if (stop_) throw stopped{};
    queue_.push_back(std::move(j));
    cv_.notify_all();
  }
  /// Runs the jobs as they come until the decoder is done (the reading thread's side).
  void consume() {
    while (true) {
      job j;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [this] { return !queue_.empty() || done_; });
        if (queue_.empty()) return;
        j = std::move(queue_.front());
        queue_.pop_front();
        cv_.notify_all();
      }
      j(to_);
    }
  }
  /// The decoder is done (or failed): what is queued still runs.
  void done() {
    const std::lock_guard lock(m_);
    done_ = true;
    cv_.notify_all();
  }
  /// The builder failed: the decoder stops at its next job.
  void stop() {
    const std::lock_guard lock(m_);
    stop_ = true;
    cv_.notify_all();
  }
  struct stopped {};

  /// A batch to fill: one the builder is done with (its memory warm), or a new one.
  std::shared_ptr<batch_text> fresh() {
    {
      const std::lock_guard lock(m_);
      if (!free_.empty()) {
        std::shared_ptr<batch_text> b = std::move(free_.back());
        free_.pop_back();
        return b;
      }
    }
    return std::make_shared<batch_text>();
  }
  /// Gives a built batch back for the decoder to fill again.
  void recycle(std::shared_ptr<batch_text> b) {
    b->b.clear();
    b->kept.clear();
    const std::lock_guard lock(m_);
    free_.push_back(std::move(b));
  }

 private:
  static constexpr std::size_t max_queued = 8;
  chrome_trace::record_sink& to_;
  bool threaded_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<job> queue_;
  std::vector<std::shared_ptr<batch_text>> free_;
  bool done_ = false, stop_ = false;
};

/// Text from the file as the table takes it: as it is when it is UTF-8; else repaired (U+FFFD
/// for each byte outside a well-formed sequence, as the JSON writers write it), kept in `store`
/// (a batch's text, or the reader's own for what lasts), and counted (`invalid_utf8`).
inline std::string_view utf8_text(std::string_view s, std::deque<std::string>& store,
                                  anomaly_counts& a) {
  if (is_utf8(s)) [[likely]]
    return s;
  a.add(anomaly::invalid_utf8);
  store.push_back(to_utf8(s));
  return store.back();
}
/// Text from the file that goes to a JSON writer (which writes U+FFFD itself): counted when it
/// is not UTF-8.
inline std::string_view counted_utf8(std::string_view s, anomaly_counts& a) {
  if (!is_utf8(s)) [[unlikely]]
    a.add(anomaly::invalid_utf8);
  return s;
}

/// What an annotation's name means to the reader.
enum arg_kind : std::uint8_t {
  plain_arg,
  dims_arg,
  strides_arg,
  types_arg,
  concrete_arg,
  correlation_arg
};
inline arg_kind arg_kind_of(std::string_view key) noexcept {
  if (key.size() < 10 || key.size() > 15) return key == "correlation" ? correlation_arg : plain_arg;
  return key == "Input Dims"        ? dims_arg
         : key == "Input Strides"   ? strides_arg
         : key == "Input type"      ? types_arg
         : key == "Concrete Inputs" ? concrete_arg
         : key == "correlation"     ? correlation_arg
                                    : plain_arg;
}

/// The text of an interned id (empty when the sequence never interned it).
inline std::string_view interned(const std::vector<std::string_view>& table, std::uint64_t iid) {
  return iid < table.size() ? table[iid] : std::string_view{};
}

}  // namespace detail::perfetto
TRACEMODEL_END_NAMESPACE
