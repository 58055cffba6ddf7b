// tracemodel/formats — PyTorch's memory timeline files (`prof.export_memory_timeline(path)`),
// which HTA's `MemoryAnalysis` reads.
//
//   tracemodel::write_memory_timeline_file(result, "memory.raw.json.gz");
//   tracemodel::memory_timeline_file f = tracemodel::read_memory_timeline_file("memory.json");
//
// Two layouts, chosen by the name as PyTorch chooses them:
//  - "*.raw.json.gz" (and "*.raw.json"): the raw records, `[[t, action, bytes, category], ...]`
//    with `t` in ns (-1: before the trace), `action` 1 preexisting, 2 create, 3 increment
//    version, 4 destroy, `bytes` negative for a destroy and for the old version of an
//    increment, `category` PyTorch's index (0 parameter ... 7 unknown);
//  - any other ".json" or ".json.gz": the samples, `[times, sizes]`, times in whole µs (the
//    preexisting -1 replaced by the first positive time), each size a list of 9 byte counts:
//    a leading 0, then the 8 categories (PyTorch's plot stacks them from that 0).
// Both for the result's device. Reading takes either (gzip or not, told by content) and gives the
// samples in ns: a raw file coalesced as HTA's `MemoryAnalysis` does (a new sample at each new
// time, in file order; times before 0 become the smallest positive time).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tracemodel/algo/memory_types.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/formats/json_output.hpp"
#include "tracemodel/formats/trace_text.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// What a memory timeline file holds.
struct memory_timeline_file {
  bool raw = false;                 ///< raw records (else samples)
  row_list<memory_record> records;  ///< raw files: every record (`block` unused)
  row_list<memory_sample> samples;  ///< times in ns
};

namespace detail::memory_file {
inline bool raw_name(std::string_view path) {
  return path.ends_with(".raw.json.gz") || path.ends_with(".raw.json");
}

/// A parser of nested arrays of integers, errors naming the byte.
class int_arrays {
 public:
  explicit int_arrays(std::string_view s) : s_(s) {}
  void expect(char c) {
    skip();
    if (p_ >= s_.size() || s_[p_] != c) fail(std::string("expected '") + c + "'");
    ++p_;
  }
  /// After an element: true at ',' (consumed), false at `close` (consumed).
  bool more(char close) {
    skip();
    if (p_ < s_.size() && s_[p_] == ',') {
      ++p_;
      return true;
    }
    expect(close);
    return false;
  }
  bool peek(char c) {
    skip();
    return p_ < s_.size() && s_[p_] == c;
  }
  std::int64_t integer() {
    skip();
    const std::size_t at = p_;
    bool negative = false;
    if (p_ < s_.size() && s_[p_] == '-') {
      negative = true;
      ++p_;
    }
    std::uint64_t v = 0;
    const std::size_t digits = p_;
    while (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9') {
      if (v > (std::uint64_t{1} << 62)) fail("integer out of range", at);
      v = v * 10 + static_cast<std::uint64_t>(s_[p_++] - '0');
    }
    if (p_ == digits) fail("expected an integer", at);
    if (p_ < s_.size() && (s_[p_] == '.' || s_[p_] == 'e' || s_[p_] == 'E'))
      fail("expected an integer, not a fraction", at);
    return negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  }
  void end() {
    skip();
    if (p_ != s_.size()) fail("text after the end of the file's array");
  }
  [[noreturn]] void fail(const std::string& what) const { fail(what, p_); }
  [[noreturn]] static void fail(const std::string& what, std::size_t at) {
    throw input_error("memory timeline file: " + what + " at byte " + std::to_string(at), at);
  }

 private:
  void skip() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\r' || s_[p_] == '\t'))
      ++p_;
  }
  std::string_view s_;
  std::size_t p_ = 0;
};
}  // namespace detail::memory_file

/// Whether `text` is a memory timeline file: an array whose first element is an array (a
/// Chrome trace is an object, or an array of objects).
inline bool looks_like_memory_timeline(std::string_view text) {
  std::size_t p = 0;
  auto skip = [&] {
    while (p < text.size() &&
           (text[p] == ' ' || text[p] == '\n' || text[p] == '\r' || text[p] == '\t'))
      ++p;
  };
  skip();
  if (p >= text.size() || text[p] != '[') return false;
  ++p;
  skip();
  return p < text.size() && text[p] == '[';
}

