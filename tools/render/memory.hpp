// The memory timeline rendered: as text, as `memory --json`'s object, and as a page (or a
// section of `report`'s page).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <tracemodel/algo/memory_types.hpp>
#include <tracemodel/formats/json_output.hpp>
#include <tracemodel/model/table.hpp>

namespace tracemodel_cli {

namespace tmod = tracemodel;

/// A block live at the peak, its events named.
struct memory_live_row {
  std::uint64_t address = 0;
  std::int64_t bytes = 0;
  tmod::memory_category category = tmod::memory_category::unknown;
  std::uint64_t tensor_id = 0;
  std::string allocated_by, freed_by, frame;  ///< empty: none
  std::int64_t allocated_ns = -1;             ///< -1: before the trace
};

/// What the renderers show: a measure's result (or a PyTorch memory timeline file's samples)
/// with its names resolved.
struct memory_view {
  std::string device;
  bool from_file = false;  ///< a memory timeline file: samples only, no blocks
  std::size_t blocks = 0, records = 0, samples = 0, live_blocks = 0;
  tmod::row_list<tmod::memory_sample> points;  ///< the samples' envelope
  tmod::memory_peak peak;
  std::vector<memory_live_row> live;  ///< the largest blocks live at the peak
};

/// The view of a result of `t` (`top`: live rows kept, `buckets`: the envelope's).
[[nodiscard]] memory_view memory_view_of(const tmod::event_table& t,
                                         const tmod::memory_timeline_result& m, std::size_t top,
                                         std::size_t buckets);
/// The view of a memory timeline file's samples.
[[nodiscard]] memory_view memory_view_of(const tmod::row_list<tmod::memory_sample>& samples,
                                         std::size_t buckets);

void print_memory(const memory_view& v);
/// The object's members after `"repairs"` (`,"device":...`), each key after `prefix`, and the
/// object's end.
void write_memory_json(const memory_view& v, tmod::json_output& out, std::string_view prefix = "");
/// The page's body part: the peak, the stacked timeline and the live blocks; numbers checked
/// against the JSON members `categories` and `live_at_peak` under `key_prefix`.
[[nodiscard]] std::string memory_section(const memory_view& v, const std::string& key_prefix = "");
/// The whole page.
[[nodiscard]] std::string memory_page(const memory_view& v, const std::string& json,
                                      const std::string& title);

}  // namespace tracemodel_cli
