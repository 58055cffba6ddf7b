// A pattern of your own, evaluated with PyTorch's in one traversal.
//
//   custom_pattern [TRACE.json]
//
// Reads a Chrome/Kineto trace, or builds a small table by hand when none is given, and prints
// the anti-pattern report with two extra rules: one written as a type, one composed from
// building blocks.
#include <cstdio>
#include <string_view>
#include <tuple>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/patterns.hpp>
#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/formats/chrome_trace_reader.hpp>
#include <tracemodel/formats/device_properties.hpp>
#include <tracemodel/testing/builder.hpp>

namespace tmod = tracemodel;

// A pattern is a type with a name, a description and a match over one node of the tree.
struct item_in_loop_pattern {
  std::string_view name() const { return "Item In Loop Pattern"; }
  std::string_view description() const {
    return "aten::item copies one value to the host each time; gather the values and copy once.";
  }
  template <class S>
  bool match(const tmod::tree_view<S>& v, tmod::event_index i) {
    const tmod::event_index prev = v.prev_sibling(i);
    return v.name(i) == "aten::item" && prev != tmod::no_event && v.name(prev) == "aten::item";
  }
};

tmod::event_table sample() {
  tmod::testing::table_builder b;
  b.script("train.py(10): step", 0, 1'000);
  b.op("aten::item", 10, 20).op("aten::item", 30, 40).op("aten::item", 50, 60);
  b.op("aten::fill_", 100, 110).op("aten::copy_", 120, 130);
  return b.take();
}

int main(int argc, char** argv) {
  tmod::event_table t = argc > 1 ? tmod::read_chrome_trace_file(argv[1]) : sample();
  tmod::analyze(t);
  const tmod::tree_view view(t);
  const tmod::pattern_context context = tmod::context_of(t, tmod::device_properties(t));

  item_in_loop_pattern items;
  // A rule from building blocks: a fill_ directly followed by a copy_ among siblings.
  auto fill_then_copy = tmod::rule(
      "Fill Then Copy Pattern", "A tensor is filled and then copied over.",
      tmod::sibling_sequence(tmod::name_is("aten::fill_"), tmod::name_is("aten::copy_")));
  auto pytorch = tmod::pytorch_patterns();
  const auto results = std::apply(
      [&](auto&... p) { return tmod::find_patterns(view, context, p..., items, fill_then_copy); },
      pytorch);
  std::fputs(tmod::format_pattern_report(results).c_str(), stdout);
}
