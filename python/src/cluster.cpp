// tracemodel._core: a rank's device-time results as bytes, made where the rank is read (a
// cluster's worker), and the report gathered from them as columns (tracemodel.cluster).
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <tracemodel/formats/rank_parts.hpp>
#include <tracemodel/hta/rank_parts.hpp>
#include <tracemodel/hta/report.hpp>

#include "binding.hpp"

namespace tracemodel_py {
namespace {

namespace hta = tracemodel::hta;

/// `make()`'s bytes, made without the GIL; errors about `path` as TraceError.
template <class Make>
py::bytes part_bytes(const std::string& path, Make make) {
  std::string bytes;
  {
    const py::gil_scoped_release unlocked;
    bytes = about_file(path, make);
  }
  return py::bytes(bytes);
}

/// One rank's part of a device-time report (formats/rank_parts.hpp), read with `threads`.
py::bytes gpu_part(const std::string& path, std::int64_t place, bool by_hta, bool series,
                   unsigned threads) {
  tmod::gpu_report_options o;
  o.series = series;
  o.threads = threads;
  return part_bytes(path, [&] {
    return tmod::encode_part(
        by_hta ? hta::read_gpu_rank_part(path, place, o) : tmod::read_gpu_rank_part(path, place, o),
        "gpu");
  });
}

/// One rank's part of a trace diff (hta/rank_parts.hpp).
py::bytes diff_part(const std::string& path, std::int64_t place, bool by_hta, bool short_names,
                    bool with_gpu, unsigned threads) {
  return part_bytes(path, [&] {
    return tmod::encode_part(
        hta::read_diff_rank_part(path, place, {by_hta, short_names, with_gpu, threads}), "diff");
  });
}

py::dict stats_dict(std::vector<std::int64_t> rank, text_column key, const char* key_name,
                    const stats_columns& st) {
  py::dict d;
  d["rank"] = numbers<std::int64_t>(rank);
  d[key_name] = key.take();
  st.into(d);
  return d;
}

template <class Report>
py::dict columns_of(const Report& r) {
  py::dict out;
  std::vector<std::int64_t> rank, idle, compute, non, kernel;
  std::vector<double> ip, cp, np, overlap;
  for (const tmod::gpu_rank& x : r.ranks) {
    rank.push_back(x.rank);
    idle.push_back(x.temporal.idle);
    compute.push_back(x.temporal.compute);
    non.push_back(x.temporal.non_compute);
    kernel.push_back(x.temporal.kernel_time);
    ip.push_back(x.temporal.any ? x.temporal.idle_pctg : NAN);
    cp.push_back(x.temporal.any ? x.temporal.compute_pctg : NAN);
    np.push_back(x.temporal.any ? x.temporal.non_compute_pctg : NAN);
    overlap.push_back(x.overlap.value_or(NAN));
  }
  py::dict t;
  t["rank"] = numbers<std::int64_t>(rank);
  t["idle_time"] = numbers<std::int64_t>(idle);
  t["compute_time"] = numbers<std::int64_t>(compute);
  t["non_compute_time"] = numbers<std::int64_t>(non);
  t["kernel_time"] = numbers<std::int64_t>(kernel);
  t["idle_time_pctg"] = numbers<double>(ip);
  t["compute_time_pctg"] = numbers<double>(cp);
  t["non_compute_time_pctg"] = numbers<double>(np);
  t["comp_comm_overlap_pctg"] = numbers<double>(overlap);
  out["temporal"] = t;

  {  // idle time per stream and category
    std::vector<std::int64_t> rk, stream, time;
    std::vector<double> ratio;
    text_column cat;
    stats_columns st;
    for (const tmod::gpu_rank& x : r.ranks)
      for (const tmod::idle_row& i : x.idle) {
        rk.push_back(x.rank);
        stream.push_back(i.stream);
        cat.push(tmod::idle_category_names[static_cast<int>(i.category)]);
        time.push_back(i.idle_time);
        ratio.push_back(i.ratio.value_or(NAN));
        st.push(i.stats);
      }
    py::dict d;
    d["rank"] = numbers<std::int64_t>(rk);
    d["stream"] = numbers<std::int64_t>(stream);
    d["idle_category"] = cat.take();
    d["idle_time"] = numbers<std::int64_t>(time);
    d["idle_time_ratio"] = numbers<double>(ratio);
    st.into(d);
    out["idle"] = d;
  }
  name_rows kernels, notes;
  for (const tmod::gpu_rank& x : r.ranks) {
    for (const tmod::kernel_row& k : x.kernels) kernels.push(x.rank, k, true);
    for (const tmod::kernel_row& k : x.gpu_annotations) notes.push(x.rank, k, false);
  }
  out["kernels"] = kernels.take(true);
  out["gpu_annotations"] = notes.take(false);
  {
    text_column type;
    std::vector<std::int64_t> sum;
    std::vector<double> pct;
    for (const tmod::kernel_type_row& k : r.kernel_types) {
      type.push(k.kernel_type);
      sum.push_back(k.sum);
      pct.push_back(k.percentage);
    }
    py::dict d;
    d["kernel_type"] = type.take();
    d["sum"] = numbers<std::int64_t>(sum);
    d["percentage"] = numbers<double>(pct);
    out["kernel_types"] = d;
  }
  {  // queues and copies: their summaries
    std::vector<std::int64_t> qr, stream, full, br;
    text_column kind;
    stats_columns qs, bs;
    for (const tmod::gpu_rank& x : r.ranks) {
      for (const tmod::stream_queue& q : x.queues) {
        qr.push_back(x.rank);
        stream.push_back(q.stream);
        qs.push(q.summary);
        full.push_back(q.time_full);
      }
      for (const tmod::memory_bandwidth_series& m : x.bandwidth) {
        br.push_back(x.rank);
        kind.push(m.kind);
        bs.push(m.summary);
      }
    }
    py::dict q;
    q["rank"] = numbers<std::int64_t>(qr);
    q["stream"] = numbers<std::int64_t>(stream);
    qs.into(q);
    q["time_full"] = numbers<std::int64_t>(full);
    out["queues"] = q;
    out["bandwidth"] = stats_dict(br, std::move(kind), "name", bs);
  }
  {  // launches (with the series)
    std::vector<std::int64_t> rk, corr, cpu, gpu, delay;
    for (const tmod::gpu_rank& x : r.ranks)
      for (const tmod::launch_row& l : x.launches) {
        rk.push_back(x.rank);
        corr.push_back(static_cast<std::int64_t>(l.correlation));
        cpu.push_back(l.cpu_duration);
        gpu.push_back(l.gpu_duration);
        delay.push_back(l.launch_delay);
      }
    py::dict d;
    d["rank"] = numbers<std::int64_t>(rk);
    d["correlation"] = numbers<std::int64_t>(corr);
    d["cpu_duration"] = numbers<std::int64_t>(cpu);
    d["gpu_duration"] = numbers<std::int64_t>(gpu);
    d["launch_delay"] = numbers<std::int64_t>(delay);
    out["launches"] = d;
  }
  auto spread = [](const tmod::row_list<tmod::spread_row>& rows) {
    text_column key;
    std::vector<std::int64_t> n, first, spread_ns, lo, hi, last;
    for (const tmod::spread_row& s : rows) {
      key.push(s.key);
      n.push_back(static_cast<std::int64_t>(s.ranks));
      first.push_back(s.first_start);
      spread_ns.push_back(s.start_spread);
      lo.push_back(s.min_duration);
      hi.push_back(s.max_duration);
      last.push_back(s.last_rank);
    }
    py::dict d;
    d["key"] = key.take();
    d["ranks"] = numbers<std::int64_t>(n);
    d["first_start"] = numbers<std::int64_t>(first);
    d["start_spread"] = numbers<std::int64_t>(spread_ns);
    d["min_duration"] = numbers<std::int64_t>(lo);
    d["max_duration"] = numbers<std::int64_t>(hi);
    d["last_rank"] = numbers<std::int64_t>(last);
    return d;
  };
  out["steps"] = spread(r.spread.steps);
  out["collectives"] = spread(r.spread.collectives);
  {
    std::vector<std::int64_t> rk, last;
    std::vector<double> lag;
    for (const tmod::straggler_row& s : r.spread.stragglers) {
      rk.push_back(s.rank);
      last.push_back(static_cast<std::int64_t>(s.last));
      lag.push_back(s.mean_lag);
    }
    py::dict d;
    d["rank"] = numbers<std::int64_t>(rk);
    d["last"] = numbers<std::int64_t>(last);
    d["mean_lag"] = numbers<double>(lag);
    out["stragglers"] = d;
  }
  out["repairs"] = repairs_dict(r.repairs);
  out["unit"] = std::string(Report::unit::name);
  return out;
}

/// The report of these parts, as columns (times in the report's unit: ns, or HTA's us).
py::dict gpu_report(const std::vector<py::bytes>& parts, bool by_hta) {
  std::vector<tmod::gpu_rank_part> each;
  each.reserve(parts.size());
  for (const py::bytes& b : parts) {
    const std::string_view v = b;
    each.push_back(about_file("(a rank part)",
                              [&] { return tmod::decode_part<tmod::gpu_rank_part>(v, "gpu"); }));
  }
  if (by_hta) return columns_of(about_file("", [&] { return hta::gather_gpu_report(each); }));
  return columns_of(about_file("", [&] { return tmod::gather_gpu_report(each); }));
}

}  // namespace

void bind_cluster(py::module_& m) {
  m.def("trace_files", &tmod::trace_files, py::arg("paths"));
  m.def("gpu_part", &gpu_part, py::arg("path"), py::arg("place"), py::arg("hta"), py::arg("series"),
        py::arg("threads"));
  m.def("gpu_report", &gpu_report, py::arg("parts"), py::arg("hta"));
  m.def("diff_part", &diff_part, py::arg("path"), py::arg("place"), py::arg("hta"),
        py::arg("short_names"), py::arg("with_gpu"), py::arg("threads"));
}

}  // namespace tracemodel_py
