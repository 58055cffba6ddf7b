// The live queue's side data (inputs, call stacks, module frames, extra args) and its cuts: side
// data stays with its op across blocks, drains and threads, equal to what the batch queue
// records for the same ops; what has no room is counted; a cut hands out open ops as copies and
// their ends come later, once.
#include <doctest/doctest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <tracemodel/collect/live_queue.hpp>
#include <tracemodel/collect/materialize.hpp>
#include <tracemodel/collect/record_queue.hpp>

#include "../collect/test_values.hpp"

using namespace tracemodel;

namespace {
struct side_policies : default_record_policies {
  using value_traits = tmtest::value_traits;
};
constexpr record_features all_side = record_features::all();
using live = live_queue<all_side, side_policies>;

/// One op's side data as text: inputs (every field), then each extra attribute.
std::string side_text(const event_table& t, const event_table::event_type& e,
                      bool with_inputs = true) {
  std::string s;
  const auto& f = *e.get_if<event_kind::op>();
  for (std::uint32_t k = 0; with_inputs && k < f.inputs.size; ++k) {
    const input_value& v = t.inputs[f.inputs.first + k];
    s +=
        fmt::format("[{} {} r{} s{} {} {} {} {}", static_cast<int>(v.kind), t.strings.view(v.dtype),
                    v.rank, v.subtree, v.has_strides, v.impl, v.storage, v.scalar.i);
    if (v.kind == input_kind::tensor)
      for (std::uint32_t j = 0; j < (v.has_strides ? 2 : 1) * v.rank; ++j)
        s += fmt::format(" {}", t.ints[v.dims + j]);
    s += "]";
  }
  for (const attribute& a : t.attrs_of(e)) {
    s += fmt::format(" {}=", t.strings.view(a.key));
    switch (a.type) {
      case attr_type::string_list:
        for (const name_id n : t.string_list(a)) s += fmt::format("{}|", t.strings.view(n));
        break;
      case attr_type::string:
        s += t.strings.view(a.s);
        break;
      case attr_type::floating:
        s += fmt::format("{}", a.f);
        break;
      case attr_type::boolean:
        s += a.b ? "true" : "false";
        break;
      default:
        s += fmt::format("{}", a.i);
    }
  }
  return s;
}

/// Random inputs: tensors of rank 0-4 (contiguous, strided, sparse), scalars, undefined
/// tensors, lists of them; some big enough to fill a small side area alone.
tmtest::value random_value(std::mt19937_64& rng, int depth = 0) {
  using tmtest::value;
  switch (rng() % (depth < 2 ? 6 : 4)) {
    case 0: {
      std::vector<std::int64_t> sizes(rng() % 5), strides;
      for (auto& d : sizes) d = static_cast<std::int64_t>(rng() % 7);
      if (rng() % 2) {
        strides.resize(sizes.size());
        for (auto& d : strides) d = static_cast<std::int64_t>(rng() % 50);
      }
      return value::tensor(sizes, strides, static_cast<std::uint8_t>(rng() % 4), rng(), rng());
    }
    case 1:
      return value::scalar_of(scalar_value::integer(static_cast<std::int64_t>(rng() % 1000)));
    case 2:
      return value::undefined();
    case 3:
      return value::sparse({3, 4}, 1);
    default: {
      std::vector<value> elems(rng() % 4);
      for (auto& v : elems) v = random_value(rng, depth + 1);
      return value::list(rng() % 2 ? input_kind::tensor_list : input_kind::scalar_list, elems);
    }
  }
}

struct random_op {
  std::vector<tmtest::value> inputs;
  std::vector<std::string> stack, modules;
  std::vector<std::string> arg_keys, arg_strings;
};

random_op make_op(std::mt19937_64& rng, int j) {
  random_op o;
  o.inputs.resize(rng() % 4);
  for (auto& v : o.inputs) v = random_value(rng);
  if (j % 17 == 0)  // now and then more than a small side area holds
    o.inputs.assign(40, tmtest::value::tensor({2, 3, 4, 5}, {1, 2, 6, 24}, 0));
  for (int k = 0, n = static_cast<int>(rng() % 3); k < n; ++k)
    o.stack.push_back(fmt::format("file{}.py({}): f{}", j % 5, k, std::string(rng() % 20, 'x')));
  for (int k = 0, n = static_cast<int>(rng() % 3); k < n; ++k)
    o.modules.push_back(fmt::format("Net.layer{}", k));
  for (int k = 0, n = static_cast<int>(rng() % 3); k < n; ++k) {
    o.arg_keys.push_back(fmt::format("key{}", k));
    o.arg_strings.push_back(std::string(rng() % 12, static_cast<char>('a' + k)));
  }
  return o;
}

template <class Q, class H>
void record_side(Q& q, H h, const random_op& o) {
  std::vector<std::string_view> stack(o.stack.begin(), o.stack.end());
  std::vector<std::string_view> modules(o.modules.begin(), o.modules.end());
  if (!stack.empty()) q.record_call_stack(h, stack);
  if (!modules.empty()) q.record_module_hierarchy(h, modules);
  std::vector<extra_arg> args;
  for (std::size_t k = 0; k < o.arg_keys.size(); ++k) {
    if (k % 3 == 0) args.push_back(extra_arg::string(o.arg_keys[k], o.arg_strings[k]));
    if (k % 3 == 1)
      args.push_back(extra_arg::floating(o.arg_keys[k], 0.5 * static_cast<double>(k)));
    if (k % 3 == 2) args.push_back(extra_arg::integer(o.arg_keys[k], -7));
  }
  if (!args.empty()) q.record_extra_args(h, args);
}

/// Each op's side data as text, by sequence number (`lost`: those whose inputs were not kept).
std::map<std::int64_t, std::string> by_sequence(const event_table& t,
                                                const std::set<std::int64_t>& lost = {}) {
  std::map<std::int64_t, std::string> out;
  for (const auto& e : t.events)
    if (const auto* f = e.get_if<event_kind::op>(); f != nullptr && e.instant_scope == 0)
      out[f->sequence_number] = side_text(t, e, lost.count(f->sequence_number) == 0);
  return out;
}
}  // namespace

