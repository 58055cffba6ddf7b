// The libtorch adapter against PyTorch's own profiler, in one process: a small convolutional
// network trains, its steps recorded in turn by tracemodel (the RecordFunction observer) and by
// PyTorch's collection (`enableProfiler` with the KINETO state and the CPU activity, the code
// `torch.profiler` runs). Both see the same ops: names, count, input shapes, sequence numbers
// (each step's relative to its first), forward threads; the call tree and the forward/backward
// links tracemodel builds from its own recording equal PyTorch's tree and the links tracemodel
// builds from PyTorch's events.
// The adapter first: it includes <ATen/core/ivalue.h>, which libtorch 1.13's <torch/torch.h>
// needs before it under clang 14 in C++20 (docs/libtorch.md).
#include <tracemodel/adapters/libtorch.hpp>

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/profiler/collection.h>
#include <torch/library.h>
// libtorch brings glog's CHECK macros: doctest's are the ones meant here.
#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LT
#undef CHECK_LE
#undef CHECK_GT
#undef CHECK_GE
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/memory_timeline.hpp>
#include <tracemodel/collect/materialize.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>

#include "../support/sanitized.hpp"
#include "libtorch_net.hpp"

using namespace tracemodel;

namespace {
using queue_t = record_queue<default_schema, record_features{.inputs = true}, libtorch::policies>;

/// One op as both profilers can tell it.
struct op_row {
  std::string name;
  int depth = 0;
  std::vector<std::vector<std::int64_t>> shapes;
  std::int64_t seq = -1;          ///< relative to the step's first sequence number
  bool backward_scope = false;    ///< recorded from the autograd engine
  bool fwd_thread_known = false;  ///< a forward thread id given
  int fwd_link = -1;              ///< backward op: the row of its forward op
  friend bool operator==(const op_row&, const op_row&) = default;
};

/// The rows of a table analysed, in start order, with shapes as PyTorch's collection gives them
/// (a tensor's sizes, nothing for any other value, lists included).
std::vector<op_row> rows_of(event_table& t, bool with_shapes) {
  analyze(t);
  std::vector<op_row> rows;
  std::int64_t first_seq = -1;
  for (const auto& e : t.events)
    if (const auto* f = e.get_if<event_kind::op>(); f != nullptr && f->sequence_number >= 0)
      first_seq = first_seq < 0 ? f->sequence_number : std::min(first_seq, f->sequence_number);
  for (const auto& e : t.events) {
    const auto& f = *e.get_if<event_kind::op>();
    op_row r;
    r.name = std::string(t.name(e));
    for (event_index p = e.parent; p != no_event; p = t.events[p].parent) ++r.depth;
    if (with_shapes) {
      const auto in = t.inputs_of(e);
      for (std::size_t k = 0; k < in.size(); k += in[k].subtree) {
        auto& s = r.shapes.emplace_back();
        if (in[k].kind == input_kind::tensor)
          s.assign(t.ints.begin() + in[k].dims, t.ints.begin() + in[k].dims + in[k].rank);
      }
    }
    r.seq = f.sequence_number < 0 ? -1 : f.sequence_number - first_seq;
    r.backward_scope = f.scope == op_scope::backward_function;
    r.fwd_thread_known = f.fwd_thread_id != 0;
    rows.push_back(std::move(r));
  }
  for (const flow_link& l : t.links)
    if (l.kind == flow_kind::fwd_bwd) rows[l.to].fwd_link = static_cast<int>(l.from);
  return rows;
}

/// PyTorch's events of a step as a tracemodel table (times in ns, its thread ids), with the
/// tree its own collection built: each op's depth there.
struct pytorch_step {
  event_table table;
  std::vector<int> depth;  ///< in the table's order
  std::vector<std::vector<std::vector<std::int64_t>>> shapes;
};

pytorch_step from_pytorch(const torch::autograd::profiler::ProfilerResult& result) {
  struct item {
    const torch::profiler::impl::Result* r;
    int depth;
  };
  std::vector<item> items;
  std::vector<item> to_visit;
  for (const auto& root : result.event_tree()) to_visit.push_back({root.get(), 0});
  while (!to_visit.empty()) {
    const item it = to_visit.back();
    to_visit.pop_back();
    if (it.r->tag() == torch::profiler::impl::EventType::TorchOp) items.push_back(it);
    for (const auto& c : it.r->children_) to_visit.push_back({c.get(), it.depth + 1});
  }
  std::sort(items.begin(), items.end(), [](const item& a, const item& b) {
    return a.r->start_time_ns_ != b.r->start_time_ns_ ? a.r->start_time_ns_ < b.r->start_time_ns_
                                                      : a.depth < b.depth;
  });
  pytorch_step out;
  for (const item& it : items) {
    const auto& x =
        c10::get<torch::profiler::impl::ExtraFields<torch::profiler::impl::EventType::TorchOp>>(
            it.r->extra_fields_);
    auto& e = out.table.events.emplace_back();
    e.start_ns = it.r->start_time_ns_;
    e.tid = it.r->start_tid_;
    e.pid = 1;
    auto& f = e.fields.template emplace<default_schema::index_of<event_kind::op>>();
    f.name = out.table.strings.intern(x.name_);
    f.end_ns = x.end_time_ns_;
    f.end_tid = x.end_tid_;
    f.sequence_number = x.sequence_number_;
    f.fwd_thread_id = x.forward_tid_;
    f.scope = static_cast<op_scope>(x.scope_);
    f.correlation_id = x.correlation_id_;
    out.depth.push_back(it.depth);
    out.shapes.push_back(x.inputs_.shapes_);
  }
  return out;
}

std::unique_ptr<torch::autograd::profiler::ProfilerResult> pytorch_profile(
    const std::function<void()>& work) {
  using namespace torch::autograd::profiler;
  enableProfiler(ProfilerConfig(ProfilerState::KINETO, /*report_input_shapes=*/true,
                                /*profile_memory=*/false, /*with_stack=*/false,
                                /*with_flops=*/false, /*with_modules=*/false),
                 {torch::profiler::impl::ActivityType::CPU});
  work();
  return disableProfiler();
}
}  // namespace

