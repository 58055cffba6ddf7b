// Charts' axes (chart.hpp).
#include "chart.hpp"

#include <cmath>

#include <fmt/format.h>

#include "page.hpp"

namespace tracemodel_cli::chart {

std::vector<double> ticks(double lo, double hi, int target, double min_step) {
  if (!(hi > lo)) return {lo};
  const double raw = std::max((hi - lo) / target, min_step);
  // The round step nearest the raw one (on a log scale): never fewer than two ticks in range.
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (const double m : {2.0, 5.0, 10.0})
    if (std::abs(std::log(m * power / raw)) < std::abs(std::log(step / raw))) step = m * power;
  std::vector<double> out;
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k += 1)
    out.push_back(k * step == 0 ? 0.0 : k * step);  // no "-0"
  return out;
}

std::string open(const frame& f, std::string_view label) {
  return fmt::format(
      "<svg class=\"chart\" width=\"{:.0f}\" height=\"{:.0f}\" role=\"img\" aria-label=\"{}\">\n",
      f.svg_width(), f.svg_height(), page::escape(label));
}

std::string x_axis(const frame& f, double lo, double hi, const label_of& label,
                   std::string_view title, double min_step) {
  const double y = f.top + f.height;
  std::string s = fmt::format(
      "<g class=\"axis x\"><line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.1f}\" "
      "y2=\"{:.1f}\"/>",
      f.left, f.left + f.width, y, y);
  const double span = hi > lo ? hi - lo : 1.0;
  for (const double v : ticks(lo, hi, 5, min_step)) {
    const double x = f.left + (v - lo) / span * f.width;
    s += fmt::format(
        "<g class=\"tick\"><line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text></g>",
        x, y, y + 4, y + 16, page::escape(label(v)));
  }
  return s + fmt::format(
                 "<text class=\"axis-title\" x=\"{:.1f}\" y=\"{:.1f}\" "
                 "text-anchor=\"middle\">{}</text></g>\n",
                 f.left + f.width / 2, y + 34, page::escape(title));
}

std::string y_axis(const frame& f, double lo, double hi, const label_of& label,
                   std::string_view title, double min_step) {
  std::string s = fmt::format(
      "<g class=\"axis y\"><line x1=\"{0:.1f}\" x2=\"{0:.1f}\" "
      "y1=\"{1:.1f}\" y2=\"{2:.1f}\"/>",
      f.left, f.top, f.top + f.height);
  const double span = hi > lo ? hi - lo : 1.0;
  for (const double v : ticks(lo, hi, 4, min_step)) {
    const double y = f.top + f.height - (v - lo) / span * f.height;
    s += fmt::format(
        "<g class=\"tick\"><line x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\"/>"
        "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text></g>",
        f.left - 4, f.left, y, f.left - 6, y + 4, page::escape(label(v)));
  }
  const double mid = f.top + f.height / 2;
  return s + fmt::format(
                 "<text class=\"axis-title\" transform=\"rotate(-90)\" x=\"{:.1f}\" "
                 "y=\"14\" text-anchor=\"middle\">{}</text></g>\n",
                 -mid, page::escape(title));
}

}  // namespace tracemodel_cli::chart