TEST_CASE("live queue: side data equals the batch queue's, across blocks, drains and cuts") {
  // The same random ops, nested three deep, recorded into the batch queue and into a live queue
  // whose blocks are tiny (8 records, 96 words of side data), drained and cut meanwhile.
  record_queue<default_schema, all_side, side_policies> batch;
  live q({.block_records = 8, .side_words = 96});
  table_sink gathered;
  std::mt19937_64 rng(7);
  const int n = 600;
  std::vector<random_op> ops;
  for (int j = 0; j < n; ++j) ops.push_back(make_op(rng, j));
  std::vector<live_handle> open_live;
  std::vector<op_handle> open_batch;
  std::set<std::int64_t> lost;
  for (int j = 0; j < n; ++j) {
    const random_op& o = ops[static_cast<std::size_t>(j)];
    const op_info info{.name = "op", .sequence_number = j};
    const std::span<const tmtest::value> in(o.inputs);
    open_batch.push_back(batch.begin_op(info, in));
    open_live.push_back(q.begin_op(info, in));
    if (j % 17 == 0) lost.insert(j);
    record_side(batch, open_batch.back(), o);
    record_side(q, open_live.back(), o);
    if (open_live.size() == 3 || j == n - 1)
      while (!open_live.empty()) {
        batch.end_op(open_batch.back());
        q.end_op(open_live.back());
        open_batch.pop_back();
        open_live.pop_back();
      }
    if (j % 50 == 10) q.drain(std::ref(gathered));
    if (j % 97 == 5) q.cut(std::ref(gathered));  // while ops are open
  }
  q.close(std::ref(gathered));
  const live_counts c = q.counts();
  CHECK(c.lost_side == lost.size());  // 40 tensors: no block holds them
  CHECK(gathered.table.anomalies[anomaly::lost_side] == c.lost_side);
  CHECK(gathered.table.anomalies[anomaly::unfinished_op] == 0);  // the cuts' copies replaced
  CHECK(c.ended == static_cast<std::uint64_t>(n));
  CHECK(c.handed_open > 0);
  // The batch queue keeps the 40 tensors; the live queue keeps those ops without them.
  const auto want = by_sequence(materialize(batch), lost);
  const auto got = by_sequence(gathered.table);
  REQUIRE(gathered.table.size() == static_cast<std::size_t>(n));
  CHECK(want == got);
  for (const std::int64_t j : lost) CHECK(got.at(j).find('[') != 0);
}