/// Parses a memory timeline file's text (see the header comment).
inline memory_timeline_file parse_memory_timeline(std::string_view text) {
  detail::memory_file::int_arrays in(text);
  memory_timeline_file f;
  auto ints = [&in] {
    std::vector<std::int64_t> v;
    in.expect('[');
    if (in.peek(']')) {
      in.expect(']');
      return v;
    }
    do v.push_back(in.integer());
    while (in.more(']'));
    return v;
  };
  auto record = [&f, &in](const std::vector<std::int64_t>& v) {
    if (v.size() != 4) in.fail("a record needs 4 integers (time, action, bytes, category)");
    if (v[1] < 1 || v[1] > 4) in.fail("an action is 1 to 4");
    if (v[3] < 0 || v[3] >= static_cast<std::int64_t>(memory_categories))
      in.fail("a category is 0 to 7");
    f.records.push_back(
        {v[0], static_cast<memory_action>(v[1]), static_cast<memory_category>(v[3]), v[2], 0});
  };
  in.expect('[');
  if (in.peek(']')) {  // no records
    in.expect(']');
    in.end();
    f.raw = true;
    return f;
  }
  const std::vector<std::int64_t> first = ints();
  bool samples = false;
  if (in.more(']')) {
    in.expect('[');
    samples = in.peek('[') || in.peek(']');  // (a record starts with a number)
    if (samples) {
      std::vector<std::vector<std::int64_t>> sizes;
      if (!in.peek(']')) do
          sizes.push_back(ints());
        while (in.more(']'));
      else
        in.expect(']');
      in.expect(']');
      if (sizes.size() != first.size()) in.fail("as many sizes as times expected");
      for (std::size_t k = 0; k < first.size(); ++k) {
        if (sizes[k].size() != memory_categories + 1)
          in.fail("each size lists 9 byte counts (a leading 0 and 8 categories)");
        memory_sample& m = f.samples.emplace_back();
        m.time_ns = first[k] * 1000;
        for (std::size_t c = 0; c < memory_categories; ++c) m.bytes[c] = sizes[k][c + 1];
      }
    } else {
      f.raw = true;
      record(first);
      std::vector<std::int64_t> v;
      v.push_back(in.integer());
      while (in.more(']')) v.push_back(in.integer());
      record(v);
      while (in.more(']')) record(ints());
    }
  } else {
    f.raw = true;
    record(first);
  }
  in.end();
  if (f.raw) {  // HTA's coalescing: file order, a sample at each new time
    std::int64_t smallest = -1;
    for (const memory_record& r : f.records) {
      if (f.samples.empty())
        f.samples.push_back({r.time_ns, {}});
      else if (r.time_ns != f.samples.back().time_ns)
        f.samples.push_back({r.time_ns, f.samples.back().bytes});
      f.samples.back().bytes[static_cast<std::size_t>(r.category)] += r.bytes;
      if (r.time_ns > 0 && (smallest < 0 || r.time_ns < smallest)) smallest = r.time_ns;
    }
    for (memory_sample& m : f.samples)
      if (m.time_ns < 0) m.time_ns = smallest;
  }
  return f;
}

/// Reads a memory timeline file (gzip or not).
inline memory_timeline_file read_memory_timeline_file(const std::string& path) {
  const trace_text text = load_trace_text(path);
  return parse_memory_timeline(text.view());
}

/// Writes the result's records (a "*.raw.json[.gz]" name) or samples (any other name) for its
/// device, as PyTorch's `export_memory_timeline` does; gzip when the name ends in ".gz".
inline void write_memory_timeline_file(const memory_timeline_result& m, const std::string& path) {
  trace_file_sink file(path);
  json_output out(file.as_sink());
  if (detail::memory_file::raw_name(path)) {
    out.ch('[');
    bool first = true;
    for (const memory_record& r : m.records) {
      if (m.blocks[r.block].device != m.device) continue;
      out.raw(first ? "[" : ", [").integer(r.time_ns).raw(", ");
      out.integer(static_cast<int>(r.action)).raw(", ").integer(r.bytes).raw(", ");
      out.integer(static_cast<int>(r.category)).ch(']');
      first = false;
    }
    out.ch(']');
  } else {
    const auto samples = coalesce_memory(m.records, m.blocks, m.device, 1000);
    out.ch('[').ch('[');
    for (std::size_t k = 0; k < samples.size(); ++k)
      out.raw(k ? ", " : "").integer(samples[k].time_ns);
    out.raw("], [");
    for (std::size_t k = 0; k < samples.size(); ++k) {
      out.raw(k ? ", [0" : "[0");
      for (const std::int64_t b : samples[k].bytes) out.raw(", ").integer(b);
      out.ch(']');
    }
    out.raw("]]");
  }
  out.flush();
  file.commit();
}

TRACEMODEL_END_NAMESPACE
