// tracemodel/formats — traces of several ranks: which files, which rank each is, and reading
// them in parallel with bounded memory.
//
//   auto files = tracemodel::trace_files({"run/"});          // a folder's .json and .json.gz
//   auto rows = tracemodel::for_each_rank(files, {}, [](std::int64_t rank, event_table& t) {
//     return tracemodel::temporal_breakdown(tracemodel::device_intervals(t));
//   });                                                      // [(rank, result)], by rank
//
// A file's rank is `distributedInfo.rank` when the trace has it, else the number in a
// `rank-N` or `rankN` in its file name, else its position in the list. Two files of one rank are
// an error that names both. Files are read on up to `threads` threads (the options' cap), each
// table handed to the function and dropped as soon as it returns, so memory follows the
// tables being read, not all of them.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace_reader.hpp"
#include "tracemodel/formats/trace_file.hpp"
#include "tracemodel/memory.hpp"
#include "tracemodel/threads.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// Whether a file's name is a trace's: `.json`, `.pftrace` or `.perfetto-trace`, gzip or not.
inline bool is_trace_file_name(std::string_view name) noexcept {
  if (name.ends_with(".gz")) name.remove_suffix(3);
  return name.ends_with(".json") || name.ends_with(".pftrace") || name.ends_with(".perfetto-trace");
}

/// The trace files of `paths`: a file as given, a folder's trace files (`is_trace_file_name`,
/// not recursive) in name order. Throws `input_error` for a path that does not exist.
[[nodiscard]] inline std::vector<std::string> trace_files(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(p, ec)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_regular_file(ec) && is_trace_file_name(name))
          found.push_back(entry.path().string());
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (p == "-" || fs::exists(p, ec)) {
      out.push_back(p);
    } else {
      throw input_error("no such file or folder: " + p);
    }
  }
  return out;
}

/// `distributedInfo.rank` of a trace, when it has one.
template <class Schema>
[[nodiscard]] std::optional<std::int64_t> distributed_rank(const basic_event_table<Schema>& t) {
  for (const auto& [key, value] : t.info.metadata) {
    if (t.strings.view(key) != "distributedInfo") continue;
    const std::string_view v = t.strings.view(value);
    const std::size_t k = v.find("\"rank\"");
    if (k == std::string_view::npos) return std::nullopt;
    std::size_t p = k + 6;
    while (p < v.size() && (v[p] == ' ' || v[p] == '\t' || v[p] == '\n' || v[p] == '\r')) ++p;
    if (p >= v.size() || v[p] != ':') return std::nullopt;
    ++p;
    while (p < v.size() && (v[p] == ' ' || v[p] == '\t' || v[p] == '\n' || v[p] == '\r')) ++p;
    std::int64_t r = 0;
    const auto [end, ec] = std::from_chars(v.data() + p, v.data() + v.size(), r);
    if (ec != std::errc{} || end == v.data() + p) return std::nullopt;
    return r;
  }
  return std::nullopt;
}

/// The number in a `rank-N` or `rankN` of a file name (its last path component), if any.
[[nodiscard]] inline std::optional<std::int64_t> rank_in_name(std::string_view path) {
  const std::size_t slash = path.find_last_of('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (std::size_t k = name.find("rank"); k != std::string_view::npos;
       k = name.find("rank", k + 1)) {
    std::size_t p = k + 4;
    if (p < name.size() && name[p] == '-') ++p;
    std::int64_t r = 0;
    const auto [end, ec] = std::from_chars(name.data() + p, name.data() + name.size(), r);
    if (ec == std::errc{} && end != name.data() + p) return r;
  }
  return std::nullopt;
}

/// The rank of a trace read from `path`: its `distributedInfo.rank`, else the number of a
/// `rank-N` in its name, else `place` (the file's place in the list it came in).
template <class Schema>
[[nodiscard]] std::int64_t rank_of(const basic_event_table<Schema>& t, std::string_view path,
                                   std::int64_t place) {
  if (const std::optional<std::int64_t> r = distributed_rank(t)) return *r;
  return rank_in_name(path).value_or(place);
}