TEST_CASE("live queue: side data of ops ended on other threads and recorded in later blocks") {
  // Ops begun on one thread, their stacks recorded after a flood of other ops (in a later block
  // than the begin), ended on a second thread, drained by a third meanwhile.
  live q({.block_records = 4, .side_words = 64});
  table_sink gathered;
  std::atomic<bool> done{false};
  std::thread consumer([&] {
    while (!done.load()) q.drain(std::ref(gathered));
  });
  std::vector<live_handle> handles;
  std::vector<std::string> frames;
  for (int j = 0; j < 300; ++j) {
    const std::vector<tmtest::value> in{tmtest::value::tensor({j, 2}, {}, 1)};
    handles.push_back(
        q.begin_op({.name = "outer", .sequence_number = j}, std::span<const tmtest::value>(in)));
    for (int k = 0; k < 5; ++k) q.end_op(q.begin_op({.name = "filler", .sequence_number = -2}));
    frames.push_back("frame of " + std::to_string(j));
    const std::string_view f = frames.back();
    q.record_call_stack(handles.back(), std::span(&f, 1));
  }
  // The stacks' blocks are sealed before the ends are recorded elsewhere: side data written on
  // one thread reaches its op when that thread's block is sealed before the end's block is
  // drained (docs/recording.md).
  q.flush(std::chrono::milliseconds(0));
  std::thread ender([&] {
    for (const live_handle h : handles) q.end_op(h);
  });
  ender.join();
  done = true;
  consumer.join();
  q.close(std::ref(gathered));
  const event_table& t = gathered.table;
  int outer = 0;
  for (const auto& e : t.events) {
    if (t.name(e) != "outer") continue;
    const auto& f = *e.get_if<event_kind::op>();
    ++outer;
    CHECK(!f.unfinished());
    CHECK(f.end_tid != e.tid);
    REQUIRE(f.inputs.size == 1);
    CHECK(t.ints[t.inputs[f.inputs.first].dims] == f.sequence_number);
    CHECK(side_text(t, e).ends_with("Call stack=frame of " + std::to_string(f.sequence_number) +
                                    "|"));
  }
  CHECK(outer == 300);
  CHECK(q.counts().lost_side == 0);
  CHECK(t.anomalies[anomaly::orphan_side] == 0);
}

TEST_CASE("live queue: a session's part holds the ops that span its stop, their ends come later") {
  live_queue<> q({.block_records = 4});
  std::vector<event_table> parts;
  auto sink = [&](event_table&& p) { parts.push_back(std::move(p)); };
  const live_handle step = q.begin_op({.name = "step", .sequence_number = 1});
  for (int j = 0; j < 10; ++j) q.end_op(q.begin_op({.name = "op", .sequence_number = 10 + j}));
  const live_handle spans = q.begin_op({.name = "spans", .sequence_number = 2});
  q.stop(sink);  // the session's part: step and spans open, the ten ops ended
  REQUIRE(parts.size() == 1);
  std::map<std::string, int> unfinished;
  for (const auto& e : parts[0].events)
    if (e.get_if<event_kind::op>()->unfinished()) ++unfinished[std::string(parts[0].name(e))];
  CHECK(unfinished == std::map<std::string, int>{{"spans", 1}, {"step", 1}});
  CHECK(parts[0].size() == 12);
  CHECK(!q.begin_op({.name = "while stopped"}));
  q.end_op(spans);  // ends are kept while stopped
  q.start();
  q.end_op(q.begin_op({.name = "next session", .sequence_number = 3}));
  q.end_op(step);
  q.close(sink);
  REQUIRE(parts.size() == 2);
  std::map<std::string, std::uint64_t> ids_later;
  for (const auto& e : parts[1].events) {
    CHECK(!e.get_if<event_kind::op>()->unfinished());
    ids_later[std::string(parts[1].name(e))] = e.get_if<event_kind::op>()->correlation_id;
  }
  CHECK(ids_later.size() == 3);
  CHECK(ids_later.at("spans") == spans.id);  // the same op, now ended
  CHECK(ids_later.at("step") == step.id);
  const live_counts c = q.counts();
  CHECK(c.begun == 13);
  CHECK(c.ended == 13);
  CHECK(c.handed_open == 2);
  CHECK(c.unfinished == 0);
  CHECK(c.orphan_ends == 0);
  CHECK(c.open == 0);
  // Gathered, each op once, ended.
  table_sink all;
  for (event_table& p : parts) all(std::move(p));
  CHECK(all.table.size() == 13);
  CHECK(all.table.anomalies[anomaly::unfinished_op] == 0);
}

