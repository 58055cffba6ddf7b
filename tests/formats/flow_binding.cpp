// The reader's flow binding against a plain reading of its rules: random traces whose flow
// records fall on shared start times, between events and on no event, with duplicate ids,
// lone starts and ends, steps, unknown categories and correlation ids above 2^32. The reader
// binds through compact per-track keys and writes the device flow fields at the end; the
// reference below scans each flow's track in the table, one flow at a time, in file order.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <tracemodel/formats/chrome_trace_reader.hpp>

using namespace tracemodel;

namespace {

struct flow_rec {
  char ph;
  std::string cat;
  std::uint64_t id;
  std::uint64_t pid, tid;
  std::int64_t ts_us;
  bool enclosing;
};

/// What binding produced: the links, each device activity's flow fields, the flow anomalies.
struct bound {
  std::vector<flow_link> links;
  std::map<event_index, std::tuple<std::uint64_t, flow_kind, bool>> device;
  std::map<anomaly, std::size_t> anomalies;
};

constexpr anomaly flow_anomalies[] = {anomaly::unsupported_record, anomaly::unbound_flow,
                                      anomaly::duplicate_flow_start, anomaly::duplicate_flow_end,
                                      anomaly::flow_end_without_start};

bound observed(const event_table& t) {
  bound b;
  b.links = {t.links.begin(), t.links.end()};
  for (event_index i = 0; i < t.size(); ++i)
    if (const auto* d = t.events[i].get_if<event_kind::device_activity>())
      if (d->flow_type != flow_kind::none) b.device[i] = {d->flow_id, d->flow_type, d->flow_start};
  for (const anomaly a : flow_anomalies)
    if (t.anomalies[a] != 0) b.anomalies[a] = t.anomalies[a];
  return b;
}

/// The rules, read plainly: `t` is the table as read (its events sorted, no flow fields set).
bound reference(const event_table& t, const std::vector<flow_rec>& flows) {
  bound b;
  std::map<event_index, std::tuple<std::uint64_t, flow_kind, bool>> marks;  // while binding
  auto count = [&](anomaly a) { ++b.anomalies[a]; };
  auto bind = [&](const flow_rec& f, bool device_flow) -> event_index {
    const std::int64_t ts = f.ts_us * 1000;
    std::vector<event_index> track;  // the track's events, in table order (by start)
    for (event_index i = 0; i < t.size(); ++i)
      if (static_cast<std::uint64_t>(t.events[i].pid) == f.pid && t.events[i].tid == f.tid)
        track.push_back(i);
    std::size_t lb = 0;
    while (lb < track.size() && t.events[track[lb]].start_ns < ts) ++lb;
    if (!f.enclosing && f.ph != 's') return lb < track.size() ? track[lb] : no_event;
    event_index best = no_event;
    int best_score = -1;
    for (std::size_t k = lb; k < track.size() && t.events[track[k]].start_ns == ts; ++k) {
      const auto& e = t.events[track[k]];
      int score = 0;
      if (device_flow) {
        if (const auto* d = e.get_if<event_kind::device_activity>()) {
          if (f.ph == 's' && marks.count(track[k]) != 0) continue;
          const bool right =
              f.ph == 's' ? is_runtime_call(d->activity) : is_device_side(d->activity);
          score = right ? (d->correlation_id == f.id ? 3 : 2) : 1;
        }
      } else {
        score = e.is<event_kind::op>() ? 2 : 1;
      }
      if (score > best_score || (score == best_score && !device_flow)) {  // ops: the last
        best = track[k];
        best_score = score;
      }
    }
    if (best != no_event) return best;
    for (std::size_t k = lb, steps = 0; k > 0 && steps < 256; ++steps) {
      --k;
      if (t.events[track[k]].end_ns() >= ts) return track[k];
    }
    return no_event;
  };
  std::vector<std::pair<std::uint64_t, std::pair<event_index, event_index>>>
      fb;  // first-seen order
  std::map<std::uint64_t, event_index> starts;
  std::vector<event_index> start_order;
  std::vector<std::pair<std::uint64_t, event_index>> ends;
  for (const flow_rec& f : flows) {
    const bool is_fb = f.cat == "fwdbwd";
    const bool is_dev = f.cat == "ac2g" || f.cat == "async_cpu_to_gpu";
    if (!is_fb && !is_dev) {
      count(anomaly::unsupported_record);
      continue;
    }
    if (f.ph == 't') continue;
    const event_index at = bind(f, is_dev);
    if (at == no_event) {
      count(anomaly::unbound_flow);
      continue;
    }
    if (is_fb) {
      auto it = std::find_if(fb.begin(), fb.end(), [&](const auto& p) { return p.first == f.id; });
      if (it == fb.end()) it = fb.insert(fb.end(), {f.id, {no_event, no_event}});
      event_index& end = f.ph == 's' ? it->second.first : it->second.second;
      if (end != no_event)
        count(f.ph == 's' ? anomaly::duplicate_flow_start : anomaly::duplicate_flow_end);
      else
        end = at;
      continue;
    }
    if (!t.events[at].is<event_kind::device_activity>()) {
      count(anomaly::unbound_flow);
      continue;
    }
    if (f.ph == 's') {
      if (starts.count(f.id) != 0) {
        count(anomaly::duplicate_flow_start);
        continue;
      }
      if (marks.count(at) != 0) {
        count(anomaly::unbound_flow);
        continue;
      }
      starts[f.id] = at;
      start_order.push_back(at);
      marks[at] = {f.id, flow_kind::async_cpu_gpu, true};
    } else {
      ends.emplace_back(f.id, at);
    }
  }
  std::map<std::uint64_t, event_index> ended;
  std::map<std::uint64_t, event_index> bound_ends;  // the ends that were marked
  for (const auto& [id, at] : ends) {
    if (starts.count(id) == 0) {
      count(anomaly::flow_end_without_start);
      continue;
    }
    if (!ended.emplace(id, at).second) {
      count(anomaly::duplicate_flow_end);
      continue;
    }
    if (marks.count(at) != 0) {
      count(anomaly::unbound_flow);
      continue;
    }
    marks[at] = {id, flow_kind::async_cpu_gpu, false};
    bound_ends[id] = at;
  }
  for (const auto& [id, at] : starts)
    if (bound_ends.count(id) == 0) marks.erase(at);  // a start whose end never bound draws nothing
  b.device = marks;
  for (const auto& [id, p] : fb) {
    if (p.first == no_event) {
      count(anomaly::flow_end_without_start);
      continue;
    }
    if (p.second == no_event) continue;
    b.links.push_back({flow_kind::fwd_bwd, id, p.first, p.second});
  }
  // Links come in the order of their events, whatever the order of the flow records.
  std::sort(b.links.begin(), b.links.end(), [](const flow_link& x, const flow_link& y) {
    return std::tie(x.from, x.to, x.id) < std::tie(y.from, y.to, y.id);
  });
  return b;
}

}  // namespace