TEST_CASE("libtorch: the observer records what PyTorch's own profiler collects, step by step") {
  torch::manual_seed(0);
  tmtest::trainer trainer;
  trainer.step();  // the first steps create the gradients and the optimizer's state
  trainer.step();
  queue_t queue;
  libtorch::observer<queue_t> observer(queue);
  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    observer.start();
    trainer.step();
    observer.stop();
    event_table ours = materialize(queue);
    const auto theirs_result = pytorch_profile([&] { trainer.step(); });
    pytorch_step theirs = from_pytorch(*theirs_result);

    const std::vector<op_row> a = rows_of(ours, true);
    std::vector<op_row> b = rows_of(theirs.table, false);
    for (std::size_t k = 0; k < b.size(); ++k) b[k].shapes = theirs.shapes[k];
    REQUIRE(a.size() > 50);  // a step: forward, loss, backward, the optimizer
    REQUIRE(a.size() == b.size());
    int differ = 0;
    for (std::size_t k = 0; k < a.size(); ++k)
      if (!(a[k] == b[k]) && differ++ < 5)
        FAIL_CHECK("row ", k, ": ", a[k].name, " depth ", a[k].depth, " seq ", a[k].seq, " link ",
                   a[k].fwd_link, " / ", b[k].name, " depth ", b[k].depth, " seq ", b[k].seq,
                   " link ", b[k].fwd_link);
    CHECK(differ == 0);
    // PyTorch's own tree (its collection's parents) is the one tracemodel builds.
    for (std::size_t k = 0; k < b.size(); ++k) CHECK(b[k].depth == theirs.depth[k]);
    // The step has backward ops linked to their forward ops.
    const auto links =
        std::count_if(a.begin(), a.end(), [](const op_row& r) { return r.fwd_link >= 0; });
    CHECK(links >= 5);
    const auto with_shapes = std::count_if(a.begin(), a.end(), [](const op_row& r) {
      return std::any_of(r.shapes.begin(), r.shapes.end(),
                         [](const auto& s) { return !s.empty(); });
    });
    CHECK(with_shapes >= 30);
  }
}

