#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/flows.hpp>
#include <tracemodel/algo/fwd_bwd.hpp>
#include <tracemodel/algo/tree.hpp>
#include <tracemodel/collect.hpp>
#include <tracemodel/detail/id_map.hpp>
#include <tracemodel/testing/builder.hpp>
#include <tracemodel/testing/dump.hpp>

#include "../support/kineto_loader.hpp"
#include "../support/oracle.hpp"

using namespace tracemodel;
using tracemodel::testing::table_builder;

namespace {
/// The links of one kind in `t.links`, in order.
std::vector<flow_link> links_of(const event_table& t, flow_kind kind) {
  std::vector<flow_link> out;
  for (const flow_link& l : t.links)
    if (l.kind == kind) out.push_back(l);
  return out;
}
/// Runs the forward/backward linker and returns its links.
template <class Policy = pytorch_links>
std::vector<flow_link> fwd_bwd_links(event_table& t, Policy p = {}) {
  const fwd_bwd_stats s = link_forward_backward(t, p);
  std::vector<flow_link> links = links_of(t, flow_kind::fwd_bwd);
  CHECK(s.links == links.size());
  // They come first.
  for (std::size_t k = 0; k < links.size(); ++k) CHECK(t.links[k] == links[k]);
  return links;
}

template <class Links>
std::string link_text(const event_table& t, const Links& links) {
  std::string out;
  for (const flow_link& l : links)
    out += std::to_string(l.id) + ": " + std::string(t.name(l.from)) + " -> " +
           std::string(t.name(l.to)) + "\n";
  return out;
}

/// The forward/backward rules written out plainly (ordered maps, whole-table sorts), as the
/// reference for the randomized test: wrappers inherit from the next op of their thread, forward
/// threads in order of first appearance, keys (thread, seq), visit by end (ties: the later
/// start first) or by start, the latest-starting forward op wins, consumed on a match.
template <class Policy>
std::vector<std::pair<event_index, event_index>> reference_fwd_bwd(event_table& t) {
  std::vector<event_index> ops;
  for (event_index i = 0; i < t.size(); ++i)
    if (t.events[i].is<event_kind::op>()) ops.push_back(i);
  std::stable_sort(ops.begin(), ops.end(), [&](event_index a, event_index b) {
    return t.events[a].start_ns < t.events[b].start_ns;
  });
  auto op = [&](event_index i) -> extra_fields<event_kind::op>& {
    return t.events[i].get<event_kind::op>();
  };
  using thread = std::pair<process_key, thread_key>;
  auto thread_of = [&](event_index i) { return thread{t.events[i].pid, t.events[i].tid}; };
  std::map<thread, event_index> prev;
  for (event_index i : ops) {
    const auto it = prev.find(thread_of(i));
    if (it != prev.end()) {
      auto& w = op(it->second);
      const bool backward = op(i).scope == op_scope::backward_function || op(i).fwd_thread_id > 0;
      if (backward && w.scope == op_scope::function &&
          t.strings.view(w.name).starts_with(Policy::wrapper_prefix)) {
        w.sequence_number = op(i).sequence_number;
        w.fwd_thread_id = op(i).fwd_thread_id;
      }
    }
    prev[thread_of(i)] = i;
  }
  std::map<process_key, std::vector<thread_key>> forward_threads;
  for (event_index i : ops) {
    if (op(i).sequence_number < 0 || op(i).fwd_thread_id != 0) continue;
    auto& v = forward_threads[t.events[i].pid];
    if (std::find(v.begin(), v.end(), t.events[i].tid) == v.end()) v.push_back(t.events[i].tid);
  }
  struct keyed {
    std::size_t position;
    event_index index;
    std::tuple<process_key, thread_key, std::int64_t> key;
    bool forward;
  };
  std::vector<keyed> ks;
  for (std::size_t p = 0; p < ops.size(); ++p) {
    const event_index i = ops[p];
    const auto& f = op(i);
    if (f.sequence_number < 0) continue;
    const process_key pid = t.events[i].pid;
    const thread_key th = f.fwd_thread_id == 0 ? t.events[i].tid
                                               : Policy::thread_resolver::resolve(
                                                     f.fwd_thread_id, forward_threads[pid]);
    ks.push_back({p, i, {pid, th, f.sequence_number}, f.fwd_thread_id == 0});
  }
  auto end_of = [&](event_index i) {
    const std::int64_t e = op(i).end_ns;
    return e == no_end_ns ? std::numeric_limits<std::int64_t>::max() : e;
  };
  std::sort(ks.begin(), ks.end(), [&](const keyed& a, const keyed& b) {
    if (Policy::visit_by_end && end_of(a.index) != end_of(b.index))
      return end_of(a.index) < end_of(b.index);
    return Policy::visit_by_end ? a.position > b.position : a.position < b.position;
  });
  std::map<std::tuple<process_key, thread_key, std::int64_t>, event_index> slots;
  std::vector<std::pair<event_index, event_index>> links;
  for (const keyed& k : ks) {
    const auto it = slots.find(k.key);
    if (k.forward) {
      if (it == slots.end() || t.events[k.index].start_ns >= t.events[it->second].start_ns)
        slots[k.key] = k.index;
    } else if (it != slots.end()) {
      links.emplace_back(it->second, k.index);
      if (Policy::consume_on_match) slots.erase(it);
    }
  }
  return links;
}
}  // namespace

