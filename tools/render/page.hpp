// The program's HTML pages: one self-contained page each (inline SVG and CSS, no script but the
// analyses' JSON, which the page carries for other tools and the tests). Every number the page
// shows that the JSON has is marked `data-check="analysis.row.field"`, so that a test can
// compare the two; a time also says its unit (`data-unit`) and how many of the JSON's units
// make one of it (`data-scale`).
//
// Times are shown in people's units: µs, ms or s, chosen per column (or chart) by its largest
// value, the unit in the column's header, thousands separated by commas.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tracemodel_cli::page {

/// `s` with the characters HTML gives a meaning escaped.
[[nodiscard]] std::string escape(std::string_view s);

/// A number shown and checked against the JSON at `path` (in SVG text: `tag` tspan).
[[nodiscard]] std::string checked(const std::string& path, const std::string& text,
                                  const char* tag = "span");

/// `v` with `decimals` digits after the point and its thousands separated: "7,574,738.5".
[[nodiscard]] std::string grouped(double v, int decimals = 0);
/// A count, thousands separated.
[[nodiscard]] std::string count(std::uint64_t n);

/// The unit a column of times is shown in.
class time_unit {
 public:
  /// For values in `source` ("ns" or "us") whose largest magnitude is `largest`: µs below
  /// 10 ms, ms below 100 s, s from there (so that a column's small values keep their digits).
  time_unit(std::string_view source, double largest);

  [[nodiscard]] std::string_view name() const { return name_; }
  /// "what (ms)", for a column's header or an axis.
  [[nodiscard]] std::string header(std::string_view what) const;
  /// `v` (in the source unit) in this unit, thousands separated, without the unit.
  [[nodiscard]] std::string text(double v) const;
  /// `text(v)` without trailing zeros after the point: an axis's tick, "2.5".
  [[nodiscard]] std::string tick(double v) const;
  /// `text(v)` and the unit: "1,234.5 ms".
  [[nodiscard]] std::string with_unit(double v) const;
  /// `text(v)` checked against the JSON at `path`, whose values are in the source unit.
  [[nodiscard]] std::string checked(const std::string& path, double v,
                                    const char* tag = "span") const;
  /// Source units in one of this unit.
  [[nodiscard]] double scale() const { return scale_; }

 private:
  std::string_view name_;
  double scale_ = 1;
  int decimals_ = 0;
};

/// The colours of series, in order.
inline constexpr const char* colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                         "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};

/// The page's head and title.
[[nodiscard]] std::string head(const std::string& title);

/// The JSON the page carries, and the page's end.
[[nodiscard]] std::string data_and_end(const std::string& json);

}  // namespace tracemodel_cli::page