TEST_CASE("libtorch: inputs through the value traits, nothing recorded once stopped") {
  queue_t queue;
  libtorch::observer<queue_t> observer(queue);
  const torch::Tensor x = torch::ones({2, 3});
  const torch::Tensor y = torch::ones({3, 2}).t();  // strided, not contiguous
  observer.start();
  (void)torch::add(x, y, 2);
  (void)torch::cat({x, y});
  observer.stop();
  (void)torch::add(x, y);  // after stop: not recorded
  event_table t = materialize(queue);
  std::map<std::string, int> names;
  for (const auto& e : t.events) ++names[std::string(t.name(e))];
  CHECK(names["aten::add"] == 1);
  CHECK(names["aten::cat"] == 1);
  for (const auto& e : t.events) {
    if (t.name(e) == "aten::add") {
      const auto in = t.inputs_of(e);
      REQUIRE(in.size() == 3);
      CHECK(in[0].kind == input_kind::tensor);
      CHECK(t.strings.view(in[0].dtype) == "float");
      CHECK(in[0].impl == reinterpret_cast<std::uint64_t>(x.unsafeGetTensorImpl()));
      CHECK(in[0].storage == reinterpret_cast<std::uint64_t>(x.storage().data()));
      CHECK(in[1].has_strides);
      CHECK(t.ints[in[1].dims + 2] == 1);  // strides of the transposed tensor: (1, 2)
      CHECK(t.ints[in[1].dims + 3] == 2);
      CHECK(in[2].kind == input_kind::scalar);
      CHECK(in[2].scalar.i == 2);
    }
    if (t.name(e) == "aten::cat") {
      const auto in = t.inputs_of(e);
      REQUIRE(in.size() >= 3);
      CHECK(in[0].kind == input_kind::tensor_list);
      CHECK(in[0].rank == 2);  // two elements
      CHECK(in[1].kind == input_kind::tensor);
      CHECK(in[2].kind == input_kind::tensor);
    }
  }
}

namespace {
/// User scopes nested `depth` deep (names made at run time: they die with their RecordFunction),
/// an add at the bottom.
void nest(int k, int depth, const torch::Tensor& x) {
  if (k == depth) {
    (void)torch::add(x, x);
    return;
  }
  RECORD_USER_SCOPE("scope_" + std::to_string(k));
  nest(k + 1, depth, x);
}
}  // namespace

TEST_CASE("libtorch: deep nesting beyond the stack of open ops, names copied or referenced") {
  const torch::Tensor x = torch::ones({3});
  for (const bool copy_all : {false, true}) {
    CAPTURE(copy_all);
    queue_t queue;
    libtorch::observer<queue_t> observer(queue, {.copy_all_names = copy_all});
    constexpr int depth = 300;  // beyond the 128 open ops a thread's stack holds
    observer.start();
    nest(0, depth, x);
    observer.stop();
    event_table t = materialize(queue);
    analyze(t);
    CHECK(t.anomalies.total() == 0);  // every op ended, none borrowed its end
    REQUIRE(t.events.size() == depth + 1);
    for (std::size_t k = 0; k < t.events.size(); ++k) {
      const auto& e = t.events[k];
      CAPTURE(k);
      const auto* f = e.get_if<event_kind::op>();
      REQUIRE(f != nullptr);
      int d = 0;
      for (event_index p = e.parent; p != no_event; p = t.events[p].parent) ++d;
      CHECK(d == static_cast<int>(k));
      CHECK(f->end_ns >= e.start_ns);
      if (k < depth) {
        CHECK(t.name(e) == "scope_" + std::to_string(k));
        CHECK(f->scope == op_scope::user_scope);
      } else {
        CHECK(t.name(e) == "aten::add");
        CHECK(t.inputs_of(e).size() == 3);
      }
    }
  }
}

namespace {
at::Tensor twice(const at::Tensor& x) { return x + x; }
}  // namespace

TEST_CASE("libtorch: with copy_all_names a name outlives its operator's registration") {
  // An operator registered at run time, run while recording, unregistered before the
  // materialize: its schema, and the name a reference would point into, are freed by then (read
  // after free under AddressSanitizer, where a referenced name fails this test).
  const torch::Tensor x = torch::ones({2});
  queue_t queue;
  libtorch::observer<queue_t> observer(queue, {.copy_all_names = true});
  std::string registered;
  {
    torch::Library lib(torch::Library::FRAGMENT, "tmtest", c10::nullopt, __FILE__, __LINE__);
    lib.def("tmtest::twice(Tensor x) -> Tensor", &twice);
    const auto op = c10::Dispatcher::singleton()
                        .findSchemaOrThrow("tmtest::twice", "")
                        .typed<at::Tensor(const at::Tensor&)>();
    registered = op.schema().name();
    observer.start();
    const at::Tensor y = op.call(x);
    observer.stop();
    CHECK(y.equal(torch::full({2}, 2.0)));
  }
  CHECK(!c10::Dispatcher::singleton().findSchema({"tmtest::twice", ""}).has_value());
  event_table t = materialize(queue);
  std::vector<std::string> names;
  for (const auto& e : t.events) names.emplace_back(t.name(e));
  REQUIRE(!names.empty());
  CHECK(registered == "tmtest::twice");
  CHECK(names.front() == registered);  // the operator, then the add it runs
  CHECK(std::count(names.begin(), names.end(), "aten::add") == 1);
}