TEST_SUITE("algo") {
  TEST_CASE("id_map: the first index of an id wins, wherever the ids lie") {
    // Ids around a base far above the table size (a later session of one process), below the
    // window the first id places, far above it, and in pages nothing touched: against a plain map.
    std::mt19937_64 rng(7);
    for (int round = 0; round < 40; ++round) {
      const std::size_t events = 1 + rng() % 3000;
      const std::uint64_t base = round % 4 == 0 ? 1 : (std::uint64_t{1} << (10 + rng() % 50));
      detail::id_map m(events);
      std::map<std::uint64_t, event_index> ref;
      // The window the first id (base + 5) places: 4 * events + 4096 ids, a quarter of them
      // below that id. Ids next to both of its edges are drawn too.
      const std::uint64_t first = base + 5, limit = 4 * events + 4096, below = limit / 4;
      auto draw = [&]() -> std::uint64_t {
        switch (rng() % 7) {
          case 5:
            return first + (limit - below) - 3 + rng() % 6;  // the upper edge
          case 6:
            return first - below - 3 + rng() % 6;  // the lower edge (may wrap)
          case 0:
            return rng() % 50;  // small ids
          case 1:
            return base + rng() % (8 * events);  // around the first ids
          case 2:
            return base > 100 ? base - 1 - rng() % 100 : rng() % 100;  // just below
          case 3:
            return rng();  // anywhere
          default:
            return base + rng() % 64;  // many duplicates
        }
      };
      CHECK(m.find(base) == no_event);
      for (std::size_t k = 0; k < 2 * events; ++k) {
        const std::uint64_t id = k == 0 ? base + 5 : draw();
        const auto i = static_cast<event_index>(k);
        const bool fresh = ref.emplace(id, i).second;
        REQUIRE(m.insert(id, i) == fresh);
      }
      for (const auto& [id, i] : ref) REQUIRE(m.find(id) == i);
      for (int k = 0; k < 2000; ++k) {
        const std::uint64_t id = draw();
        const auto it = ref.find(id);
        REQUIRE(m.find(id) == (it == ref.end() ? no_event : it->second));
      }
    }
  }

  TEST_CASE("link_forward_backward: PyTorch's scenario recorded through the library") {
    // torch.add(t1, t2); torch.ones(1); binary_cross_entropy_with_logits(z, y); loss.backward()
    record_queue<> q;
    const std::uint64_t main_tid = current_thread_id();
    q.end_op(q.begin_op({.name = "aten::add", .sequence_number = 0}));
    q.end_op(q.begin_op({.name = "aten::ones"}));
    {
      TRACEMODEL_SCOPED_OP(q, .name = "aten::binary_cross_entropy_with_logits",
                           .sequence_number = 1);
      TRACEMODEL_SCOPED_OP(q, .name = "aten::sigmoid");
    }
    std::thread autograd([&] {  // backward runs on the engine's own thread
      auto node = [&](const char* wrapper, const char* name, std::int64_t seq) {
        TRACEMODEL_SCOPED_OP(q, .name = wrapper);
        TRACEMODEL_SCOPED_OP(q, .name = name, .sequence_number = seq, .fwd_thread_id = main_tid,
                             .scope = op_scope::backward_function);
        TRACEMODEL_SCOPED_OP(q, .name = "aten::mul");
      };
      node("autograd::engine::evaluate_function: BinaryCrossEntropyWithLogitsBackward0",
           "BinaryCrossEntropyWithLogitsBackward0", 1);
      node("autograd::engine::evaluate_function: AddBackward0", "AddBackward0", 0);
      node("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
           "torch::autograd::AccumulateGrad", -1);
    });
    autograd.join();
    event_table t = materialize(q);
    const auto links = fwd_bwd_links(t);
    CHECK(link_text(t, links) ==
          "1: aten::binary_cross_entropy_with_logits -> BinaryCrossEntropyWithLogitsBackward0\n"
          "2: aten::add -> AddBackward0\n");
    // The wrappers inherited the sequence number and forward thread of their backward op.
    for (const auto& e : t.events)
      if (t.name(e) == "autograd::engine::evaluate_function: AddBackward0") {
        CHECK(e.get<event_kind::op>().sequence_number == 0);
        CHECK(e.get<event_kind::op>().fwd_thread_id == main_tid);
      }
  }

  TEST_CASE("link_forward_backward: the forward op that started last wins, one link each") {
    table_builder b;
    b.op("aten::linear", 0, 100)
        .seq(4)
        .op("aten::t", 10, 20)
        .seq(4)
        .op("aten::addmm", 30, 90)
        .seq(5);
    b.op("autograd::engine::evaluate_function: AddmmBackward0", 200, 260).seq(-1, 1);
    b.op("AddmmBackward0", 201, 250).seq(5, 1).scope(op_scope::backward_function);
    b.op("autograd::engine::evaluate_function: TBackward0", 300, 360);
    b.op("TBackward0", 301, 350).seq(4, 1).scope(op_scope::backward_function);
    event_table t = b.take();
    const auto links = fwd_bwd_links(t);
    CHECK(link_text(t, links) == "1: aten::addmm -> AddmmBackward0\n2: aten::t -> TBackward0\n");
    // PyTorch 1.13 (start order, keys kept): the wrappers link too.
    const auto old = fwd_bwd_links(t, pytorch_1_13_links{});
    CHECK(link_text(t, old) ==
          "1: aten::addmm -> autograd::engine::evaluate_function: AddmmBackward0\n"
          "2: aten::addmm -> AddmmBackward0\n"
          "3: aten::t -> autograd::engine::evaluate_function: TBackward0\n"
          "4: aten::t -> TBackward0\n");
  }

  TEST_CASE("link_forward_backward: records far from their order by end (a deep chain)") {
    // The visit by end inserts each record's end among the ends before it, which suits records
    // taken in start order (a few places each); a chain of 3,000 nested forward ops, whose
    // ends come in reverse, overruns that and is sorted by radix instead. The backward ops on
    // a second thread end while the chain unwinds, each with a key of its own: it links only
    // if its forward op ended first, so the visit order decides which links exist.
    constexpr int depth = 3000;
    table_builder b;
    for (int k = 0; k < depth; ++k) b.op("aten::f", k, 2 * depth - k, 1).seq(k);
    for (int j = 0; j < depth; ++j)
      b.op("FBackward0", depth + j, depth + j + 1, 2)
          .seq((j * 7919) % depth, 1)
          .scope(op_scope::backward_function);
    event_table t = b.take();
    event_table want_t = t;
    const auto links = fwd_bwd_links(t);
    const auto want = reference_fwd_bwd<pytorch_links>(want_t);
    // f_k ends at 2 depth - k, b_j at depth + j + 1: about half of the keys link.
    std::size_t expected = 0;
    for (int j = 0; j < depth; ++j)
      expected += 2 * depth - (j * 7919) % depth < depth + j + 1 ? 1 : 0;
    CHECK(links.size() == expected);
    REQUIRE(want.size() == links.size());
    bool same = true;
    for (std::size_t k = 0; k < links.size(); ++k)
      same = same && links[k].id == k + 1 && links[k].from == want[k].first &&
             links[k].to == want[k].second;
    CHECK(same);
  }

  TEST_CASE("link_forward_backward: a wrapper ending in the same nanosecond as its backward op") {
    // A trace file does not say which op is a wrapper by scope, only by name, so the wrapper
    // inherits the key; when both end at once the inner op (the later start) still gets the link.
    table_builder b;
    b.op("aten::mm", 0, 50).seq(7);
    b.op("autograd::engine::evaluate_function: MmBackward0", 100, 200, 2);
    b.op("MmBackward0", 110, 200, 2).seq(7, 1);
    event_table t = b.take();
    const auto links = fwd_bwd_links(t);
    CHECK(link_text(t, links) == "1: aten::mm -> MmBackward0\n");
  }

  struct literal_links : pytorch_links {
    using thread_resolver = literal_thread_ids;
  };

  TEST_CASE("link_forward_backward: runtime thread ids resolve to a file's OS thread ids") {
    auto make = [] {
      table_builder b;
      b.op("fwd on 5001", 0, 10, 5001).seq(1);
      b.op("fwd on 5002", 20, 30, 5002).seq(1);
      b.op("fwd on tid 2", 40, 50, 2).seq(7);
      b.op("bwd of thread 1", 100, 110, 9000).seq(1, 1);  // names the 1st forward thread: 5001
      b.op("bwd of thread 2", 120, 130, 9000).seq(7, 2);  // a thread with tid 2 exists: as is
      return b.take();
    };
    event_table t = make();
    CHECK(link_text(t, fwd_bwd_links(t)) ==
          "1: fwd on 5001 -> bwd of thread 1\n2: fwd on tid 2 -> bwd of thread 2\n");
    event_table u = make();  // ids taken literally: thread 1 recorded nothing
    CHECK(link_text(u, fwd_bwd_links(u, literal_links{})) ==
          "1: fwd on tid 2 -> bwd of thread 2\n");
  }

  TEST_CASE("link_forward_backward: keys are true pairs (no 16+48-bit packing collisions)") {
    table_builder b;
    const std::int64_t big = std::int64_t{1} << 48;
    b.op("seq 5", 0, 10, 1).seq(5);
    b.op("seq 5 + 2^48", 20, 30, 1).seq(5 + big);
    b.op("tid 65537", 40, 50, 65537).seq(9);
    b.op("tid 1 seq 9", 60, 70, 1).seq(9);
    b.op("bwd seq 5", 100, 110, 2).seq(5, 1);
    b.op("bwd tid 1 seq 9", 120, 130, 2).seq(9, 1);
    event_table t = b.take();
    const auto links = fwd_bwd_links(t);
    // PyTorch's packed key would take "seq 5 + 2^48" for seq 5 and mix tid 65537 with tid 1.
    CHECK(link_text(t, links) == "1: seq 5 -> bwd seq 5\n2: tid 1 seq 9 -> bwd tid 1 seq 9\n");
  }

  TEST_CASE("link_forward_backward: random tables equal the plainly written rules") {
    std::mt19937_64 rng(20261122);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
    const char* names[] = {"aten::mm", "autograd::engine::evaluate_function: MmBackward0",
                           "MmBackward0", "aten::add"};
    for (int round = 0; round < 400; ++round) {
      table_builder b;
      const int n = 1 + pick(60);
      for (int k = 0; k < n; ++k) {
        const std::int64_t start = pick(40);
        // Some end before they start (hand-made tables can say so; the order by end must hold).
        const std::int64_t end = pick(12) == 0   ? no_end_ns
                                 : pick(25) == 0 ? start - 1 - pick(3)
                                                 : start + pick(15);
        const thread_key tid = static_cast<thread_key>(1 + pick(3)) * (pick(4) == 0 ? 1000 : 1);
        b.op(names[pick(4)], start, end, tid, static_cast<process_key>(1 + pick(2) / 1));
        b.seq(pick(4) == 0 ? -1 : pick(5), pick(2) == 0 ? 0 : static_cast<std::uint64_t>(pick(4)));
        const int sc = pick(6);
        b.scope(sc == 0   ? op_scope::backward_function
                : sc == 1 ? op_scope::user_scope
                          : op_scope::function);
      }
      event_table t = b.take();
      // Tables need not be sorted. Sorted ones take the pass in table order; one with a late
      // pair out of order starts that pass, then undoes what the wrappers inherited.
      if (round % 3 == 0) {
        std::shuffle(t.events.begin(), t.events.end(), rng);
      } else {
        std::stable_sort(t.events.begin(), t.events.end(),
                         [](const auto& x, const auto& y) { return x.start_ns < y.start_ns; });
        if (round % 3 == 2 && t.size() > 2) {
          const std::size_t k = t.size() - 1 - static_cast<std::size_t>(pick(2));
          std::swap(t.events[k], t.events[static_cast<std::size_t>(pick(static_cast<int>(k)))]);
        }
      }
      auto check = [&](auto policy) {
        using P = decltype(policy);
        event_table got_t = t, want_t = t;
        std::vector<std::pair<event_index, event_index>> got;
        std::uint64_t id = 0;
        for (const flow_link& l : fwd_bwd_links(got_t, P{})) {
          CHECK(l.id == ++id);
          got.emplace_back(l.from, l.to);
        }
        const auto want = reference_fwd_bwd<P>(want_t);
        INFO("round " << round << " events " << t.size());
        CHECK(got == want);
        for (event_index i = 0; i < t.size(); ++i) {  // the wrappers' inherited keys
          CHECK(got_t.events[i].get<event_kind::op>().sequence_number ==
                want_t.events[i].get<event_kind::op>().sequence_number);
          CHECK(got_t.events[i].get<event_kind::op>().fwd_thread_id ==
                want_t.events[i].get<event_kind::op>().fwd_thread_id);
        }
      };
      check(pytorch_links{});
      check(pytorch_1_13_links{});
    }
  }

  TEST_CASE("link_forward_backward: a table out of order undoes what the first pass wrote") {
    // In table order the wrappers come right before their backward ops and inherit their keys;
    // then an op that started earlier comes: in start order it comes between each wrapper and
    // its backward op, so neither wrapper inherits anything and both keep what they had (none,
    // and keys of their own).
    for (const bool own_keys : {false, true}) {
      CAPTURE(own_keys);
      table_builder b;
      const char* wrapper = "autograd::engine::evaluate_function: MmBackward0";
      b.op("aten::mm", 0, 100, 1, 1).seq(4, 0);                                // 0: the forward op
      b.op(wrapper, 200, 260, 2, 1).seq(own_keys ? 9 : -1, own_keys ? 3 : 0);  // 1
      b.op("MmBackward0", 220, 250, 2, 1).seq(4, 1).scope(op_scope::backward_function);  // 2
      b.op(wrapper, 300, 360, 2, 1);                                                     // 3
      b.op("MmBackward0", 320, 350, 2, 1).seq(5, 1).scope(op_scope::backward_function);  // 4
      b.op("aten::zeros", 210, 215, 2, 1);  // 5: out of order
      b.op("aten::zeros", 310, 315, 2, 1);  // 6
      event_table t = b.take();
      const auto links = fwd_bwd_links(t);
      REQUIRE(links.size() == 1);
      CHECK(links[0].from == 0);
      CHECK(links[0].to == 2);
      const auto& w1 = t.events[1].get<event_kind::op>();
      CHECK(w1.sequence_number == (own_keys ? 9 : -1));
      CHECK(w1.fwd_thread_id == (own_keys ? 3u : 0u));
      const auto& w3 = t.events[3].get<event_kind::op>();
      CHECK(w3.sequence_number == -1);
      CHECK(w3.fwd_thread_id == 0u);
      // `analyze` reads the table in table order first, and undoes what it wrote there.
      event_table u = b.take();
      u = t;
      for (event_index i : {event_index{1}, event_index{3}}) {
        auto& w = u.events[i].get<event_kind::op>();  // as built
        w.sequence_number = i == 1 && own_keys ? 9 : -1;
        w.fwd_thread_id = i == 1 && own_keys ? 3 : 0;
      }
      u.links.clear();
      const analysis a = analyze(u);
      CHECK(a.fwd_bwd.links == 1);
      CHECK(a.fwd_bwd.wrappers == 0);
      CHECK(links_of(u, flow_kind::fwd_bwd) == links);
      for (event_index i : {event_index{1}, event_index{3}}) {
        CHECK(u.events[i].get<event_kind::op>().sequence_number ==
              t.events[i].get<event_kind::op>().sequence_number);
        CHECK(u.events[i].get<event_kind::op>().fwd_thread_id ==
              t.events[i].get<event_kind::op>().fwd_thread_id);
      }
    }
  }

  TEST_CASE("link_forward_backward: the four fwdbwd flows of a real ROCm trace") {
    tmtest::loaded_trace lt = tmtest::load_kineto(
        tmtest::data_path("kineto/amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"));
    std::map<std::uint64_t, std::pair<event_index, event_index>> file;
    for (const auto& f : lt.flows) {
      if (f.cat != "fwdbwd") continue;
      REQUIRE(f.event != no_event);
      (f.ph == 's' ? file[f.id].first : file[f.id].second) = f.event;
    }
    REQUIRE(file.size() == 4);
    const auto links = fwd_bwd_links(lt.table);
    REQUIRE(links.size() == 4);
    for (const flow_link& l : links) {
      INFO("flow " << l.id);
      REQUIRE(file.count(l.id) == 1);
      CHECK(file[l.id].first == l.from);
      CHECK(file[l.id].second == l.to);
    }
  }

  TEST_CASE("link_forward_backward: PyTorch 1.13's algorithm gives the oracles' derived links") {
    for (const char* w : {"mlp_train", "adamw_zero_grad"}) {
      tmtest::json_doc doc(tmtest::data_path(std::string("pytorch-1.13/") + w + ".oracle.json"));
      tmtest::oracle_tree o = tmtest::load_oracle_tree(doc);
      std::set<std::pair<event_index, event_index>> expected;
      for (simdjson::dom::element l :
           simdjson::dom::array(doc.root["forward_backward"]["derived_links_1_13_algorithm"]))
        expected.emplace(static_cast<event_index>(uint64_t(l["forward"]["tree_node"])),
                         static_cast<event_index>(uint64_t(l["backward"]["tree_node"])));
      std::set<std::pair<event_index, event_index>> got;
      for (const flow_link& l : fwd_bwd_links(o.table, pytorch_1_13_links{}))
        got.emplace(l.from, l.to);
      INFO(w);
      CHECK(got.size() == expected.size());
      CHECK(got == expected);
    }
  }

  TEST_CASE("link_device_activities: flows first, then correlation, then external id") {
    table_builder b;
    b.op("aten::mm", 0, 100, 1).op_correlation(1);
    b.device("cudaLaunchKernel", activity_type::cuda_runtime, 10, 20, 1, 1)
        .correlation(7)
        .external_id(1)
        .flow(7, true);
    b.device("gemm", activity_type::kernel, 30, 200, 7, 0)
        .correlation(7)
        .external_id(1)
        .flow(7, false);
    b.device("cudaMemcpyAsync", activity_type::cuda_runtime, 40, 50, 1, 1)
        .correlation(8)
        .external_id(1);
    b.device("Memcpy HtoD", activity_type::gpu_memcpy, 210, 220, 7, 0)
        .correlation(8)
        .external_id(1);
    b.device("Memset", activity_type::gpu_memset, 230, 240, 8, 0).external_id(1);
    b.device("orphan kernel", activity_type::kernel, 250, 260, 7, 0).correlation(99);
    b.device("cudaStreamWaitEvent", activity_type::cuda_runtime, 60, 70, 1, 1)
        .correlation(9)
        .external_id(1);
    b.device("Stream Wait Event", activity_type::cuda_sync, 70, 75, 7, 0).correlation(9);
    b.device("second start", activity_type::cuda_runtime, 80, 85, 1, 1)
        .correlation(10)
        .flow(7, true);
    b.device("end without start", activity_type::kernel, 300, 310, 7, 0)
        .correlation(10)
        .flow(55, false);
    event_table t = b.take();
    const device_link_stats s = link_device_activities(t);
    CHECK(s.by_flow == 1);
    CHECK(s.by_correlation == 3);  // memcpy, sync, and the flow end whose start is missing
    CHECK(s.by_external_id == 1);  // memset
    CHECK(s.runtime_calls == 3);   // the launch, the memcpy and the wait call have op 1's id
    CHECK(s.unlinked == 1);
    CHECK(s.duplicate_flow_starts == 1);
    CHECK(s.flow_ends_without_start == 1);
    CHECK(s.dangling_correlations == 1);
    CHECK(t.anomalies[anomaly::duplicate_flow_start] == 1);
    CHECK(t.anomalies[anomaly::flow_end_without_start] == 1);
    CHECK(t.anomalies[anomaly::dangling_correlation] == 1);
    build_tree(t);
    CHECK(tracemodel::testing::tree_text(t) ==
          "aten::mm\n"
          "  cudaLaunchKernel\n"
          "    gemm\n"
          "  cudaMemcpyAsync\n"
          "    Memcpy HtoD\n"
          "  cudaStreamWaitEvent\n"
          "    Stream Wait Event\n"
          "  second start\n"
          "    end without start\n"
          "  Memset\n"
          "orphan kernel\n");
    // Device activities keep their own track by default.
    CHECK(t[2].tid == 7);
    CHECK(t[2].pid == 0);
  }

  TEST_CASE("link_device_activities: random tables equal the plainly written rules") {
    // Launches, kernels, memcpys and ops with ids drawn from small ranges (so that duplicates,
    // missing starts and dangling ids are common), in any table order: parents, link kinds,
    // the links in table order of their device activity, and the counts equal the rules
    // applied one event at a time over maps made from the whole table first.
    std::mt19937_64 rng(7);
    auto pick = [&](int n) {
      return static_cast<std::uint64_t>(rng() % static_cast<std::uint64_t>(n));
    };
    for (int round = 0; round < 500; ++round) {
      table_builder b;
      const int n = 1 + static_cast<int>(pick(40));
      for (int k = 0; k < n; ++k) {
        const auto start = static_cast<std::int64_t>(pick(100));
        switch (pick(4)) {
          case 0:
            b.op("op", start, start + 50, 1).op_correlation(pick(8));
            break;
          case 1:
            b.device("launch", activity_type::cuda_runtime, start, start + 5, 1, 1)
                .correlation(pick(8))
                .external_id(pick(8));
            if (pick(2) == 0) b.flow(pick(8), true);
            break;
          default:
            b.device(pick(2) == 0 ? "kernel" : "memcpy",
                     pick(2) == 0 ? activity_type::kernel : activity_type::gpu_memcpy, start,
                     start + 9)
                .correlation(pick(8))
                .external_id(pick(3) == 0 ? pick(8) : 0);
            if (pick(2) == 0) b.flow(pick(8), false);
            break;
        }
      }
      event_table t = b.take();
      if (round % 2 == 0) std::shuffle(t.events.begin(), t.events.end(), rng);
      event_table want = t;

      // The rules, plainly.
      std::map<std::uint64_t, event_index> starts, calls, ops;
      std::size_t duplicates = 0;
      for (event_index i = 0; i < want.size(); ++i) {
        const auto& e = want.events[i];
        if (const auto* d = e.get_if<event_kind::device_activity>()) {
          if (d->flow_start && d->flow_type == flow_kind::async_cpu_gpu && d->flow_id != 0)
            duplicates += starts.emplace(d->flow_id, i).second ? 0 : 1;
          if (is_runtime_call(d->activity) && d->correlation_id != 0)
            calls.emplace(d->correlation_id, i);
        } else if (const auto* op = e.get_if<event_kind::op>()) {
          if (op->correlation_id != 0) ops.emplace(op->correlation_id, i);
        }
      }
      auto find = [](const std::map<std::uint64_t, event_index>& m, std::uint64_t id) {
        const auto it = m.find(id);
        return it == m.end() ? no_event : it->second;
      };
      std::vector<flow_link> want_links;
      std::size_t by_flow = 0, by_corr = 0, by_ext = 0, calls_placed = 0, unlinked = 0,
                  no_start = 0, dangling = 0;
      for (event_index i = 0; i < want.size(); ++i) {
        auto& e = want.events[i];
        const auto* d = e.get_if<event_kind::device_activity>();
        if (d == nullptr || e.parent != no_event) continue;
        auto set = [&](event_index p, parent_link how, std::uint64_t id, bool link) {
          e.parent = p;
          e.link = how;
          if (link) want_links.push_back({flow_kind::async_cpu_gpu, id, p, i});
        };
        if (is_runtime_call(d->activity)) {
          if (d->external_id != 0 && find(ops, d->external_id) != no_event) {
            set(find(ops, d->external_id), parent_link::external_id, 0, false);
            ++calls_placed;
          }
          continue;
        }
        if (d->flow_type == flow_kind::async_cpu_gpu && !d->flow_start && d->flow_id != 0) {
          if (find(starts, d->flow_id) != no_event) {
            set(find(starts, d->flow_id), parent_link::flow, d->flow_id, true);
            ++by_flow;
            continue;
          }
          ++no_start;
        }
        if (d->correlation_id != 0) {
          if (find(calls, d->correlation_id) != no_event) {
            set(find(calls, d->correlation_id), parent_link::correlation, d->correlation_id, true);
            ++by_corr;
            continue;
          }
          ++dangling;
        }
        if (d->external_id != 0 && find(ops, d->external_id) != no_event) {
          set(find(ops, d->external_id), parent_link::external_id, d->external_id, true);
          ++by_ext;
          continue;
        }
        ++unlinked;
      }

      INFO("round " << round << " events " << t.size());
      const device_link_stats s = link_device_activities(t);
      REQUIRE(t.links.size() == want_links.size());
      CHECK(s.links() == want_links.size());
      for (std::size_t k = 0; k < want_links.size(); ++k) {
        CHECK(t.links[k].id == want_links[k].id);
        CHECK(t.links[k].from == want_links[k].from);
        CHECK(t.links[k].to == want_links[k].to);
      }
      for (event_index i = 0; i < t.size(); ++i) {
        CHECK(t.events[i].parent == want.events[i].parent);
        CHECK(t.events[i].link == want.events[i].link);
      }
      CHECK(s.by_flow == by_flow);
      CHECK(s.by_correlation == by_corr);
      CHECK(s.by_external_id == by_ext);
      CHECK(s.runtime_calls == calls_placed);
      CHECK(s.unlinked == unlinked);
      CHECK(s.duplicate_flow_starts == duplicates);
      CHECK(s.flow_ends_without_start == no_start);
      CHECK(s.dangling_correlations == dangling);
      CHECK(t.anomalies[anomaly::flow_end_without_start] == no_start);
      CHECK(t.anomalies[anomaly::dangling_correlation] == dangling);
    }
  }

  TEST_CASE("link_device_activities: PyTorch's thread inheritance, as a policy") {
    table_builder b;
    b.op("aten::mm", 0, 100, 1).op_correlation(1);
    b.device("cudaLaunchKernel", activity_type::cuda_runtime, 10, 20, 1, 1)
        .correlation(7)
        .external_id(1);
    b.device("gemm", activity_type::kernel, 30, 200, 7, 0).correlation(7);
    b.device("orphan", activity_type::kernel, 250, 260, 7, 0).correlation(99);
    event_table t = b.take();
    link_device_activities(t, pytorch_thread_inheritance{});
    CHECK(t[2].tid == 1);  // the kernel took its launch's thread
    CHECK(t[2].pid == 1);
    CHECK(t[2].get<event_kind::device_activity>().stream == 7);  // the payload keeps its stream
    CHECK(t[3].tid == 7);                                        // the orphan keeps its own track
  }

  TEST_CASE("link_device_activities: correlation ids of real traces give the files' ac2g flows") {
    const char* files[] = {
        "critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz",
        "critical_path_cuda_event_sync_event_sync_trace.json.gz",
        "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        "triton_example_triton_example.json.gz",
        "execution_trace_benchmark_simple_add_trace.json.gz",
        "call_stack_backward_thread.json",
        "cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"};
    std::size_t total_pairs = 0;
    for (const char* f : files) {
      INFO(f);
      tmtest::loaded_trace lt = tmtest::load_kineto(tmtest::data_path(std::string("kineto/") + f));
      std::map<std::uint64_t, event_index> starts;
      for (const auto& fl : lt.flows)
        if (fl.cat != "fwdbwd" && fl.ph == 's' && fl.event != no_event) starts[fl.id] = fl.event;
      std::map<event_index, event_index> file_pairs;  // device activity -> launching call
      for (const auto& fl : lt.flows)
        if (fl.cat != "fwdbwd" && fl.ph == 'f' && fl.event != no_event && starts.count(fl.id))
          file_pairs[fl.event] = starts[fl.id];
      const device_link_stats s = link_device_activities(lt.table, correlation_device_links{});
      std::map<event_index, event_index> derived;
      for (const flow_link& l : links_of(lt.table, flow_kind::async_cpu_gpu))
        derived[l.to] = l.from;
      CHECK(s.links() == derived.size());
      for (const auto& pair : file_pairs) {
        const event_index device = pair.first;
        INFO("device event " << device << " " << lt.table.name(device));
        REQUIRE(derived.count(device) == 1);
        CHECK(derived[device] == pair.second);
      }
      // Every kernel, memcpy, memset and sync event finds its call by correlation.
      for (std::size_t i = 0; i < lt.table.size(); ++i)
        if (const auto* d = lt.table.events[i].get_if<event_kind::device_activity>())
          if (d->activity == activity_type::kernel || d->activity == activity_type::gpu_memcpy ||
              d->activity == activity_type::gpu_memset || d->activity == activity_type::cuda_sync)
            CHECK(lt.table.events[i].link == parent_link::correlation);
      total_pairs += file_pairs.size();
    }
    // The ac2g flows with a start on a call and an end on a device activity: alexnet 139, event
    // sync 7, ROCm 16, Triton 1, simple add 4.
    CHECK(total_pairs == 167);
  }
}