/// Reads one file of a run (`place`: its place in its list), finds its rank (`rank_of`) and
/// returns `fn(rank, table)`; then drops the table and trims the array cache to about its size,
/// which keeps what the next rank's read reuses and not the scratch of every analysis so far.
/// An input_error names the file.
template <class Fn>
[[nodiscard]] auto read_rank(const std::string& file, std::int64_t place, const read_options& o,
                             Fn&& fn) {
  try {
    std::size_t table_bytes = 0;
    auto out = [&] {
      event_table t = read_trace_file(file, o);
      auto r = fn(rank_of(t, file, place), t);
      table_bytes = t.memory_bytes();
      return r;
    }();
    trim_cached_memory(table_bytes);
    return out;
  } catch (const input_error& e) {
    throw input_error(file + ": " + e.what(), e.offset());
  }
}

/// Reads each file, finds its rank and calls `fn(rank, table)`; returns the results as (rank,
/// result) pairs ordered by rank. The first error (a file that cannot be read, a rank given
/// twice) is thrown, naming the file(s). `at_once` (0: no limit) caps the calls of `fn` that run
/// at the same time: a thread whose table is read waits for a free turn, while the others read.
/// With one turn and two threads, one rank is analysed while the next is read, and the memory
/// holds one analysis's scratch arrays, not one per thread. Once a rank's table is dropped, the
/// array cache is trimmed to about that table (trim_cached_memory): what the next read reuses.
template <class Fn>
[[nodiscard]] auto for_each_rank(const std::vector<std::string>& files, const read_options& options,
                                 Fn fn, unsigned at_once = 0) {
  using result = std::invoke_result_t<Fn&, std::int64_t, event_table&>;
  struct slot {
    std::int64_t rank = 0;
    std::optional<result> value;
  };
  std::vector<slot> slots(files.size());
  std::atomic<std::size_t> next{0};
  std::mutex m;
  std::exception_ptr error;
  std::condition_variable turn_free;
  unsigned turns = at_once;  // free turns (guarded by m)
  struct turn {              // one call of fn, when at_once caps them
    std::mutex& m;
    std::condition_variable& free;
    unsigned& turns;
    bool capped;
    turn(std::mutex& mu, std::condition_variable& f, unsigned& t, bool c)
        : m(mu), free(f), turns(t), capped(c) {
      if (!capped) return;
      std::unique_lock lock(m);
      free.wait(lock, [&] { return turns > 0; });
      --turns;
    }
    ~turn() {
      if (!capped) return;
      {
        std::lock_guard lock(m);
        ++turns;
      }
      free.notify_one();
    }
    turn(const turn&) = delete;
    turn& operator=(const turn&) = delete;
  };
  // The files are the parallel part; threads left over (fewer files than threads) read them.
  const unsigned budget = detail::thread_budget(options);
  read_options one = options;
  one.threads =
      std::max<unsigned>(1, budget / static_cast<unsigned>(std::max<std::size_t>(1, files.size())));
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < files.size();) {
      try {
        slots[i].value.emplace(read_rank(files[i], static_cast<std::int64_t>(i), one,
                                         [&](std::int64_t rank, event_table& t) {
                                           slots[i].rank = rank;
                                           const turn held(m, turn_free, turns, at_once > 0);
                                           return fn(rank, t);
                                         }));
      } catch (...) {  // (an input_error names its file already)
        std::lock_guard lock(m);
        if (!error) error = std::current_exception();
        next = files.size();
      }
    }
  };
  {
    const unsigned n =
        std::min<unsigned>(detail::thread_budget(options),
                           static_cast<unsigned>(std::max<std::size_t>(1, files.size())));
    std::vector<detail::worker> helpers;
    for (unsigned k = 1; k < n; ++k) {
      try {
        helpers.emplace_back(options, work);
      } catch (const std::system_error&) {
        break;  // fewer threads
      }
    }
    work();
    for (auto& h : helpers) h.join();
  }
  if (error) std::rethrow_exception(error);
  std::vector<std::size_t> order(files.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return slots[a].rank < slots[b].rank; });
  std::vector<std::pair<std::int64_t, result>> out;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::size_t i = order[k];
    if (k > 0 && slots[order[k - 1]].rank == slots[i].rank)
      throw input_error("rank " + std::to_string(slots[i].rank) +
                        " is in two files: " + files[order[k - 1]] + " and " + files[i]);
    out.emplace_back(slots[i].rank, std::move(*slots[i].value));
  }
  return out;
}

TRACEMODEL_END_NAMESPACE