TEST_CASE(
    "libtorch: an op open when its observer stops stays open in its queue, not ended in the next") {
  // Both observers share the per-thread stack of open ops (one queue type), and RecordFunction
  // ends the scope through the callback it began with, under whichever observer runs then.
  const torch::Tensor x = torch::ones({3});
  for (const bool async : {false, true}) {  // ended through the stack, or through a context
    CAPTURE(async);
    queue_t first;
    queue_t second;
    libtorch::observer<queue_t> a(first);
    libtorch::observer<queue_t> b(second);
    a.start();
    {
      at::RecordFunction scope(at::RecordScope::USER_SCOPE);
      if (scope.isActive()) {
        if (async) scope._setAsync();
        scope.before("spans_two");
      }
      (void)torch::add(x, x);
      a.stop();
      b.start();
      (void)torch::mul(x, x);
    }
    b.stop();
    CHECK(second.misuse().foreign_handle == 0);
    event_table t1 = materialize(first);
    event_table t2 = materialize(second);
    std::vector<std::string> n1;
    std::vector<std::string> n2;
    for (const auto& e : t1.events) n1.emplace_back(t1.name(e));
    for (const auto& e : t2.events) n2.emplace_back(t2.name(e));
    CHECK(n1 == std::vector<std::string>{"spans_two", "aten::add"});
    CHECK(n2 == std::vector<std::string>{"aten::mul"});
    CHECK(t1.anomalies[anomaly::unfinished_op] == 1);
    CHECK(t1.anomalies.total() == 1);
    CHECK(t2.anomalies.total() == 0);
    REQUIRE(!t1.events.empty());
    const auto* f = t1.events[0].get_if<event_kind::op>();
    REQUIRE(f != nullptr);
    CHECK(f->unfinished());
    CHECK(((f->flags & op_flag::async) != 0) == async);
  }
}

namespace {
/// Per name of the innermost op around them: how many allocations and frees, and their bytes.
using allocation_totals = std::map<std::string, std::pair<std::int64_t, std::int64_t>>;

allocation_totals allocations_by_op(const event_table& t) {
  allocation_totals out;
  for (const auto& e : t.events) {
    const auto* a = e.get_if<event_kind::allocation>();
    if (a == nullptr) continue;
    event_index p = e.parent;
    while (p != no_event && !t.events[p].is<event_kind::op>()) p = t.events[p].parent;
    auto& [count, bytes] = out[p == no_event ? std::string("(none)") : std::string(t.name(p))];
    ++count;
    bytes += a->alloc_size;
  }
  return out;
}

/// PyTorch's ops and allocations of `work`, recorded with `profile_memory`, as a table with its
/// own tree's parents.
event_table pytorch_memory_profile(const std::function<void()>& work) {
  using namespace torch::autograd::profiler;
  using torch::profiler::impl::EventType;
  using torch::profiler::impl::ExtraFields;
  enableProfiler(ProfilerConfig(ProfilerState::KINETO, false, /*profile_memory=*/true),
                 {torch::profiler::impl::ActivityType::CPU});
  work();
  const auto result = disableProfiler();
  event_table t;
  std::map<const torch::profiler::impl::Result*, event_index> index;
  std::vector<std::pair<const torch::profiler::impl::Result*, event_index>> to_visit;
  for (const auto& root : result->event_tree()) to_visit.emplace_back(root.get(), no_event);
  while (!to_visit.empty()) {
    const auto [r, parent] = to_visit.back();
    to_visit.pop_back();
    auto& e = t.events.emplace_back();
    e.start_ns = r->start_time_ns_;
    e.tid = r->start_tid_;
    e.pid = 1;
    e.parent = parent;
    const event_index i = static_cast<event_index>(t.events.size() - 1);
    if (r->tag() == EventType::TorchOp) {
      const auto& x = c10::get<ExtraFields<EventType::TorchOp>>(r->extra_fields_);
      auto& f = e.fields.template emplace<default_schema::index_of<event_kind::op>>();
      f.name = t.strings.intern(x.name_);
      f.end_ns = x.end_time_ns_;
    } else if (r->tag() == EventType::Allocation) {
      const auto& x = c10::get<ExtraFields<EventType::Allocation>>(r->extra_fields_);
      auto& f = e.fields.template emplace<default_schema::index_of<event_kind::allocation>>();
      f.ptr = reinterpret_cast<std::uint64_t>(x.ptr_);
      f.alloc_size = x.alloc_size_;
      f.total_allocated = x.total_allocated_;
      f.device_type = static_cast<std::int8_t>(x.device_type_);
    } else {
      t.events.pop_back();  // (no other kind in a CPU profile without Python)
      continue;
    }
    for (const auto& c : r->children_) to_visit.emplace_back(c.get(), i);
  }
  return t;
}
/// The third step of `trainer` (the gradients and the momentum buffers exist from the second
/// on), recorded with its allocations into `queue` (left stopped), analysed.
event_table third_step_with_memory(tmtest::trainer& trainer, queue_t& queue) {
  trainer.step();
  trainer.step();
  libtorch::observer<queue_t> observer(queue, {.memory = true});
  observer.start();
  trainer.step();
  observer.stop();
  event_table t = materialize(queue);
  analyze(t);
  return t;
}
}  // namespace