TEST_CASE("live queue: a dump reads the current block of a thread that does not answer") {
  // A thread begins an op, ends three children and waits: its block is neither full nor
  // sealed. The dump still holds the stuck op (with its inputs) and the children; once the
  // thread goes on, each op is handed out once more only if it was open.
  live q({.block_records = 64});
  std::mutex m;
  std::condition_variable cv;
  bool recorded = false, go_on = false;
  std::thread stuck([&] {
    const std::vector<tmtest::value> in{tmtest::value::tensor({5, 6}, {}, 0)};
    const live_handle h =
        q.begin_op({.name = "stuck", .sequence_number = 1}, std::span<const tmtest::value>(in));
    for (int j = 0; j < 3; ++j)
      q.end_op(q.begin_op({.name = "child", .sequence_number = 10 + j},
                          std::span<const tmtest::value>{}));
    {
      std::unique_lock lock(m);
      recorded = true;
      cv.notify_all();
      cv.wait(lock, [&] { return go_on; });
    }
    q.end_op(h);
    q.end_op(q.begin_op({.name = "after", .sequence_number = 2}, std::span<const tmtest::value>{}));
  });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return recorded; });
  }
  const event_table dumped = q.dump(std::chrono::milliseconds(1));
  std::map<std::string, int> names;
  for (const auto& e : dumped.events) {
    ++names[std::string(dumped.name(e))];
    const auto& f = *e.get_if<event_kind::op>();
    CHECK(f.unfinished() == (dumped.name(e) == "stuck"));
    if (dumped.name(e) == "stuck") {
      REQUIRE(f.inputs.size == 1);
      CHECK(dumped.ints[dumped.inputs[f.inputs.first].dims + 1] == 6);
    }
  }
  CHECK(names == std::map<std::string, int>{{"child", 3}, {"stuck", 1}});
  {
    const std::lock_guard lock(m);
    go_on = true;
  }
  cv.notify_all();
  stuck.join();
  table_sink all;
  all(event_table(dumped));
  q.close(std::ref(all));
  std::map<std::string, int> later;
  for (const auto& e : all.table.events) {
    ++later[std::string(all.table.name(e))];
    CHECK(!e.get_if<event_kind::op>()->unfinished());
  }
  CHECK(later == std::map<std::string, int>{{"after", 1}, {"child", 3}, {"stuck", 1}});
  const live_counts c = q.counts();
  CHECK(c.begun == 5);
  CHECK(c.ended == 5);
  CHECK(c.handed_open == 1);
  CHECK(c.orphan_ends == 0);
  CHECK(c.ended_twice == 0);
}

TEST_CASE("live queue: cuts read current blocks while threads record, each op ended once") {
  // Four threads record nested ops with side data; a consumer cuts (reading the threads'
  // current blocks while they write them, ends in place included) and drains in turn. Every op
  // is handed out ended exactly once, with its own side data; under a cap that overwrites, the
  // accounting stays exact.
  for (const bool capped : {false, true}) {
    CAPTURE(capped);
    live q({.block_records = 16,
            .side_words = 128,
            .max_blocks = capped ? 12u : 0u,
            .policy = capped ? when_full::overwrite_oldest : when_full::drop_newest});
    std::map<std::uint64_t, int> ended_once;  // by correlation id
    std::uint64_t copies = 0, without_stack = 0;
    auto sink = [&](event_table&& p) {
      for (const auto& e : p.events) {
        if (e.instant_scope != 0) continue;
        const auto& f = *e.get_if<event_kind::op>();
        if (f.unfinished()) {
          ++copies;
          continue;
        }
        ++ended_once[f.correlation_id];
        if (side_text(p, e, false) != " Call stack=s" + std::to_string(f.sequence_number) + "|") {
          CHECK_MESSAGE(side_text(p, e, false).empty(), capped);  // never another op's
          ++without_stack;
        }
        REQUIRE(f.inputs.size == 1);  // the input's size is the sequence number
        CHECK(p.ints[p.inputs[f.inputs.first].dims] == f.sequence_number);
      }
    };
    std::atomic<bool> done{false};
    std::thread consumer([&] {
      for (int k = 0; !done.load(); ++k)
        (k % 2 ? q.cut(sink, std::chrono::milliseconds(0)) : q.drain(sink));
    });
    std::vector<std::thread> ts;
    const int per_thread = 3000;
    for (int w = 0; w < 4; ++w)
      ts.emplace_back([&, w] {
        for (int j = 0; j < per_thread; ++j) {
          const int seq = w * per_thread + j;
          const std::vector<tmtest::value> in{tmtest::value::tensor({seq}, {}, 0)};
          const live_handle h = q.begin_op({.name = "op", .sequence_number = seq},
                                           std::span<const tmtest::value>(in));
          const std::string frame = "s" + std::to_string(seq);
          const std::string_view f = frame;
          q.record_call_stack(h, std::span(&f, 1));
          if (j % 5 == 0) std::this_thread::yield();  // ends in place while a cut reads
          q.end_op(h);
        }
      });
    for (std::thread& t : ts) t.join();
    done = true;
    consumer.join();
    q.close(sink);
    const live_counts c = q.counts();
    CHECK(c.begun + c.dropped_ops == 4u * per_thread);  // overwriting: no block sealed to take
    for (const auto& entry : ended_once) CHECK_MESSAGE(entry.second == 1, "op ", entry.first);
    CHECK(c.ended == ended_once.size());
    CHECK(c.ended + c.evicted_ops + c.unfinished == c.begun);
    CHECK(c.orphan_ends == 0);
    CHECK(c.ended_twice == 0);
    CHECK(without_stack <= c.lost_side);  // a stack with no block left to hold it (capped)
    if (!capped) CHECK(c.lost_side == 0);
    if (!capped) CHECK(c.ended == c.begun);
    CHECK(copies == c.handed_open + c.unfinished);
  }
}
