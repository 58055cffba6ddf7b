// The pages' common parts (page.hpp).
#include "page.hpp"

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

std::string head(const std::string& title) {
  const std::string t = escape(title);
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" + t +
         "</title>\n<style>\n"
         "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}\n"
         "h1{font-size:20px}h2{font-size:16px;margin-top:28px}\n"
         "table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right;"
         "border-bottom:1px solid #eee}th{text-align:left}td.l{text-align:left}\n"
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
