// tracemodel/formats — what a trace writer writes, whatever its format: a table's events, tracks
// and links, and what a caller adds beside them (counter series, flows between events, marks on
// events). Each format's writer is an encoder of this view (the Chrome JSON one:
// chrome_trace_writer.hpp); what draws on a trace produces into it (counter_tracks.hpp,
// critical_path_overlay.hpp), and so serves every format.
//
//   tracemodel::export_view view{table};
//   view.counters = tracemodel::counter_tracks(tracemodel::queue_length(table), {});
//   view.marks.push_back({7, "critical", std::int64_t{1}});
//   tracemodel::write_chrome_trace_file(view, "with_counters.json");
//
// Times are nanoseconds on the table's clock. The view refers to the table: it lives no longer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tracemodel/algo/measure.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// A value of a mark or of a flow's argument.
using export_value = std::variant<std::int64_t, double, std::string>;

/// One value of a counter at a time (ns).
struct counter_point {
  std::int64_t ts = 0;
  double value = 0;
};
/// A series of values over time, drawn as a track beside the events.
struct counter_series {
  std::string track;                 ///< the track's name ("Queue length (stream 7)")
  std::int64_t process = 0;          ///< the process (a device's id, say) whose track it is
  std::string value_name;            ///< what the values are ("queue length", "Memcpy DtoH")
  bool counts = false;               ///< whole numbers (written without a fraction)
  row_list<counter_point> points{};  ///< in time order
  std::int64_t id = -1;              ///< Chrome's counter `id` (series of one name apart); -1: none
};

/// A flow drawn from one event of the table to another, besides the table's own links.
struct export_flow {
  std::string category;  ///< also its name
  std::uint64_t id = 0;  ///< unique within the category
  event_index from = no_event, to = no_event;
  std::int64_t from_ts = 0, to_ts = 0;  ///< where on each event it leaves and arrives (ns)
  std::vector<std::pair<std::string, export_value>> args{};
};

/// An argument a caller adds to one event.
struct event_mark {
  event_index event = no_event;
  std::string key;
  export_value value;
};

template <class Schema>
struct basic_export_view {
  const basic_event_table<Schema>& table;
  std::vector<counter_series> counters{};
  std::vector<export_flow> flows{};
  std::vector<event_mark> marks{};  ///< in any order (an encoder takes them by event)

  /// The marks' positions by event (their order among one event's kept).
  [[nodiscard]] std::vector<std::size_t> marks_by_event() const {
    std::vector<std::size_t> order(marks.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) {
      return marks[a].event < marks[b].event;
    });
    return order;
  }
};
template <class Schema>
basic_export_view(const basic_event_table<Schema>&) -> basic_export_view<Schema>;

using export_view = basic_export_view<default_schema>;

TRACEMODEL_END_NAMESPACE
