// tracemodel/algo — the memory timeline's vocabulary: PyTorch's categories and actions, blocks,
// records, samples, the peak, the options and the result of `memory_timeline`
// (memory_timeline.hpp), and the plain functions over records and samples. A light header:
// formats/pytorch_memory.hpp and the renderers need these, not the passes.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tracemodel/algo/measure.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// PyTorch's categories, in its index order (`_CATEGORY_TO_INDEX`).
enum class memory_category : std::uint8_t {
  parameter,
  optimizer_state,
  input,
  temporary,
  activation,
  gradient,
  autograd_detail,
  unknown,
};
inline constexpr std::size_t memory_categories = 8;
inline constexpr std::array<std::string_view, memory_categories> memory_category_names{
    "parameter",  "optimizer_state", "input",           "temporary",
    "activation", "gradient",        "autograd_detail", "unknown"};
/// The names PyTorch's memory timeline plot gives them.
inline constexpr std::array<std::string_view, memory_categories> memory_category_labels{
    "Parameter",  "Optimizer state", "Input",    "Temporary",
    "Activation", "Gradient",        "Autograd", "Unknown"};

/// PyTorch's `Action` values.
enum class memory_action : std::uint8_t {
  preexisting = 1,
  create = 2,
  increment_version = 3,
  destroy = 4,
};

struct memory_device {
  std::int8_t type = 0;  ///< c10's device type: 0 CPU, 1 CUDA, ...
  std::int8_t index = -1;
  friend constexpr bool operator==(memory_device, memory_device) = default;
};

/// One allocation (or a tensor's storage never allocated in the trace).
struct memory_block {
  std::uint64_t address = 0;
  std::int64_t bytes = 0;
  memory_device device;
  std::uint64_t tensor_id = 0;          ///< 0: no tensor used it
  event_index allocation = no_event;    ///< its allocation event (none: preexisting)
  event_index free = no_event;          ///< its free event (none: never freed)
  event_index allocated_by = no_event;  ///< the innermost op around the allocation
  event_index freed_by = no_event;      ///< ... around the free
  std::uint32_t versions = 1;           ///< 1 + the times an op changed it in place
  memory_category category = memory_category::unknown;  ///< of its last version
};

/// A raw record: PyTorch's `(time, action, bytes, category)` of `export_memory_timeline_raw`
/// (bytes negative for a destroy and for the old version of an increment).
struct memory_record {
  std::int64_t time_ns = 0;  ///< -1: before the trace
  memory_action action = memory_action::create;
  memory_category category = memory_category::unknown;
  std::int64_t bytes = 0;
  std::uint32_t block = 0;
};

/// Bytes per category from one time on.
struct memory_sample {
  std::int64_t time_ns = 0;
  std::array<std::int64_t, memory_categories> bytes{};
  [[nodiscard]] std::int64_t total() const noexcept {
    std::int64_t s = 0;
    for (const std::int64_t b : bytes) s += b;
    return s;
  }
};

struct memory_peak {
  std::int64_t time_ns = 0;
  std::int64_t bytes = 0;
  std::array<std::int64_t, memory_categories> by_category{};
  std::size_t sample = 0;  ///< its index in the whole series (`samples` when not an envelope)
};

/// A block live at the peak.
struct live_block {
  std::uint32_t block = 0;
  memory_category category = memory_category::unknown;
  std::int64_t bytes = 0;
  event_index allocated_by = no_event;
  event_index freed_by = no_event;  ///< no_event: never freed in the trace
  event_index frame = no_event;     ///< the innermost script frame around the allocation
};

struct memory_timeline_options {
  /// The device of the samples and the peak; unset: the first accelerator with allocations
  /// (lowest type, then index), else the CPU (PyTorch: "cuda:0" when CUDA is there, else "cpu").
  /// A CPU `device` means the CPU's allocations whatever their index.
  bool choose_device = true;
  memory_device device{};
  /// tracemodel's stand-ins for the optimizer state PyTorch's Python tracer finds (see above):
  /// what ops inside `Optimizer.step#...` keep, and what ops change in place from a gradient.
  bool optimizer_annotations = true;
  bool gradient_fed_state = true;
  /// Samples kept: 0, every one; N, the envelope of N runs (`memory_envelope(samples, N)`, made
  /// without the whole series: a picture's worth of a long run).
  std::size_t sample_limit = 0;
  /// Memory no tensor used (an op's workspace), allocated and freed within one node: temporary
  /// (PyTorch leaves it unknown: it keys categories on tensors).
  bool untracked_temporaries = true;
};