TEST_SUITE("formats") {
  TEST_CASE("read_chrome_trace: flows bind as a plain reading of the rules binds them") {
    std::mt19937_64 rng(20261123);
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    // Host tracks hold ops, annotations and runtime calls, the device track mostly device-side
    // activities; each list has a kind from the other side now and then.
    const char* host_cats[] = {"cpu_op",      "user_annotation", "cuda_runtime", "cuda_runtime",
                               "cuda_driver", "python_function", "kernel"};
    const char* device_cats[] = {"kernel", "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime"};
    // Above 2^32, and equal to small ids in their low 32 bits.
    const std::uint64_t big = (std::uint64_t{1} << 32) + 3;
    std::size_t links = 0, device_marks = 0, checked = 0;
    for (int round = 0; round < 1500; ++round) {
      const std::size_t n_events = 1 + pick(24), n_flows = pick(30);
      std::vector<std::int64_t> starts;
      std::string json = R"({"traceEvents":[)";
      bool first = true;
      auto sep = [&] {
        if (!first) json += ",\n";
        first = false;
      };
      const std::uint64_t tracks[][2] = {{1, 1}, {1, 2}, {0, 7}};
      for (std::size_t i = 0; i < n_events; ++i) {
        const std::size_t track = pick(3);
        const auto& tr = tracks[track];
        const char* cat = track == 2 ? device_cats[pick(std::size(device_cats))]
                                     : host_cats[pick(std::size(host_cats))];
        const std::int64_t ts = static_cast<std::int64_t>(pick(12)) * 10;  // shared starts
        const std::int64_t dur = static_cast<std::int64_t>(pick(4)) * 5;
        starts.push_back(ts);
        const std::uint64_t corr = pick(3) == 0 ? big + pick(2) : 1 + pick(4);
        sep();
        json += R"({"ph":"X","cat":")" + std::string(cat) + R"(","name":"e)" + std::to_string(i) +
                R"(","pid":)" + std::to_string(tr[0]) + R"(,"tid":)" + std::to_string(tr[1]) +
                R"(,"ts":)" + std::to_string(ts) + R"(,"dur":)" + std::to_string(dur) +
                R"(,"args":{"correlation":)" + std::to_string(corr) + "}}";
      }
      std::vector<flow_rec> flows;
      const char* flow_cats[] = {"ac2g", "ac2g", "fwdbwd", "fwdbwd", "async_cpu_to_gpu", "other"};
      for (std::size_t i = 0; i < n_flows; ++i) {
        const std::uint64_t ids[] = {1, 2, 3, 4, big, big + 1};
        const char ph = "sssffft"[pick(7)];
        const std::string cat = flow_cats[pick(std::size(flow_cats))];
        // Device flows end on the device track, other flows stay on the host (mostly).
        const bool device_end = ph == 'f' && cat != "fwdbwd";
        const auto& tr = tracks[pick(6) == 0 ? pick(3) : device_end ? 2 : pick(2)];
        const std::int64_t ts =
            pick(4) != 0 ? starts[pick(starts.size())] : static_cast<std::int64_t>(pick(125));
        flow_rec f{ph, cat,         ids[pick(std::size(ids))], tr[0], pick(10) == 0 ? 9 : tr[1],
                   ts, pick(3) != 0};
        flows.push_back(f);
        sep();
        json += R"({"ph":")" + std::string(1, f.ph) + R"(","id":)" + std::to_string(f.id) +
                R"(,"pid":)" + std::to_string(f.pid) + R"(,"tid":)" + std::to_string(f.tid) +
                R"(,"ts":)" + std::to_string(f.ts_us) + R"(,"cat":")" + f.cat + "\"" +
                (f.enclosing ? R"(,"bp":"e")" : "") + "}";
      }
      json += "]}";
      INFO(json);
      const event_table t = read_chrome_trace_string(json);
      // The reference reads the same table with no flow fields set.
      event_table unbound = read_chrome_trace_string(json);
      for (auto& e : unbound.events)
        if (auto* d = e.get_if<event_kind::device_activity>()) {
          d->flow_id = 0;
          d->flow_type = flow_kind::none;
          d->flow_start = false;
        }
      const bound want = reference(unbound, flows);
      const bound got = observed(t);
      CHECK(got.links == want.links);
      CHECK(got.device == want.device);
      CHECK(got.anomalies == want.anomalies);
      links += want.links.size();
      device_marks += want.device.size();
      ++checked;
    }
    // The rounds reached what they are for (not only unbound flows).
    CHECK(checked == 1500);
    CHECK(links > 150);
    CHECK(device_marks > 400);
  }
}
