// Charts' axes for the pages (page.hpp): a plot area with room around it for ticks, their
// labels and the axes' titles, so that no label is cut off. The browser test checks that every
// chart (`svg.chart`) has its axes (`g.axis`) with ticks (`g.tick`) and that its text stays
// inside it.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tracemodel_cli::chart {

/// About `target` round values (1, 2 or 5 times a power of ten apart, the step nearest the
/// range's `target`th part, and at least `min_step`:
/// 1 for counts) from the first at or above `lo` to the last at or below `hi`; `lo` alone when
/// the range is empty; none when no multiple of `min_step` lies in the range.
[[nodiscard]] std::vector<double> ticks(double lo, double hi, int target = 5, double min_step = 0);

/// A chart's plot area, in pixels, with its margins.
struct frame {
  double width = 800, height = 150;  ///< of the plot area
  double left = 64;                  ///< room for the y axis's labels and title
  double top = 10;
  double right = 40;   ///< room for the last x label
  double bottom = 42;  ///< room for the x axis's labels and title

  [[nodiscard]] double svg_width() const { return left + width + right; }
  [[nodiscard]] double svg_height() const { return top + height + bottom; }
};

using label_of = std::function<std::string(double)>;

/// The chart's opening tag, sized by the frame.
[[nodiscard]] std::string open(const frame& f, std::string_view label);

/// The x axis under the plot area: values `lo` to `hi` across its width.
[[nodiscard]] std::string x_axis(const frame& f, double lo, double hi, const label_of& label,
                                 std::string_view title, double min_step = 0);
/// The y axis left of the plot area: values `lo` at its bottom to `hi` at its top.
[[nodiscard]] std::string y_axis(const frame& f, double lo, double hi, const label_of& label,
                                 std::string_view title, double min_step = 0);

}  // namespace tracemodel_cli::chart