struct memory_timeline_result {
  std::vector<memory_block> blocks;
  row_list<memory_record> records;  ///< every device, sorted by (time, action)
  memory_device device;             ///< of `samples`, `peak` and `live_at_peak`
  row_list<memory_sample> samples;  ///< the series, or its envelope (`sample_limit`)
  std::size_t series = 0;           ///< samples in the whole series
  memory_peak peak;
  row_list<live_block> live_at_peak;  ///< largest first
  anomaly_counts repairs;             ///< what the measure repaired (see the header comment)
  /// The category of a block's version.
  std::vector<std::uint32_t> version_first;  ///< per block: its first entry in `version_category`
  std::vector<memory_category> version_category;
  [[nodiscard]] memory_category category(std::uint32_t block, std::uint32_t version) const {
    const std::uint32_t k = version_first[block] + version;
    return k < version_category.size() && version < blocks[block].versions
               ? version_category[k]
               : memory_category::unknown;
  }
};

/// PyTorch's `_coalesce_timeline`: a sample at each new time (times divided by `divisor`,
/// truncated, the preexisting -1 kept and then replaced by the smallest positive time).
inline row_list<memory_sample> coalesce_memory(const row_list<memory_record>& records,
                                               const std::vector<memory_block>& blocks,
                                               memory_device device, std::int64_t divisor = 1) {
  row_list<memory_sample> out;
  std::size_t n = 0;  // (counted first: a vector of millions of samples is not grown)
  std::int64_t last = 0;
  for (const memory_record& r : records)
    if (blocks[r.block].device == device) {
      const std::int64_t t = r.time_ns == -1 ? -1 : r.time_ns / divisor;
      n += n == 0 || t != last;
      last = t;
    }
  out.reserve(n);
  std::int64_t t_min = -1;
  for (const memory_record& r : records) {
    if (blocks[r.block].device != device) continue;
    std::int64_t t = r.time_ns;
    if (t != -1) t /= divisor;
    if (t_min == -1 || (t < t_min && t > 0)) t_min = t;
    if (out.empty())
      out.push_back({t, {}});
    else if (t != out.back().time_ns)
      out.push_back({t, out.back().bytes});
    out.back().bytes[static_cast<std::size_t>(r.category)] += r.bytes;
  }
  for (memory_sample& s : out)
    if (s.time_ns < 0) s.time_ns = t_min;
  return out;
}

/// At most about `2 * buckets` of the samples, for a picture: the samples cut into `buckets` runs
/// of equal length, and of each run the one with the fewest bytes and the one with the most, in
/// time order (a min/max envelope: every peak and trough of the total stays, the first of equal
/// ones). All of them when there are no more than `2 * buckets`.
inline row_list<memory_sample> memory_envelope(const row_list<memory_sample>& samples,
                                               std::size_t buckets) {
  if (buckets == 0 || samples.size() <= 2 * buckets) return samples;
  row_list<memory_sample> out;
  const std::size_t n = samples.size();
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t lo = n * b / buckets, hi = n * (b + 1) / buckets;
    std::size_t low = lo, high = lo;
    for (std::size_t k = lo; k < hi; ++k) {
      if (samples[k].total() < samples[low].total()) low = k;
      if (samples[k].total() > samples[high].total()) high = k;
    }
    out.push_back(samples[std::min(low, high)]);
    if (low != high) out.push_back(samples[std::max(low, high)]);
  }
  return out;
}

/// "cpu", "cuda:0", "hip:1", ...: c10's name of a device type, and the index when it has one.
inline std::string memory_device_name(memory_device d) {
  static constexpr std::array<std::string_view, 21> names{
      "cpu",  "cuda", "mkldnn", "opengl", "opencl", "ideep", "hip",
      "fpga", "maia", "xla",    "vulkan", "metal",  "xpu",   "mps",
      "meta", "hpu",  "ve",     "lazy",   "ipu",    "mtia",  "privateuseone"};
  const auto type = static_cast<std::size_t>(static_cast<std::uint8_t>(d.type));
  std::string out =
      type < names.size() ? std::string(names[type]) : "device" + std::to_string(type);
  if (d.index >= 0) out += ":" + std::to_string(d.index);
  return out;
}

TRACEMODEL_END_NAMESPACE
