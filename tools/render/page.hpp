// The program's HTML pages: one self-contained page each (inline SVG and CSS, no script but the
// analyses' JSON, which the page carries for other tools and the tests). Every number the page
// shows that the JSON has is marked `data-check="analysis.row.field"`, so that a test can
// compare the two.
#pragma once

#include <string>
#include <string_view>

namespace tracemodel_cli::page {

/// `s` with the characters HTML gives a meaning escaped.
[[nodiscard]] std::string escape(std::string_view s);

/// A number shown and checked against the JSON at `path` (in SVG text: `tag` tspan).
[[nodiscard]] std::string checked(const std::string& path, const std::string& text,
                                  const char* tag = "span");

/// The colours of series, in order.
inline constexpr const char* colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                         "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};

/// The page's head and title.
[[nodiscard]] std::string head(const std::string& title);

/// The JSON the page carries, and the page's end.
[[nodiscard]] std::string data_and_end(const std::string& json);

}  // namespace tracemodel_cli::page