TEST_CASE("memory_columns: the adapter records the allocations PyTorch's profiler gets, op by op") {
  torch::manual_seed(0);
  tmtest::trainer trainer;
  queue_t queue;
  const event_table ours = third_step_with_memory(trainer, queue);
  const event_table theirs = pytorch_memory_profile([&] { trainer.step(); });
  const allocation_totals a = allocations_by_op(ours), b = allocations_by_op(theirs);
  std::int64_t allocations = 0;
  for (const auto& [name, v] : a) allocations += v.first;
  MESSAGE("allocations and frees of a step: " << allocations << " under " << a.size() << " ops");
  CHECK(allocations > 50);
  CHECK(a == b);
  // With every event's totals: the running total never goes below what was allocated before.
  std::int64_t with_totals = 0;
  for (const auto& e : ours.events)
    if (const auto* x = e.get_if<event_kind::allocation>()) with_totals += x->total_allocated > 0;
  CHECK(with_totals > 0);
  // PyTorch's memory columns of the step: the annotation around it holds every allocation.
  const auto rows = key_averages(ours);
  const key_average_row* step = nullptr;
  for (const auto& r : rows)
    if (r.name == "train_step") step = &r;
  REQUIRE(step != nullptr);
  const auto& annotation = *std::find_if(ours.events.begin(), ours.events.end(),
                                         [&](auto& e) { return ours.name(e) == "train_step"; });
  const std::int64_t first_us = annotation.start_ns / 1000;
  const std::int64_t last_us = first_us + annotation.duration_ns() / 1000;
  std::int64_t held = 0;  // PyTorch's rule by hand: allocations in its whole microseconds
  for (const auto& e : ours.events)
    if (const auto* x = e.get_if<event_kind::allocation>();
        x != nullptr && e.start_ns / 1000 >= first_us && e.start_ns / 1000 <= last_us)
      held += x->alloc_size;
  CHECK(step->cpu_memory_bytes == held);
  CHECK(step->memory_known);
  // Stopped: nothing more is recorded, and PyTorch's profiler has its slot back.
  (void)torch::ones({64});
  CHECK(materialize(queue).size() == 0);
  CHECK(c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) == nullptr);
}

