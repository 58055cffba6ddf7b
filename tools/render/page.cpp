// The pages' common parts (page.hpp).
#include "page.hpp"

#include <cmath>

#include <fmt/format.h>

#include <tracemodel/formats/xml_escape.hpp>

namespace tracemodel_cli::page {

std::string escape(std::string_view s) {
  std::string out;
  tracemodel::append_xml_escaped(out, s);
  return out;
}

std::string checked(const std::string& path, const std::string& text, const char* tag) {
  return fmt::format("<{0} data-check=\"{1}\">{2}</{0}>", tag, path, text);
}

std::string grouped(double v, int decimals) {
  std::string digits = fmt::format("{:.{}f}", std::fabs(v), decimals);
  const std::size_t point = digits.find('.');
  std::size_t whole = point == std::string::npos ? digits.size() : point;
  while (whole > 3) {
    whole -= 3;
    digits.insert(whole, 1, ',');
  }
  // A value that rounds to zero is shown without its sign.
  const bool negative = v < 0 && digits.find_first_not_of("0.,") != std::string::npos;
  return negative ? "-" + digits : digits;
}

std::string count(std::uint64_t n) { return grouped(static_cast<double>(n)); }

time_unit::time_unit(std::string_view source, double largest) {
  const double ns_per_source = source == "us" ? 1e3 : 1.0;
  const double ns = std::fabs(largest) * ns_per_source;
  double ns_per_unit = 1e3;
  if (ns >= 1e11) {
    name_ = "s";
    ns_per_unit = 1e9;
    decimals_ = 3;
  } else if (ns >= 1e7) {
    name_ = "ms";
    ns_per_unit = 1e6;
    decimals_ = 3;
  } else {
    name_ = "µs";
    decimals_ = source == "us" ? 0 : 1;
  }
  scale_ = ns_per_unit / ns_per_source;
}

std::string time_unit::header(std::string_view what) const {
  return fmt::format("{} ({})", what, name_);
}

std::string time_unit::text(double v) const { return grouped(v / scale_, decimals_); }

std::string time_unit::tick(double v) const {
  std::string s = text(v);
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string time_unit::with_unit(double v) const { return text(v) + " " + std::string(name_); }

std::string time_unit::checked(const std::string& path, double v, const char* tag) const {
  return fmt::format("<{0} data-check=\"{1}\" data-unit=\"{2}\" data-scale=\"{3}\">{4}</{0}>", tag,
                     path, name_, scale_, text(v));
}

std::string head(const std::string& title) {
  const std::string t = escape(title);
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" + t +
         "</title>\n<style>\n"
         "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}\n"
         "h1{font-size:20px}h2{font-size:16px;margin-top:28px}\n"
         "table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right;"
         "border-bottom:1px solid #eee}th{text-align:left}td.l{text-align:left}\n"
         "td{font-variant-numeric:tabular-nums}\n"
         "svg text{font-size:12px}svg .axis line,svg .axis path{stroke:#888}"
         "svg .axis text{fill:#444;font-size:11px}\n"
         "pre{background:#f6f6f6;padding:8px;overflow:auto;font-size:12px}\n"
         ".legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}\n"
         "</style></head><body>\n<h1>" +
         t + "</h1>\n";
}

std::string data_and_end(const std::string& json) {
  // "</" (only ever in a string) is written "<\/" so that it cannot end the script.
  std::string data = json;
  for (std::size_t p = data.find("</"); p != std::string::npos; p = data.find("</", p + 3))
    data.replace(p, 2, "<\\/");
  return "<script type=\"application/json\" id=\"tracemodel-data\">" + data +
         "</script>\n</body></html>\n";
}

}  // namespace tracemodel_cli::page
