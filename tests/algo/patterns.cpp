#include <doctest/doctest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/patterns.hpp>
#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/algo/tree.hpp>
#include <tracemodel/testing/builder.hpp>

using namespace tracemodel;
using tracemodel::testing::table_builder;

namespace {

/// Names of the matches of each result, "-" for a skipped pattern.
std::vector<std::string> names(const tree_view<>& v, const pattern_result& r) {
  if (r.skipped) return {"-"};
  std::vector<std::string> out;
  for (event_index i : r.matches) out.emplace_back(v.name(i));
  return out;
}

/// Runs one pattern on a table whose tree is built here.
template <class P>
pattern_result run_one(event_table& t, P p, pattern_context c) {
  analyze(t);
  const tree_view v(t);
  return find_patterns(v, c, p).front();
}

pattern_context full_context() {
  pattern_context c;
  c.has_shapes = true;
  c.has_stack = true;
  return c;
}

// A user-defined pattern: a few lines.
struct item_in_loop_pattern {
  std::string_view name() const { return "Item In Loop Pattern"; }
  std::string_view description() const {
    return "aten::item syncs with the device; read values in bulk.";
  }
  template <class S>
  bool match(const tree_view<S>& v, event_index i) {
    return v.name(i) == "aten::item" && v.prev_sibling(i) != no_event &&
           v.name(v.prev_sibling(i)) == "aten::item";
  }
};

// A stateful one: reports the first event of each name only.
struct first_of_each_name {
  std::vector<bool> seen;
  std::string_view name() const { return "First Of Each Name"; }
  std::string_view description() const { return "first occurrence"; }
  template <class S>
  void prepare(const tree_view<S>& v) {
    seen.assign(v.name_keys(), false);
  }
  template <class S>
  std::string report(const tree_view<S>& v, event_index i, std::string_view) const {
    return "first " + std::string(v.name(i));
  }
  template <class S>
  bool match(const tree_view<S>& v, event_index i) {
    const bool first = !seen[v.name_key(i)];
    seen[v.name_key(i)] = true;
    return first;
  }
};

struct not_a_pattern_no_name {
  template <class S>
  bool match(const tree_view<S>&, event_index) {
    return true;
  }
  std::string_view description() const { return ""; }
};

}  // namespace

static_assert(pattern<for_loop_indexing_pattern>);
static_assert(pattern<extra_cuda_copy_pattern>);
static_assert(pattern<item_in_loop_pattern>);
static_assert(pattern<decltype(rule("r", "d", all_of(name_is("a"), not_(name_is("b")))))>);
static_assert(!pattern<not_a_pattern_no_name>);
static_assert(!pattern<int>);
static_assert(tree_predicate<decltype(sibling_sequence(name_is("a"), name_is("b")))>);
static_assert(std::is_same_v<traversal_of_t<for_loop_indexing_pattern>, breadth_first>);
static_assert(std::is_same_v<traversal_of_t<extra_cuda_copy_pattern>, depth_first>);