TEST_CASE(
    "memory_columns: a failed allocation is an out-of-memory event, then nothing once stopped") {
  queue_t queue;
  libtorch::observer<queue_t> observer(queue, {.memory = true});
  observer.start();
  // What an allocator calls when it fails (CUDA's caching allocator, the CPU allocator).
  c10::reportOutOfMemoryToProfiler(std::int64_t{1} << 40, 5, 7, c10::Device(c10::kCPU));
  std::vector<std::int64_t> want{std::int64_t{1} << 40};
  if (!tmtest::sanitized) {  // (a sanitizer's allocator aborts rather than fail a petabyte)
    const std::int64_t huge = std::int64_t{1} << 50;
    bool threw = false;
    try {
      (void)torch::empty({huge}, torch::kUInt8);
    } catch (const c10::Error&) {
      threw = true;
    }
    CHECK(threw);
    want.push_back(huge);
  }
  observer.stop();
  c10::reportOutOfMemoryToProfiler(1, 0, 0, c10::Device(c10::kCPU));  // stopped: not recorded
  const event_table t = materialize(queue);
  std::vector<std::int64_t> sizes;
  for (const auto& e : t.events)
    if (const auto* o = e.get_if<event_kind::out_of_memory>()) {
      sizes.push_back(o->alloc_size);
      if (sizes.size() == 1) {
        CHECK(o->total_allocated == 5);
        CHECK(o->total_reserved == 7);
        CHECK(o->device_type == 0);
      }
    }
  CHECK(sizes == want);
}

TEST_CASE("memory_timeline: the libtorch example's parameters, gradients and optimizer state") {
  torch::manual_seed(0);
  tmtest::trainer trainer;
  queue_t queue;
  const event_table t = third_step_with_memory(trainer, queue);
  const memory_timeline_result m = memory_timeline(t);
  // The truth, from the C++ API.
  std::map<std::uint64_t, memory_category> truth;
  std::int64_t truth_bytes = 0;
  for (const torch::Tensor& p : trainer.model->parameters()) {
    truth[reinterpret_cast<std::uint64_t>(p.data_ptr())] = memory_category::parameter;
    truth[reinterpret_cast<std::uint64_t>(p.grad().data_ptr())] = memory_category::gradient;
    const auto& state = trainer.optimizer.state().at(c10::guts::to_string(p.unsafeGetTensorImpl()));
    const auto& buffer = static_cast<torch::optim::SGDParamState&>(*state).momentum_buffer();
    truth[reinterpret_cast<std::uint64_t>(buffer.data_ptr())] = memory_category::optimizer_state;
    truth_bytes += 3 * p.nbytes();
  }
  REQUIRE(truth.size() == 3 * trainer.model->parameters().size());
  std::size_t found = 0;
  for (const memory_block& b : m.blocks) {
    const auto it = truth.find(b.address);
    if (it == truth.end()) continue;
    ++found;
    CAPTURE(b.address);
    CAPTURE(b.bytes);
    CHECK(memory_category_names[std::size_t(b.category)] ==
          memory_category_names[std::size_t(it->second)]);
  }
  CHECK(found == truth.size());
  // The share of bytes left unknown at the peak (docs/memory.md gives it).
  const double unknown =
      double(m.peak.by_category[std::size_t(memory_category::unknown)]) / double(m.peak.bytes);
  MESSAGE("peak " << m.peak.bytes << " bytes, unknown " << 100 * unknown << "%; parameters, "
                  << "gradients and optimizer state " << truth_bytes << " bytes");
  CHECK(m.peak.by_category[std::size_t(memory_category::unknown)] == 0);  // none unknown
}

