// tracemodel/formats — buffered JSON output for the writers.
//
// Writes into a growing buffer and hands it to a sink whenever it passes a threshold, so that a
// trace of any size streams out in constant memory. Sinks: a std::string, a C file, a gzip file.
// Numbers are written exactly: times as microseconds with three decimals from integer
// nanoseconds (no double involved), ids above 2^53 as strings (JSON readers that use doubles,
// JavaScript's among them, would round them).
#pragma once

#include <fmt/format.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/assert.hpp"
#include "tracemodel/formats/json_escape.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// The largest integer every JSON reader represents exactly (2^53).
inline constexpr std::uint64_t json_exact_integer_limit = std::uint64_t{1} << 53;

class json_output {
 public:
  using sink = std::function<void(std::string_view)>;

  explicit json_output(sink s, std::size_t flush_bytes = 1 << 20)
      : sink_(std::move(s)), flush_bytes_(flush_bytes) {
    buf_.reserve(flush_bytes_ + 4096);
  }
  json_output(const json_output&) = delete;
  json_output& operator=(const json_output&) = delete;
  ~json_output() = default;

  /// Output into a string.
  static json_output to_string(std::string& out) {
    return json_output([&out](std::string_view s) { out.append(s); });
  }

  json_output& raw(std::string_view s) {
    buf_.append(s);
    maybe_flush();
    return *this;
  }
  json_output& ch(char c) {
    buf_.push_back(c);
    return *this;
  }
  /// A JSON string literal.
  json_output& string(std::string_view s) {
    buf_.push_back('"');
    detail::append_json_escaped(buf_, s);
    buf_.push_back('"');
    maybe_flush();
    return *this;
  }
  json_output& integer(std::int64_t v) {
    const fmt::format_int f(v);
    buf_.append(f.data(), f.size());
    return *this;
  }
  json_output& unsigned_integer(std::uint64_t v) {
    const fmt::format_int f(v);
    buf_.append(f.data(), f.size());
    return *this;
  }
  /// An id: a number up to 2^53, a decimal string above.
  json_output& id(std::uint64_t v) {
    if (v <= json_exact_integer_limit) return unsigned_integer(v);
    buf_.push_back('"');
    unsigned_integer(v);
    buf_.push_back('"');
    return *this;
  }
  /// Nanoseconds as microseconds with exactly three decimals ("12.345", "-0.007").
  json_output& micros(std::int64_t ns) {
    std::uint64_t a = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
    if (ns < 0) buf_.push_back('-');
    unsigned_integer(a / 1000);
    const auto frac = static_cast<unsigned>(a % 1000);
    buf_.push_back('.');
    buf_.push_back(static_cast<char>('0' + frac / 100));
    buf_.push_back(static_cast<char>('0' + frac / 10 % 10));
    buf_.push_back(static_cast<char>('0' + frac % 10));
    return *this;
  }
  /// A double in its shortest round-trip form, always with a '.' or an exponent so that it
  /// reads back as a floating-point number ("1.0", not "1"); non-finite values (not JSON) as
  /// null.
  json_output& floating(double v) {
    if (!std::isfinite(v)) return raw("null");
    const std::size_t at = buf_.size();
    fmt::format_to(std::back_inserter(buf_), "{}", v);
    if (buf_.find_first_of(".e", at) == std::string::npos) buf_.append(".0");
    return *this;
  }
  json_output& boolean(bool v) { return raw(v ? "true" : "false"); }

  /// Hands everything buffered to the sink.
  void flush() {
    if (!buf_.empty()) sink_(buf_);
    buf_.clear();
  }

 private:
  void maybe_flush() {
    if (buf_.size() >= flush_bytes_) flush();
  }
  sink sink_;
  std::size_t flush_bytes_;
  std::string buf_;
};

/// A file to write a trace into: plain, or gzip when the name ends in ".gz". Written to
/// "<path>.tmp" and renamed into place by `commit`, so a crash never leaves half a trace under
/// the real name.
class trace_file_sink {
 public:
  explicit trace_file_sink(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
    gzip_ = path_.size() > 3 && path_.compare(path_.size() - 3, 3, ".gz") == 0;
    if (gzip_) {
      gz_ = gzopen(tmp_.c_str(), "wb6");
      if (gz_ == nullptr) throw input_error("cannot open " + tmp_ + " for writing");
    } else {
      file_ = std::fopen(tmp_.c_str(), "wb");
      if (file_ == nullptr) throw input_error("cannot open " + tmp_ + " for writing");
    }
  }
  trace_file_sink(const trace_file_sink&) = delete;
  trace_file_sink& operator=(const trace_file_sink&) = delete;
  ~trace_file_sink() {
    if (gz_ != nullptr || file_ != nullptr) {  // not committed: drop the partial file
      close();
      std::remove(tmp_.c_str());
    }
  }

  void write(std::string_view s) {
    if (gzip_) {
      if (s.empty()) return;
      if (gzwrite(gz_, s.data(), static_cast<unsigned>(s.size())) != static_cast<int>(s.size()))
        throw input_error("cannot write " + tmp_);
    } else if (std::fwrite(s.data(), 1, s.size(), file_) != s.size()) {
      throw input_error("cannot write " + tmp_);
    }
  }
  json_output::sink as_sink() {
    return [this](std::string_view s) { write(s); };
  }
  /// Closes the file and renames it into place.
  void commit() {
    if (!close()) throw input_error("cannot write " + tmp_);
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
      throw input_error("cannot rename " + tmp_ + " to " + path_);
  }

 private:
  bool close() {
    bool ok = true;
    if (gz_ != nullptr) ok = gzclose(gz_) == Z_OK;
    if (file_ != nullptr) ok = std::fclose(file_) == 0 && ok;
    gz_ = nullptr;
    file_ = nullptr;
    return ok;
  }
  std::string path_, tmp_;
  bool gzip_ = false;
  gzFile gz_ = nullptr;
  std::FILE* file_ = nullptr;
};

TRACEMODEL_END_NAMESPACE
