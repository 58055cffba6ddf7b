// tracemodel/formats — the devices a Kineto trace describes in its `deviceProperties`.
//
//   std::vector<tracemodel::device_info> d = tracemodel::device_properties(table);
//
// Reads the raw JSON that the Chrome-trace reader keeps for top-level keys. Entries without an
// `id` are numbered by position; AMD devices (named "AMD ..." or "... Radeon ..." or
// "... Instinct ...") are marked `rocm`. A malformed value gives an empty list, not an error:
// the events were read already, and a device list is optional.
#pragma once

#include <string_view>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace/parse.hpp"
#include "tracemodel/model/device.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

namespace detail {
/// Appends the devices of one `deviceProperties` value (JSON text) to `out`; false when it is
/// not an array.
TRACEMODEL_READER_API bool append_device_properties(std::string_view raw,
                                                    std::vector<device_info>& out);
}  // namespace detail

template <class Schema>
std::vector<device_info> device_properties(const basic_event_table<Schema>& t) {
  std::vector<device_info> out;
  for (const auto& [key, raw] : t.info.metadata) {
    if (t.strings.view(key) != "deviceProperties") continue;
    if (!detail::append_device_properties(t.strings.view(raw), out)) return {};
  }
  return out;
}

TRACEMODEL_END_NAMESPACE

// The definition: compiled where the reader is (formats/chrome_trace/parse.hpp).
#if TRACEMODEL_READER_DEFINITIONS
#include <simdjson.h>

TRACEMODEL_BEGIN_NAMESPACE
TRACEMODEL_READER_API bool detail::append_device_properties(std::string_view raw,
                                                            std::vector<device_info>& out) {
  simdjson::dom::parser p;
  simdjson::dom::array a;
  const simdjson::padded_string text(raw);
  if (p.parse(text).get_array().get(a)) return false;
  for (simdjson::dom::element e : a) {
    simdjson::dom::object o;
    if (e.get_object().get(o)) continue;
    device_info d;
    d.id = static_cast<std::int64_t>(out.size());
    std::int64_t i = 0;
    std::string_view s;
    if (!o["id"].get_int64().get(i)) d.id = i;
    if (!o["name"].get_string().get(s)) d.name = std::string(s);
    if (!o["computeMajor"].get_int64().get(i)) d.compute_major = static_cast<int>(i);
    if (!o["computeMinor"].get_int64().get(i)) d.compute_minor = static_cast<int>(i);
    const std::string_view n = d.name;
    d.rocm = n.starts_with("AMD") || n.find("Radeon") != std::string_view::npos ||
             n.find("Instinct") != std::string_view::npos;
    out.push_back(std::move(d));
  }
  return true;
}
TRACEMODEL_END_NAMESPACE
#endif  // TRACEMODEL_READER_DEFINITIONS
