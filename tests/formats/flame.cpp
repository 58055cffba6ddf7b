#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/formats/flame_svg.hpp>
#include <tracemodel/testing/builder.hpp>

using namespace tracemodel;
using tracemodel::testing::table_builder;

namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

/// A small well-formedness check: tags nest, attribute values are quoted, text has no raw '<'
/// or unescaped '&', no control characters. Returns "" or what is wrong.
std::string xml_problem(const std::string& s) {
  std::vector<std::string> open;
  std::size_t i = s.find("<svg");
  if (i == std::string::npos) return "no <svg>";
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x20 && s[i] != '\n' && s[i] != '\t')
      return "control character";
    if (s[i] == '&') {
      const std::size_t semi = s.find(';', i);
      const std::string ent = s.substr(i, semi == std::string::npos ? 0 : semi - i + 1);
      if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;")
        return "bad entity at " + std::to_string(i);
      i = semi + 1;
      continue;
    }
    if (s[i] != '<') {
      ++i;
      continue;
    }
    const bool closing = s[i + 1] == '/';
    std::size_t j = i + (closing ? 2 : 1);
    const std::size_t name_end = s.find_first_of(" />", j);
    const std::string name = s.substr(j, name_end - j);
    // Skip attributes: quoted values may hold '>'.
    j = name_end;
    bool quoted = false;
    while (j < s.size() && (quoted || s[j] != '>')) {
      if (s[j] == '"') quoted = !quoted;
      if (quoted && s[j] == '<') return "'<' in an attribute";
      ++j;
    }
    if (j >= s.size()) return "unterminated tag " + name;
    const bool self_closing = s[j - 1] == '/';
    if (closing) {
      if (open.empty() || open.back() != name) return "mismatched </" + name + ">";
      open.pop_back();
    } else if (!self_closing) {
      open.push_back(name);
    }
    i = j + 1;
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("flame_svg: lanes, rectangles, arcs, tooltips, escaping") {
    table_builder b;
    b.op("step <1> & \"two\"", 0, 1000)
        .op("aten::mm", 10, 400)
        .seq(5)
        .op("aten::add", 450, 500)
        .seq(6);
    b.allocation(0x10, 64, 20);
    b.op("MmBackward0", 600, 900, 2).seq(5, 1).tensor("float", {4, 8});
    b.op("tail", 950, 1000, 2).other_input();
    b.op("never ends", 960, no_end_ns, 3);
    event_table t = b.take();
    analyze(t);
    REQUIRE(t.links.size() == 1);
    const std::string svg = flame_svg(t, {.width = 1000});
    CHECK(xml_problem(svg) == "");
    CHECK(svg.starts_with(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\""));
    CHECK(svg.ends_with("</svg>\n"));
    // Five drawn events (the allocation is an instant; the op that never ended borrows no end
    // on a thread of its own, so it has none and is left out).
    CHECK(count(svg, "<rect class=\"e\"") == 5);
    CHECK(count(svg, "<path class=\"link\"") == 1);
    CHECK(count(svg, ">thread 1/") == 2);  // threads 1 and 2 of process 1
    CHECK(svg.find("step &lt;1&gt; &amp; &quot;two&quot;") != std::string::npos);
    // Tooltips carry the payload's fields and the inputs.
    CHECK(svg.find("<title>MmBackward0\nkind: op\nduration: 0.300us") != std::string::npos);
    CHECK(svg.find("sequence_number: 5\nfwd_thread_id: 1") != std::string::npos);
    CHECK(svg.find("inputs: float[4,8]") != std::string::npos);
    CHECK(svg.find("inputs: other") != std::string::npos);
    // The time axis: the first op spans the full width (10 px margin, 1000 px).
    CHECK(svg.find("x=\"10.00\" y=\"48.00\" width=\"1000.00\"") != std::string::npos);
  }

  TEST_CASE("flame_svg: an empty table is a valid picture") {
    event_table t;
    const std::string svg = flame_svg(t);
    CHECK(xml_problem(svg) == "");
    CHECK(count(svg, "<rect class=\"e\"") == 0);
  }
}