TEST_SUITE("algo") {
  TEST_CASE("tree_view: siblings, previous and next, thread roots, source location") {
    table_builder b;
    b.script("user.py(3): main", 0, 1000)
        .script("torch/nn/x.py(9): f", 10, 500)
        .op("A", 20, 100)
        .op("B", 120, 200)
        .op("C", 220, 300)
        .script("user.py(20): g", 600, 900);
    b.op("T2a", 5, 50, 2).op("T2b", 60, 70, 2);
    event_table t = b.take();
    build_tree(t);
    const tree_view v(t);
    // 0 main, 1 f, 2 A, 3 B, 4 C, 5 g, 6 T2a, 7 T2b
    CHECK(v.parent(2) == 1);
    CHECK(v.prev_sibling(2) == no_event);
    CHECK(v.next_sibling(2) == 3);
    CHECK(v.prev_sibling(4) == 3);
    CHECK(v.next_sibling(4) == no_event);
    CHECK(v.position(3) == 1);
    CHECK(std::vector<event_index>(v.siblings_before(4).begin(), v.siblings_before(4).end()) ==
          std::vector<event_index>{2, 3});
    CHECK(std::vector<event_index>(v.siblings_after(2).begin(), v.siblings_after(2).end()) ==
          std::vector<event_index>{3, 4});
    CHECK(v.root_of(4) == 0);
    // Roots of one thread are siblings of each other, not of another thread's roots.
    CHECK(v.thread_count() == 2);
    CHECK(v.next_sibling(6) == 7);
    CHECK(v.prev_sibling(0) == no_event);
    CHECK(v.next_sibling(0) == no_event);
    CHECK(std::vector<event_index>(v.roots().begin(), v.roots().end()) ==
          std::vector<event_index>{0, 6, 7});
    // The nearest frame outside the framework: f is torch's, main is the user's.
    CHECK(source_location(v, 2, "torch/") == "user.py(3): main");
    CHECK(source_location(v, 5, "torch/") == "user.py(20): g");
    CHECK(source_location(v, 2, "user") == "torch/nn/x.py(9): f");
    CHECK(source_location(v, 6, "torch/") == no_source_location);
    CHECK(frame_file("a/b.py(12): f") == "a/b.py");
    CHECK(frame_file("nn.Module: Linear_0").empty());
    CHECK(frame_file("x(1a): f").empty());
  }

  TEST_CASE("patterns: extra CUDA copy (fill on the CPU, then to)") {
    auto make = [](std::string_view dst_dtype) {
      table_builder b;
      b.script("user.py(1): main", 0, 1000);
      b.script("user.py(5): make", 10, 100).op("aten::zeros", 20, 90).op("aten::zero_", 30, 80);
      b.script("user.py(6): move", 110, 300)
          .op("aten::to", 120, 290)
          .op("aten::_to_copy", 130, 280);
      b.op("aten::copy_", 140, 270).tensor("float", {4, 4}).tensor(dst_dtype, {4, 4}).other_input();
      return b.take();
    };
    event_table t = make("float");
    auto r = run_one(t, extra_cuda_copy_pattern{}, full_context());
    CHECK(r.matches == std::vector<event_index>{5});
    CHECK(r.frames == std::vector<event_index>{4});  // user.py(6): move
    CHECK(r.reports.front() == std::string(extra_cuda_copy_pattern::description()) +
                                   "\n[Source Code Location] user.py(6): move");
    event_table u = make("double");  // a conversion, not an extra copy
    CHECK(run_one(u, extra_cuda_copy_pattern{}, full_context()).matches.empty());
    pattern_context no_stack = full_context();
    no_stack.has_stack = false;
    event_table w = make("float");
    CHECK(run_one(w, extra_cuda_copy_pattern{}, no_stack).skipped ==
          "needs script frames; the trace has none");
  }

  TEST_CASE("patterns: for-loop indexing needs ten repeats and reports a loop once") {
    auto loop = [](table_builder& b, int repeats, std::int64_t t0) {
      std::int64_t t = t0;
      for (int k = 0; k < repeats; ++k) {
        b.op("aten::select", t, t + 5).op("aten::fill_", t + 10, t + 15);
        t += 20;
      }
      return t;
    };
    table_builder b;
    b.annotation("ten", 0, 10'000);
    loop(b, 10, 1);
    b.annotation("nine", 20'000, 30'000);
    loop(b, 9, 20'001);
    b.annotation("twelve with a tail", 40'000, 50'000);
    const std::int64_t end = loop(b, 12, 40'001);
    b.op("aten::select", end, end + 5);  // a last select without its fill_: not a full repeat
    event_table t = b.take();
    auto r = run_one(t, for_loop_indexing_pattern{}, full_context());
    // The first select of "ten" (index 1) and of "twelve" (index 1 + 20 + 1 + 18 + 1 = 41).
    CHECK(r.matches == std::vector<event_index>{1, 41});
    for_loop_indexing_pattern off;
    off.enabled = false;
    CHECK(run_one(t, off, full_context()).skipped == "disabled by configuration");
    for_loop_indexing_pattern nine;
    nine.min_repeats = 9;
    CHECK(run_one(t, nine, full_context()).matches == std::vector<event_index>{1, 22, 41});
  }

  TEST_CASE("patterns: FP32 matmul fires only for an op that ran on a TF32 device") {
    auto make = [](std::uint8_t flags) {
      table_builder b;
      b.op("aten::mm", 0, 100).flags(flags);
      b.device("cudaLaunchKernel", activity_type::cuda_runtime, 10, 20, 1, 1).correlation(5);
      b.device("sm80_gemm", activity_type::kernel, 50, 80, 7, 0).correlation(5);
      b.op("aten::mm", 200, 300);  // ran on the CPU
      b.tensor("float", {4, 4}).tensor("float", {4, 4});
      return b.take();
    };
    pattern_context ampere = full_context();
    ampere.devices.push_back({0, "NVIDIA A100", 8, 0, false});
    event_table t = make(0);
    CHECK(run_one(t, fp32_matmul_pattern{}, ampere).matches == std::vector<event_index>{0});
    event_table allowed = make(op_flag::allow_tf32);
    CHECK(run_one(allowed, fp32_matmul_pattern{}, ampere).matches.empty());
    pattern_context volta = full_context();
    volta.devices.push_back({0, "Tesla V100", 7, 0, false});
    event_table u = make(0);
    CHECK(run_one(u, fp32_matmul_pattern{}, volta).skipped ==
          "needs a device that supports TF32; the trace shows none");
    pattern_context amd = full_context();
    amd.devices.push_back({0, "AMD Instinct MI250", 9, 0, true});
    event_table w = make(0);
    CHECK(run_one(w, fp32_matmul_pattern{}, amd).skipped.has_value());
    // The report line carries no location (one line for all matches, as PyTorch prints it).
    event_table x = make(0);
    CHECK(run_one(x, fp32_matmul_pattern{}, ampere).reports ==
          std::vector<std::string>{std::string(fp32_matmul_pattern::description())});
  }

  TEST_CASE("patterns: optimizer single tensor, data loader, gradient zeroing") {
    table_builder b;
    b.script("torch/optim/adamw.py(235): _single_tensor_adamw", 0, 10);   // 0 match
    b.script("torch/optim/adamw.py(300): _multi_tensor_adamw", 20, 30);   // 1
    b.script("torch/optim/adam.py(10): _single_tensor_adamax", 40, 50);   // 2
    b.script("torch/optim/sgd.py(10): _single_tensor_sgd", 60, 70);       // 3 match
    b.script("torch/utils/data/dataloader.py(422): __iter__", 100, 200);  // 4 match
    b.script("torch/utils/data/dataloader.py(380): _get_iterator", 110, 190);
    b.script("torch/utils/data/dataloader.py(600): __init__", 120, 180);
    b.script("torch/utils/data/dataloader.py(422): __iter__", 300, 400);  // 7: has workers
    b.script("torch/utils/data/dataloader.py(380): _get_iterator", 310, 390);
    b.script("torch/utils/data/dataloader.py(500): check_worker_number_rationality", 320, 330);
    b.script("torch/optim/optimizer.py(246): zero_grad", 500, 600);  // 10 match
    b.op("aten::zero_", 510, 520);
    b.script("torch/optim/optimizer.py(246): zero_grad", 700, 800);  // 12: zero_ in zeros
    b.op("aten::zeros", 710, 790).op("aten::zero_", 720, 730);
    b.script("torch/optim/optimizer.py(246): zero_grad", 900, 950);  // 15: set to None
    event_table t = b.take();
    CHECK(run_one(t, optimizer_single_tensor_pattern{}, full_context()).matches ==
          std::vector<event_index>{0, 3});
    CHECK(run_one(t, synchronized_data_loader_pattern{}, full_context()).matches ==
          std::vector<event_index>{4});
    CHECK(run_one(t, grad_not_set_to_none_pattern{}, full_context()).matches ==
          std::vector<event_index>{10});
  }

  TEST_CASE("patterns: conv2d with bias followed by batch norm") {
    auto make = [](bool bias, std::string_view next) {
      table_builder b;
      b.script("user.py(1): main", 0, 1000).script("nn.Module: Sequential_0", 10, 900);
      b.script("nn.Module: Conv2d_0", 20, 300).op("aten::conv2d", 30, 290);
      b.tensor("float", {1, 2, 5, 5}).tensor("float", {4, 2, 3, 3});
      if (bias)
        b.tensor("float", {4});
      else
        b.other_input();
      b.script(next, 310, 600);
      return b.take();
    };
    event_table t = make(true, "nn.Module: BatchNorm2d_0");
    auto r = run_one(t, conv2d_bias_followed_by_batch_norm_pattern{}, full_context());
    CHECK(r.matches == std::vector<event_index>{3});
    CHECK(r.frames == std::vector<event_index>{0});  // user.py(1): main
    event_table no_bias = make(false, "nn.Module: BatchNorm2d_0");
    CHECK(run_one(no_bias, conv2d_bias_followed_by_batch_norm_pattern{}, full_context())
              .matches.empty());
    event_table relu = make(true, "nn.Module: ReLU_0");
    CHECK(run_one(relu, conv2d_bias_followed_by_batch_norm_pattern{}, full_context())
              .matches.empty());
  }

  TEST_CASE("patterns: half-precision matmul with unaligned dimensions") {
    table_builder b;
    b.op("aten::mm", 0, 10).tensor("c10::Half", {16, 12}).tensor("c10::Half", {12, 8});   // 0 match
    b.op("aten::mm", 20, 30).tensor("c10::Half", {16, 16}).tensor("c10::Half", {16, 8});  // 1
    b.op("aten::bmm", 40, 50)
        .tensor("c10::BFloat16", {3, 8, 8})
        .tensor("c10::BFloat16", {3, 8, 5});                                      // 2 match
    b.op("aten::mm", 60, 70).tensor("float", {16, 12}).tensor("float", {12, 8});  // 3
    b.op("aten::addmm", 80, 90)
        .tensor("c10::Half", {7})
        .tensor("c10::Half", {16, 16})
        .tensor("c10::Half", {16, 8});  // 4 match
    b.op("aten::mm", 100, 110);         // 5: no inputs
    event_table t = b.take();
    CHECK(run_one(t, matmul_dim_in_fp16_pattern{}, full_context()).matches ==
          std::vector<event_index>{0, 2, 4});
  }

  TEST_CASE("patterns: one traversal per order, user patterns, state and combinators") {
    table_builder b;
    b.annotation("step", 0, 1000);                             // 0
    b.op("aten::select", 10, 20).op("aten::copy_", 30, 40);    // 1 2
    b.op("aten::item", 50, 60).op("aten::item", 70, 80);       // 3 4
    b.op("aten::add", 90, 200).op("aten::mul", 100, 150);      // 5 6
    b.op("aten::select", 210, 220).op("aten::add", 230, 240);  // 7 8
    event_table t = b.take();
    build_tree(t);
    const tree_view v(t);
    const pattern_context c = full_context();
    item_in_loop_pattern items;
    first_of_each_name firsts;
    auto select_copy = rule("Select Then Copy", "d",
                            sibling_sequence(name_is("aten::select"), name_is("aten::copy_")));
    auto aten_not_add = rule(
        "Aten Not Add", "d",
        all_of(kind_is<event_kind::op>, name_starts_with("aten::"), not_(name_is("aten::add"))));
    auto add_or_mul =
        rule<breadth_first>("Add Or Mul", "d", any_of(name_is("aten::add"), name_is("aten::mul")));
    auto parent_add = rule("Child Of Add", "d", parent_is(name_is("aten::add")));
    auto has_mul = rule("Has Mul Below", "d", has_descendant(name_matches("m[u]l$")));
    auto first_last =
        rule("First Select Last Add", "d",
             all_of(first_child_is(name_is("aten::select")), last_child_is(name_is("aten::add"))));
    auto needs_tf32 = rule("Needs TF32", "d", name_is("aten::add"), needs::tf32_device);
    auto regex = name_pattern("^aten::(item|mul)$");
    const auto r = find_patterns(v, c, items, firsts, select_copy, aten_not_add, add_or_mul,
                                 parent_add, has_mul, first_last, needs_tf32, regex);
    CHECK(names(v, r[0]) == std::vector<std::string>{"aten::item"});
    CHECK(r[0].matches == std::vector<event_index>{4});
    CHECK(names(v, r[1]) == std::vector<std::string>{"step", "aten::select", "aten::copy_",
                                                     "aten::item", "aten::add", "aten::mul"});
    CHECK(r[1].reports == std::vector<std::string>{"first step", "first aten::select",
                                                   "first aten::copy_", "first aten::item",
                                                   "first aten::add", "first aten::mul"});
    CHECK(r[2].matches == std::vector<event_index>{1});
    CHECK(r[2].frames == std::vector<event_index>{no_event});
    CHECK(r[2].reports == std::vector<std::string>{"d\n[Source Code Location] no source location"});
    CHECK(r[3].matches == std::vector<event_index>{1, 2, 3, 4, 6, 7});
    // Breadth-first: the children of the root in order, then the grandchild.
    CHECK(r[4].matches == std::vector<event_index>{5, 8, 6});
    CHECK(r[5].matches == std::vector<event_index>{6});
    CHECK(r[6].matches == std::vector<event_index>{0, 5});
    CHECK(r[7].matches == std::vector<event_index>{0});
    CHECK(r[8].skipped == "needs a device that supports TF32; the trace shows none");
    CHECK(r[9].name == "^aten::(item|mul)$");
    CHECK(r[9].matches == std::vector<event_index>{3, 4, 6});
    // State is reset by `prepare`: a second run finds the same.
    const auto again = find_patterns(v, c, firsts);
    CHECK(again[0].matches == r[1].matches);
  }

  TEST_CASE("patterns: the report, laid out as PyTorch's") {
    std::vector<pattern_result> rs(3);
    rs[0].name = "A Pattern";
    rs[0].matches = {1, 2};
    rs[0].reports = {"do a\n[Source Code Location] u.py(1): f",
                     "do a\n[Source Code Location] u.py(1): f"};
    rs[1].name = "Skipped Pattern";
    rs[1].skipped = "needs input shapes; the trace has none";
    rs[2].name = "B Pattern";
    rs[2].matches = {3};
    rs[2].reports = {"do b"};
    const std::string rule(40, '-');
    CHECK(format_pattern_report(rs) ==
          rule + "TorchTidy Report" + rule + "\nMatched Events:\n" +
              "do a\n[Source Code Location] u.py(1): f\ndo b\nSummary:\n"
              "A Pattern: 2 events matched.\nB Pattern: 1 events matched.\n" +
              rule + "TorchTidy Report" + rule + "\n");
    CHECK(format_pattern_report({}, {.title = "X"}) ==
          rule + "X" + rule + "\nMatched Events:\nSummary:\n" + rule + "X" + rule + "\n");
  }

  TEST_CASE("patterns: random trees, traversal orders and one pass against brute force") {
    std::mt19937_64 rng(20261122);
    const char* alphabet[] = {"aten::select",  "aten::fill_", "aten::to", "aten::_to_copy",
                              "aten::copy_",   "aten::zero_", "aten::mm", "aten::zeros",
                              "user.py(3): f", "x: zero_grad"};
    for (int round = 0; round < 60; ++round) {
      table_builder b;
      // Random well-nested intervals on up to three threads: each event inside the previous
      // open one or after it.
      const int threads = 1 + static_cast<int>(rng() % 3);
      for (int th = 1; th <= threads; ++th) {
        std::vector<std::int64_t> open_end;
        std::int64_t t = 0;
        const int n = 5 + static_cast<int>(rng() % 60);
        for (int k = 0; k < n; ++k) {
          while (!open_end.empty() && (rng() % 3 == 0 || open_end.back() - t < 4)) {
            t = open_end.back() + 1;
            open_end.pop_back();
          }
          const std::int64_t room = open_end.empty() ? 1000 : open_end.back() - t - 2;
          const std::int64_t len =
              1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(room));
          const char* name = alphabet[rng() % std::size(alphabet)];
          if (name[0] == 'u' || name[0] == 'x')
            b.script(name, t + 1, t + 1 + len, static_cast<thread_key>(th));
          else
            b.op(name, t + 1, t + 1 + len, static_cast<thread_key>(th))
                .tensor("float", {8, 8})
                .tensor("float", {8, 8});
          open_end.push_back(t + 1 + len);
          t += 1;
        }
      }
      event_table t = b.take();
      build_tree(t);
      const tree_view v(t);
      // Brute force orders from parent links alone.
      std::vector<std::vector<event_index>> kids(t.size());
      std::vector<event_index> roots;
      for (std::size_t i = 0; i < t.size(); ++i) {
        if (t.events[i].parent == no_event)
          roots.push_back(static_cast<event_index>(i));
        else
          kids[t.events[i].parent].push_back(static_cast<event_index>(i));
      }
      auto by_start = [&t](event_index a, event_index c) {
        return t.events[a].start_ns < t.events[c].start_ns;
      };
      std::stable_sort(roots.begin(), roots.end(), by_start);
      for (auto& k : kids) std::stable_sort(k.begin(), k.end(), by_start);
      std::vector<event_index> pre, bfs;
      std::vector<event_index> stack(roots.rbegin(), roots.rend());
      while (!stack.empty()) {
        const event_index i = stack.back();
        stack.pop_back();
        pre.push_back(i);
        stack.insert(stack.end(), kids[i].rbegin(), kids[i].rend());
      }
      std::deque<event_index> queue(roots.begin(), roots.end());
      while (!queue.empty()) {
        bfs.push_back(queue.front());
        queue.insert(queue.end(), kids[queue.front()].begin(), kids[queue.front()].end());
        queue.pop_front();
      }
      auto all_dfs = rule("all", "d", not_(name_is("")));
      auto all_bfs = rule<breadth_first>("all", "d", not_(name_is("")));
      const pattern_context c = full_context();
      const auto orders = find_patterns(v, c, all_dfs, all_bfs);
      REQUIRE(orders[0].matches == pre);
      REQUIRE(orders[1].matches == bfs);
      // Siblings against brute force.
      for (std::size_t i = 0; i < t.size(); ++i) {
        const event_index p = t.events[i].parent;
        std::vector<event_index> sib;
        if (p != no_event) {
          sib = kids[p];
        } else {
          for (event_index r : roots)
            if (t.events[r].tid == t.events[i].tid) sib.push_back(r);
        }
        const auto s = v.siblings(static_cast<event_index>(i));
        REQUIRE(std::vector<event_index>(s.begin(), s.end()) == sib);
        const auto at =
            static_cast<std::size_t>(std::find(sib.begin(), sib.end(), i) - sib.begin());
        CHECK(v.position(static_cast<event_index>(i)) == at);
        CHECK(v.prev_sibling(static_cast<event_index>(i)) == (at == 0 ? no_event : sib[at - 1]));
        CHECK(v.next_sibling(static_cast<event_index>(i)) ==
              (at + 1 == sib.size() ? no_event : sib[at + 1]));
      }
      // All patterns in one pass find what each finds alone.
      auto together = pytorch_patterns();
      const auto one_pass = find_patterns(v, c, together);
      auto alone = pytorch_patterns();
      std::size_t k = 0;
      std::apply(
          [&](auto&... p) {
            (
                [&] {
                  REQUIRE(find_patterns(v, c, p).front().matches == one_pass[k].matches);
                  ++k;
                }(),
                ...);
          },
          alone);
    }
  }
}
