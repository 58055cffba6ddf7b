// tracemodel/formats — where each event of a table stood in its Chrome trace's `traceEvents`
// array: the event ids of tools that number a trace's records by that position (Holistic Trace
// Analysis's `index`).
//
//   const auto at = tracemodel::event_positions("trace.json.gz", table);  // at[i]: event i's
//
// The array is walked once more (simdjson's on-demand parser, which skips every field but
// `ph`); each record that makes an event (`X`, `B`, `i`, `I`) takes the next event of the file's
// order: `trace_info::file_order`, so the table must be read with `read_options::keep_file_order`
// (as hta/read.hpp reads) unless the file lists its events in start order. When the counts
// differ (a record the reader dropped or merged) the answer is empty: positions that would be
// wrong are not given.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/trace_text.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// The positions in `text`'s `traceEvents` array of the records that make events, in order
/// (empty when it is not a Chrome trace object with that array).
inline std::vector<std::int64_t> event_record_positions(std::string_view text,
                                                        std::size_t padding) {
  std::vector<std::int64_t> out;
  simdjson::ondemand::parser parser;
  simdjson::padded_string_view view(text.data(), text.size(), text.size() + padding);
  simdjson::ondemand::document doc;
  if (parser.iterate(view).get(doc) != simdjson::SUCCESS) return {};
  simdjson::ondemand::array events;
  if (doc.find_field_unordered("traceEvents").get_array().get(events) != simdjson::SUCCESS)
    return {};
  std::int64_t k = 0;
  for (auto element : events) {
    simdjson::ondemand::object o;
    if (element.get_object().get(o) != simdjson::SUCCESS) return {};
    std::string_view ph;
    if (o.find_field_unordered("ph").get_string().get(ph) == simdjson::SUCCESS && !ph.empty() &&
        (ph[0] == 'X' || ph[0] == 'B' || ph[0] == 'i' || ph[0] == 'I'))
      out.push_back(k);
    ++k;
  }
  return out;
}

/// Each event's position in the `traceEvents` array of the Chrome trace at `path` that `t` was
/// read from (see above); empty when they cannot be matched.
template <class Schema>
std::vector<std::int64_t> event_positions(const std::string& path,
                                          const basic_event_table<Schema>& t) {
  std::vector<std::int64_t> records;
  try {
    const trace_text text = load_trace_text(path);
    records = event_record_positions(std::string_view(text.data(), text.size()), text_padding);
  } catch (const input_error&) {
    return {};
  } catch (const simdjson::simdjson_error&) {
    return {};
  }
  if (records.size() != t.size()) return {};
  std::vector<std::int64_t> out(t.size());
  for (std::size_t i = 0; i < t.size(); ++i)
    out[i] = records[t.info.file_order.empty() ? i : t.info.file_order[i]];
  return out;
}

TRACEMODEL_END_NAMESPACE
