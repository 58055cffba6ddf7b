// tracemodel/formats — a Chrome trace written part by part, loadable after every part.
//
//   tracemodel::chrome_trace_stream out("server.json", options);  // options.rotate_bytes, ...
//   for (;;) out.write(next_part());   // each part an event table (a window of a recording),
//                                      // or an export view of one (formats/export_view.hpp)
//
// The file is the trace `write_chrome_trace` writes, grown one part at a time: the header (with
// the first part's metadata and a base time that stays fixed), then each part's events, each time
// followed by the array's and the object's closing, which the next part writes over. So after
// every `write` (and after a crash between two of them) the file is a whole trace that readers,
// Perfetto and chrome://tracing open. A thread's or process's name record is written once, with
// the first part that has it. Flows are written with the part that holds both ends (a link
// between two parts is not drawn).
//
// With `rotate_bytes`, a part that brings the file to that size closes it, and the next part
// starts the next file: `server.json`, `server.1.json`, `server.2.json`, ... (`files()`), each a
// whole trace with the same base time. Plain JSON only: a compressed file cannot be reopened and
// continued. Errors (a file that cannot be opened or written) throw `input_error`.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/assert.hpp"
#include "tracemodel/formats/chrome_trace_writer.hpp"
#include "tracemodel/formats/export_view.hpp"
#include "tracemodel/formats/json_output.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct chrome_trace_stream_options {
  /// The time the file's `ts` values count from (ns). Empty: the first part's base time (its
  /// own, or the whole second before its first event).
  std::optional<std::int64_t> base_time_ns;
  /// Start the next file once one has this many bytes (0: one file).
  std::uint64_t rotate_bytes = 0;
};

template <class Schema = default_schema>
class chrome_trace_stream {
 public:
  using table_type = basic_event_table<Schema>;

  explicit chrome_trace_stream(std::string path, chrome_trace_stream_options options = {})
      : path_(std::move(path)), options_(options) {
    if (path_.size() > 3 && path_.compare(path_.size() - 3, 3, ".gz") == 0)
      throw input_error("a streamed trace is plain JSON: " + path_);
  }
  chrome_trace_stream(const chrome_trace_stream&) = delete;
  chrome_trace_stream& operator=(const chrome_trace_stream&) = delete;
  ~chrome_trace_stream() {
    if (file_ != nullptr) std::fclose(file_);
  }

  /// Appends the part's events; the file is a whole trace again when this returns.
  void write(const table_type& part) { write(basic_export_view<Schema>{part}); }
  /// Appends the part's events and what its view draws beside them (counters, flows and marks
  /// within the part).
  void write(const basic_export_view<Schema>& view) {
    const table_type& part = view.table;
    if (file_ == nullptr) open_next(view);
    seek(end_);
    {
      json_output out = to_file();
      detail::chrome_writer<table_type> w(view, out);
      empty_ = w.write_body(base_, empty_, [this, &part](const metadata_record& m) {
        return names_
            .emplace(std::string(part.strings.view(m.name)), m.pid, m.tid,
                     std::string(part.strings.view(m.value)),
                     std::string(part.strings.view(m.args)))
            .second;
      });
      out.flush();
    }
    close_array();
    events_ += part.size();
    if (options_.rotate_bytes != 0 && bytes_ >= options_.rotate_bytes) close();
  }

  /// Closes the current file (it is whole); the next part starts the next one.
  void close() {
    if (file_ == nullptr) return;
    const int rc = std::fclose(file_);
    file_ = nullptr;
    if (rc != 0) throw input_error("cannot write " + files_.back());
  }

  /// The files written so far, oldest first.
  [[nodiscard]] const std::vector<std::string>& files() const noexcept { return files_; }
  /// Events written, over every file.
  [[nodiscard]] std::uint64_t events() const noexcept { return events_; }
  /// The current (or last) file's size.
  [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }
  /// The base time of every file (ns), once the first part set it.
  [[nodiscard]] std::int64_t base_time_ns() const noexcept { return base_; }

 private:
  void open_next(const basic_export_view<Schema>& first) {
    std::string path = path_;
    if (!files_.empty()) {  // trace.json -> trace.1.json
      const std::size_t slash = path.find_last_of('/');
      const std::size_t dot = path.find_last_of('.');
      const std::size_t at = dot == std::string::npos || (slash != std::string::npos && dot < slash)
                                 ? path.size()
                                 : dot;
      path.insert(at, "." + std::to_string(files_.size()));
    }
    file_ = std::fopen(path.c_str(), "w+b");
    if (file_ == nullptr) throw input_error("cannot open " + path + " for writing");
    files_.push_back(path);
    if (!based_) {
      base_ = options_.base_time_ns.value_or(0);
      if (!options_.base_time_ns) {
        std::string ignored;
        json_output out = json_output::to_string(ignored);
        base_ = detail::chrome_writer<table_type>(first, out).base_time();
      }
      based_ = true;
    }
    end_ = 0;
    seek(0);
    {
      json_output out = to_file();
      detail::chrome_writer<table_type>(first, out).write_header(base_);
      out.flush();
    }
    close_array();
    empty_ = true;
    names_.clear();  // each file names its threads again
  }

  /// Output at the file's position (which `end_` follows).
  json_output to_file() {
    return json_output([this](std::string_view text) {
      if (std::fwrite(text.data(), 1, text.size(), file_) != text.size())
        throw input_error("cannot write " + files_.back());
      end_ += text.size();
    });
  }
  void seek(std::uint64_t at) {
    if (std::fseek(file_, static_cast<long>(at), SEEK_SET) != 0)
      throw input_error("cannot write " + files_.back());
  }
  /// Ends the file at `end_` with the array's and the object's closing, which the next part
  /// writes over.
  void close_array() {
    const std::string_view trailer = detail::chrome_writer<table_type>::trailer;
    if (std::fwrite(trailer.data(), 1, trailer.size(), file_) != trailer.size() ||
        std::fflush(file_) != 0)
      throw input_error("cannot write " + files_.back());
    bytes_ = end_ + trailer.size();
  }

  std::string path_;
  chrome_trace_stream_options options_;
  std::FILE* file_ = nullptr;
  std::vector<std::string> files_;
  std::uint64_t end_ = 0;  ///< where the next part goes (the closing's place)
  std::uint64_t bytes_ = 0;
  std::uint64_t events_ = 0;
  std::int64_t base_ = 0;
  bool based_ = false;
  bool empty_ = true;  ///< the current file's array has no element yet
  std::set<std::tuple<std::string, process_key, thread_key, std::string, std::string>> names_;
};

TRACEMODEL_END_NAMESPACE