#ifdef TRACEMODEL_CLI
TEST_CASE("libtorch: `tracemodel stats` on a trace of PyTorch's events gives its key averages") {
  // PyTorch's events of a training step, written as a Kineto trace; `tracemodel stats` reads it
  // and aggregates. Its rows equal the key averages of PyTorch's own events and tree (count;
  // total and self time, a self time being the op's less its children's in PyTorch's tree).
  torch::manual_seed(1);
  tmtest::trainer trainer;
  trainer.step();
  const auto result = pytorch_profile([&] { trainer.step(); });
  struct row {
    std::int64_t count = 0, total = 0, self = 0;
  };
  std::map<std::string, row> want;
  std::vector<const torch::profiler::impl::Result*> to_visit;
  for (const auto& r : result->event_tree()) to_visit.push_back(r.get());
  while (!to_visit.empty()) {
    const auto* r = to_visit.back();
    to_visit.pop_back();
    for (const auto& c : r->children_) to_visit.push_back(c.get());
    if (r->tag() != torch::profiler::impl::EventType::TorchOp) continue;
    const std::int64_t d = r->endTimeNS() - r->start_time_ns_;
    row& w = want[r->name()];
    ++w.count;
    w.total += d;
    w.self += d;
    for (const auto& c : r->children_)
      if (c->tag() == torch::profiler::impl::EventType::TorchOp)
        w.self -= c->endTimeNS() - c->start_time_ns_;
  }
  const std::string path = TRACEMODEL_TEST_BINARY_DIR "/libtorch_step.json";
  write_chrome_trace_file(from_pytorch(*result).table, path);
  const std::string command = std::string(TRACEMODEL_CLI) + " stats --json " + path;
  std::FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  CHECK(pclose(p) == 0);
  const std::regex re(R"re(\{"key":"([^"]*)","count":(\d+),"total_ns":(\d+),"self_ns":(-?\d+))re");
  std::map<std::string, row> got;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator();
       ++it)
    got[(*it)[1]] = {std::stoll((*it)[2]), std::stoll((*it)[3]), std::stoll((*it)[4])};
  REQUIRE(got.size() == want.size());
  for (const auto& entry : want) {
    const std::string& name = entry.first;  // (clang 14 cannot capture a structured binding)
    const row& w = entry.second;
    CAPTURE(name);
    REQUIRE(got.count(name) == 1);
    const row& g = got.at(name);
    CHECK(g.count == w.count);
    CHECK(std::abs(g.total - w.total) <= w.count);  // the trace's times: ns, as 1e-3 us
    CHECK(std::abs(g.self - w.self) <= 4 * w.count);
  }
}
#endif

TEST_CASE("libtorch: TorchScript's module hierarchy, as PyTorch's collection gives it") {
  torch::jit::Module inner("Inner");
  inner.define("def forward(self, x):\n  return x * 2\n");
  torch::jit::Module outer("Outer");
  outer.register_module("inner", inner);
  outer.define("def forward(self, x):\n  return self.inner.forward(x) + 1\n");
  const torch::Tensor x = torch::ones({2});
  (void)outer.forward({x});  // the first call also computes the method's defaults
  using modules_queue =
      record_queue<default_schema, record_features{.inputs = true, .module_hierarchy = true},
                   libtorch::policies>;
  modules_queue queue;
  libtorch::observer<modules_queue> observer(queue);
  observer.start();
  (void)outer.forward({x});
  observer.stop();
  event_table ours = materialize(queue);
  using namespace torch::autograd::profiler;
  enableProfiler(ProfilerConfig(ProfilerState::KINETO, true, false, false, false,
                                /*with_modules=*/true),
                 {torch::profiler::impl::ActivityType::CPU});
  (void)outer.forward({x});
  const auto theirs = disableProfiler();
  // Each op's frames, in start order, on both sides.
  std::vector<std::pair<std::string, std::vector<std::string>>> a, b;
  for (const auto& e : ours.events) {
    auto& [name, frames] = a.emplace_back(std::string(ours.name(e)), std::vector<std::string>{});
    for (const attribute& at : ours.attrs_of(e))
      if (ours.strings.view(at.key) == "Module Hierarchy")
        for (const name_id n : ours.string_list(at)) frames.emplace_back(ours.strings.view(n));
  }
  std::vector<const torch::profiler::impl::Result*> all, to_visit;
  for (const auto& r : theirs->event_tree()) to_visit.push_back(r.get());
  while (!to_visit.empty()) {
    const auto* r = to_visit.back();
    to_visit.pop_back();
    for (const auto& c : r->children_) to_visit.push_back(c.get());
    if (r->tag() == torch::profiler::impl::EventType::TorchOp) all.push_back(r);
  }
  std::sort(all.begin(), all.end(),
            [](const auto* p, const auto* q) { return p->start_time_ns_ < q->start_time_ns_; });
  for (const auto* r : all) {
    const auto& f =
        c10::get<torch::profiler::impl::ExtraFields<torch::profiler::impl::EventType::TorchOp>>(
            r->extra_fields_);
    b.emplace_back(f.name_, f.jit_modules_);
  }
  CHECK(a == b);
  const auto mul =
      std::find_if(a.begin(), a.end(), [](const auto& p) { return p.first == "aten::mul"; });
  REQUIRE(mul != a.end());
  CHECK(mul->second == std::vector<std::string>{"TOP(Outer)::forward", "inner(Inner)::forward"});
}
