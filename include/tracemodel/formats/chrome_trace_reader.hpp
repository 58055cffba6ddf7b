// tracemodel/formats — the Chrome-trace / Kineto reader (simdjson).
//
//   tracemodel::event_table t = tracemodel::read_chrome_trace_file("trace.json.gz");
//
// Reads what real PyTorch versions write: Kineto traces (an object with `traceEvents`,
// `baseTimeNanoseconds`, metadata) and the older export (a bare array of complete events),
// integer or fractional microseconds, optional fields missing, gzip-compressed or not:
//  * complete (`X`), instant (`i`/`I`) and begin/end (`B`/`E`) records become events; metadata
//    (`M`) records and unknown top-level keys are kept and written back by the writer; other
//    phases (counters, async) are skipped and counted;
//  * categories map onto kinds: `cpu_op`/`user_annotation` (or no category) -> op,
//    `python_function` -> script call (native call for "<built-in ...>"), `cpu_instant_event`
//    "[memory]"/"[OutOfMemory]" -> allocation/out-of-memory, anything else -> device activity
//    with its category kept;
//  * args with a field (formats/args.hpp) fill it; op inputs come from `Input Dims`,
//    `Input type`, `Input Strides`, `Concrete Inputs`; every other arg is kept as an attribute;
//  * times are parsed from the number text, so `baseTimeNanoseconds + ts * 1000` is exact;
//  * flow records bind to the event they point at (the enclosing slice, or the next slice
//    without `"bp":"e"`): `fwdbwd` flows become forward/backward links, `ac2g` flows the flow
//    fields of device activities;
//  * events are sorted by start time (stable, in place).
//
// Speed: records of the usual shape (plain keys and strings, numbers, an `args` object of the
// same, op input lists) are read straight from the text in one pass that checks every byte as
// JSON wants it (the direct path); a record it cannot read (an escape, a string id, anything
// malformed) goes through simdjson with the batch after it, and simdjson names the errors.
//
// Memory: the file (decompressed) and the table. The `traceEvents` array is split into batches
// that simdjson parses in place, so its index never covers more than a batch.
//
// Components (the split is under way): formats/trace_text.hpp loads a file's text (shared with
// the execution-trace reader); formats/chrome_trace/records.hpp holds the records as the parsers
// read them, before any event is built; formats/json_scan.hpp the byte scanner the direct path
// uses; this header the parsers, the splitter, the flow binder and the table builder.
//
// Bad input throws `input_error` whose `offset()` is the byte offset of the problem (in the
// decompressed text): empty or truncated input (gzip included), garbage, valid JSON that is not
// a trace, wrong types, numbers that are not finite or out of range, nesting deeper than 1024.
// Anomalies that real profilers produce are repaired and counted in `table.anomalies`: an event
// that ends before it starts (its end is set to its start), a duplicate flow start (the first
// wins), a flow end without a start or bound to nothing (dropped), an `E` without `B`.
#pragma once

#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/detail/id_map.hpp"
#include "tracemodel/detail/radix_sort.hpp"
#include "tracemodel/detail/stream_array.hpp"
#include "tracemodel/formats/args.hpp"
#include "tracemodel/formats/chrome_trace/records.hpp"
#include "tracemodel/formats/json_scan.hpp"
#include "tracemodel/formats/trace_text.hpp"
#include "tracemodel/model/reflect.hpp"
#include "tracemodel/model/table.hpp"
#include "tracemodel/threads.hpp"

#if TRACEMODEL_BIG_ALLOC_MMAP
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

TRACEMODEL_BEGIN_NAMESPACE

static_assert(text_padding >= simdjson::SIMDJSON_PADDING,
              "trace_text pads less than simdjson reads");

struct read_options : thread_options {
  /// Called after each batch with (bytes read, total bytes) of the decompressed text.
  std::function<void(std::size_t, std::size_t)> progress;
  /// Bytes of the events array parsed before they are built (and between progress reports).
  std::size_t batch_bytes = std::size_t{128} << 10;
  /// Read on two threads (unless `threads` is 1; thread_options) when `traceEvents` has at
  /// least `parallel_threshold` bytes. With `fast_paths`, the array is cut into stretches of about
  /// `batch_bytes` at guessed element starts (after a line break: a one-line file reads on one
  /// thread); a second thread parses stretches while this one builds them into the table in
  /// order and parses too when the next is not ready. A stretch is used only where the serial
  /// read reaches exactly its guessed start: the table, the anomalies, the errors and their
  /// offsets are the serial read's. Without `fast_paths`, a second thread parses batches
  /// through simdjson ahead of this one (slower than the serial direct path on two cores).
  std::size_t parallel_threshold = std::size_t{8} << 20;
  /// Read records of the usual shape straight from the text (the direct path: one pass, every
  /// byte checked; a record it cannot read goes to simdjson), and op input lists, integers and
  /// plain strings from the text where simdjson reads the rest; false reads every value through
  /// simdjson (the same table, slower: tests and the fuzz target compare the two).
  bool fast_paths = true;
};

namespace detail {

template <class Schema>
class chrome_reader {
  using table_t = basic_event_table<Schema>;
  using event_t = typename table_t::event_type;
  using value_t = simdjson::ondemand::value;

  // ---- records as read (formats/chrome_trace/records.hpp) --------------------------------------
  using key_value = chrome_trace::key_value;
  using dims_range = chrome_trace::dims_range;
  using string_range = chrome_trace::string_range;
  using fields = chrome_trace::fields;
  using bounds = chrome_trace::bounds;
  using batch = chrome_trace::batch;
  using batch_view = chrome_trace::batch_view;
  using published = chrome_trace::published;
  using dims_view = chrome_trace::dims_view;
  static batch_view view_of(const batch& b) noexcept { return chrome_trace::view_of(b); }

 public:
  /// `buf`: the text (`len` bytes) and at least simdjson's padding after it.
  /// `owner`: the text's owner when the reader may release what it has read (see
  /// trace_text::release_before), else null.
  chrome_reader(table_t& t, std::span<char> buf, std::size_t len, const read_options& opt,
                trace_text* owner = nullptr)
      : t_(t),
        buf_(buf),
        len_(len),
        opt_(opt),
        scan_(std::string_view(buf.data(), len)),
        owner_(owner) {}

  void run() {
    std::size_t p = scan_.skip_space(0);
    if (p >= len_) throw input_error("empty input: no JSON value", 0);
    if (buf_[p] == '[') {
      check_trailing(read_events(p));
    } else if (buf_[p] == '{') {
      read_top_level(p);
    } else {
      throw input_error(
          std::string("not a trace: expected an object or an array, found '") + buf_[p] + "'", p);
    }
    finish();
  }

 private:
  // ---- top level ------------------------------------------------------------------------------
  void check_trailing(std::size_t end) {
    const std::size_t q = scan_.skip_space(end);
    if (q < len_) throw input_error("unexpected data after the end of the JSON value", q);
  }

  void read_top_level(std::size_t p) {
    bool have_events = false;
    std::size_t base_at = 0;
    std::size_t q = scan_.skip_space(p + 1);
    if (q < len_ && buf_[q] == '}') {
      check_trailing(q + 1);
      throw input_error("not a trace: the object has no traceEvents", p);
    }
    while (true) {
      if (q >= len_) throw input_error("unexpected end of input in the top-level object", q);
      if (buf_[q] != '"') throw input_error("expected a key in the top-level object", q);
      const std::size_t key_end = scan_.skip_string(q);
      const std::string key = unescape_key(q, key_end);
      std::size_t c = scan_.skip_space(key_end);
      if (c >= len_ || buf_[c] != ':') throw input_error("expected ':' after a key", c);
      const std::size_t v = scan_.skip_space(c + 1);
      std::size_t v_end = 0;
      if (key == "traceEvents") {
        // Read where it stands (one pass over the text): a base time that comes later, as
        // Kineto writes it, shifts the events afterwards.
        if (v >= len_) throw input_error("unexpected end of input: a value was expected", v);
        if (buf_[v] != '[') throw input_error("traceEvents: expected an array", v);
        if (have_events) throw input_error("traceEvents appears twice", q);
        base_ = t_.info.base_time_ns;
        v_end = read_events(v);
        have_events = true;
      } else {
        v_end = scan_.skip_value(v);
        const std::string_view raw(buf_.data() + v, v_end - v);
        validate_standalone(raw, v);
        if (key == "baseTimeNanoseconds") {
          std::int64_t base = 0;
          if (!parse_int64(raw, base)) {
            std::int64_t ns = 0;  // a fractional or exponent form: accept if integral
            if (!parse_micros(raw, ns) || ns % 1000 != 0)
              throw input_error("baseTimeNanoseconds: expected an integer", v);
            base = ns / 1000;
          }
          t_.info.base_time_ns = base;
          t_.info.has_base_time = true;
          base_at = v;
        } else if (key != "schemaVersion" && key != "displayTimeUnit") {
          t_.info.metadata.emplace_back(t_.strings.intern(key), t_.strings.intern(raw));
        }
      }
      q = scan_.skip_space(v_end);
      if (q < len_ && buf_[q] == ',') {
        q = scan_.skip_space(q + 1);
        continue;
      }
      if (q < len_ && buf_[q] == '}') break;
      throw input_error("expected ',' or '}' in the top-level object", q);
    }
    check_trailing(q + 1);
    if (!have_events) throw input_error("not a trace: the object has no traceEvents", p);
    if (t_.info.base_time_ns != base_) shift_times(t_.info.base_time_ns - base_, base_at);
  }

  /// Adds `d` to every time read so far (the base time came after the events).
  void shift_times(std::int64_t d, std::size_t at) {
    auto add = [d, at](std::int64_t& x) {
      if (__builtin_add_overflow(x, d, &x))
        throw input_error("baseTimeNanoseconds: times out of range with this base", at);
    };
    for (std::size_t i = 0; i < t_.events.size(); ++i) {
      event_t& e = t_.events[i];
      add(e.start_ns);
      event_keys_[i].start = e.start_ns;
      e.visit([&](auto& f) {
        if constexpr (requires { f.end_ns; })
          if (f.end_ns != no_end_ns) add(f.end_ns);
      });
    }
    for (raw_flow& f : flows_) add(f.ts);
    base_ += d;
  }

  /// `base_ + ts` for the record at `at`, or an error when it does not fit.
  static std::int64_t absolute(std::int64_t base, std::int64_t ts, std::size_t at) {
    std::int64_t r = 0;
    if (__builtin_add_overflow(base, ts, &r))
      throw input_error("ts, dur: times out of range with baseTimeNanoseconds", at);
    return r;
  }

  std::string unescape_key(std::size_t q, std::size_t key_end) {
    const std::string_view raw(buf_.data() + q, key_end - q);
    if (raw.find('\\') == std::string_view::npos) return std::string(raw.substr(1, raw.size() - 2));
    validate_standalone(raw, q);
    simdjson::dom::parser p;
    std::string padded(raw);
    simdjson::dom::element e;
    if (p.parse(padded).get(e)) throw input_error("invalid key", q);
    return std::string(std::string_view(e));
  }

  /// Validates a complete JSON value (top-level metadata) with simdjson.
  void validate_standalone(std::string_view raw, std::size_t offset) {
    simdjson::dom::parser p;
    simdjson::dom::element e;
    const simdjson::padded_string padded(raw);
    if (const auto err = p.parse(padded).get(e))
      throw input_error(std::string("invalid JSON value: ") + simdjson::error_message(err), offset);
  }

  // ---- the events array, in batches ---------------------------------------------------------
  //
  // Three jobs, in file order: the structural scanner splits the array into batches of about
  // `batch_bytes`; simdjson parses each batch into a `batch` (fields, args, dims as read; the
  // table is not touched); the events of parsed batches are built into the table. With
  // `read_options::parallel` the parsing runs on a second thread, a few batches ahead, while
  // the calling thread scans and builds. Each batch has its own simdjson parser, whose string
  // buffer the batch's unescaped strings point into. Errors are thrown as a serial read throws
  // them: the first in file order.

  /// Finds the batches of the events array one after the other.
  class splitter {
   public:
    splitter(const chrome_reader& r, std::size_t begin, std::size_t first)
        : r_(r), p_(first), open_(begin) {}
    /// The next batch, false after the last; throws for malformed structure.
    bool next(bounds& out) {
      if (done_) return false;
      std::size_t bytes = 0;
      while (true) {
        const std::size_t e_end = r_.scan_.skip_value(p_, max_event_depth);
        bytes += e_end - p_;
        const std::size_t sep = r_.scan_.skip_space(e_end);
        if (sep >= r_.len_)
          throw input_error("unexpected end of input in traceEvents (truncated?)", sep);
        if (r_.buf_[sep] != ',' && r_.buf_[sep] != ']')
          throw input_error("expected ',' or ']' between trace events", sep);
        const bool last = r_.buf_[sep] == ']';
        if (!last) {
          p_ = r_.scan_.skip_space(sep + 1);
          if (p_ < r_.len_ && r_.buf_[p_] == ']')
            throw input_error("trailing ',' in traceEvents", sep);
        }
        if (last || bytes >= r_.opt_.batch_bytes) {
          out = {open_, sep, last};
          open_ = sep;
          done_ = last;
          return true;
        }
      }
    }

   private:
    const chrome_reader& r_;
    std::size_t p_;     // the next element
    std::size_t open_;  // the separator before it
    bool done_ = false;
  };

  /// Reads the array at `begin` (a '['); returns the position after its ']'.
  std::size_t read_events(std::size_t begin) {
    const std::size_t first = scan_.skip_space(begin + 1);
    if (first >= len_)
      throw input_error("unexpected end of input in traceEvents (truncated?)", first);
    if (buf_[first] == ']') return first + 1;
    events_begin_ = begin;
    const bool parallel = len_ - begin >= opt_.parallel_threshold && thread_budget(opt_) > 1;
    if (opt_.fast_paths) {
      cursor at{begin, first};
      if (!parallel || !read_events_chunked(at)) {
        batches_.resize(1);
        read_serial(at, no_limit, batches_[0], [] { return 0; });
      }
      return at.before + 1;
    }
    splitter split(*this, begin, first);
    bounds bd;
    if (!parallel) {
      batches_.resize(1);
      while (split.next(bd)) {
        parse_batch(bd, batches_[0]);
        build_batch(batches_[0]);
      }
    } else {
      bd = read_events_parallel(split);
    }
    return bd.close + 1;  // (the last batch's)
  }

  /// Stops and joins a helper thread when a read ends, by an exception too: sets `stop` in the
  /// state they share, under its mutex, and wakes the thread.
  template <class State>
  struct stop_and_join {
    State& st;
    worker& t;
    ~stop_and_join() {
      {
        std::lock_guard lock(st.m);
        st.stop = true;
        st.cv.notify_all();
      }
      try {
        t.join();
      } catch (...) {  // the thread keeps what it must report in the shared state
      }
    }
  };

  static constexpr std::size_t pipeline_depth = 3;      // batches parsed ahead, at most
  static constexpr std::size_t max_event_depth = 1023;  // 1024 levels with the array
  static constexpr std::size_t parallel_flows = std::size_t{1} << 16;  // flows sorted aside

  /// Returns the last batch's bounds.
  bounds read_events_parallel(splitter& split) {
    batches_.resize(pipeline_depth);
    struct shared_state {
      std::mutex m;
      std::condition_variable cv;
      std::vector<bounds> found;  // batches the scanner found
      bool scanned = false;       // no more will be found
      std::size_t parsed = 0, built = 0;
      bool parser_done = false, stop = false;
      std::exception_ptr parse_error;
    } st;
    worker parser(opt_, [&] {
      for (std::size_t k = 0;; ++k) {
        bounds bd;
        {
          std::unique_lock lock(st.m);
          st.cv.wait(lock, [&] {
            return st.stop || (k < st.found.size() && k < st.built + pipeline_depth) ||
                   (st.scanned && k >= st.found.size());
          });
          if (st.stop || k >= st.found.size()) break;
          bd = st.found[k];
        }
        try {
          parse_batch(bd, batches_[k % pipeline_depth]);
        } catch (...) {
          std::lock_guard lock(st.m);
          st.parse_error = std::current_exception();
          break;
        }
        std::lock_guard lock(st.m);
        st.parsed = k + 1;
        st.cv.notify_all();
      }
      std::lock_guard lock(st.m);
      st.parser_done = true;
      st.cv.notify_all();
    });
    const stop_and_join<shared_state> guard{st, parser};
    std::exception_ptr scan_error;  // thrown once the batches before it are built
    std::size_t found = 0;
    bool scanning = true;
    bounds last;
    for (std::size_t k = 0;; ++k) {
      // Keep the parser supplied: the batches up to one more than it may parse ahead.
      while (scanning && found < k + pipeline_depth + 1) {
        bounds bd;
        bool more = false;
        try {
          more = split.next(bd);
        } catch (...) {
          scan_error = std::current_exception();
        }
        std::lock_guard lock(st.m);
        if (more) {
          st.found.push_back(bd);
          ++found;
          last = bd;
        } else {
          scanning = false;
          st.scanned = true;
        }
        st.cv.notify_all();
      }
      {
        std::unique_lock lock(st.m);
        st.cv.wait(lock, [&] { return k < st.parsed || st.parser_done; });
        if (k >= st.parsed) {
          if (st.parse_error) std::rethrow_exception(st.parse_error);
          break;  // every batch found was built
        }
      }
      build_batch(batches_[k % pipeline_depth]);
      std::lock_guard lock(st.m);
      st.built = k + 1;
      st.cv.notify_all();
    }
    if (scan_error) std::rethrow_exception(scan_error);
    return last;
  }

  /// Builds a parsed batch's events into the table.
  void build_batch(batch& b) { build_batch(view_of(b), b.where); }
  void build_batch(const batch_view& b, const bounds& where) {
    const bool first = !built_any_;
    built_any_ = true;
    for (const fields& f : b.events) build_event(f, b);
    // Nothing refers to the text before this batch any more (later batches, which a parser
    // thread may be reading, lie after it).
    if (owner_ != nullptr) owner_->release_before(where.open);
    if (first && !where.last)
      reserve_like_first_batch(where.close - events_begin_, len_ - events_begin_);
    if (opt_.progress) opt_.progress(where.close, len_);
  }

  /// Reserves the table's arrays for `total` bytes of events (the rest of the text: the array
  /// is most of a trace), extrapolated from what the first `done` bytes produced (with a
  /// margin): growing a vector of hundreds of megabytes copies it and touches twice the memory.
  /// Reserved pages that stay unused are never touched.
  void reserve_like_first_batch(std::size_t done, std::size_t total) {
    const double scale = 1.25 * static_cast<double>(total) / static_cast<double>(done);
    auto grow = [scale](auto& v) {
      v.reserve(static_cast<std::size_t>(static_cast<double>(v.size()) * scale) + 64);
    };
    grow(t_.events);
    grow(t_.inputs);
    grow(t_.ints);
    grow(t_.attrs);
    grow(t_.name_lists);
    grow(flows_);
    grow(event_track_);
    grow(event_keys_);
  }

  /// Parses the elements between the separators at `open` and `close` in place into `b`: the
  /// two separators become '[' and ']' for the parse and are restored afterwards.
  void parse_batch(const bounds& where, batch& b) {
    b.clear();
    b.where = where;
    const std::size_t open = where.open, close = where.close;
    const char saved_open = buf_[open], saved_close = buf_[close];
    buf_[open] = '[';
    buf_[close] = ']';
    struct restore {
      std::span<char> b;
      std::size_t o, c;
      char so, sc;
      ~restore() {
        b[o] = so;
        b[c] = sc;
      }
    } guard{buf_, open, close, saved_open, saved_close};
    const simdjson::padded_string_view view(buf_.data() + open, close - open + 1,
                                            buf_.size() - open);
    simdjson::ondemand::document doc;
    if (const auto err = b.parser.iterate(view).get(doc)) fail(err, open);
    doc_ = &doc;
    struct forget {
      simdjson::ondemand::document*& d;
      ~forget() { d = nullptr; }
    } forget_doc{doc_};
    simdjson::ondemand::array arr;
    if (const auto err = doc.get_array().get(arr)) fail(err, open);
    for (auto item : arr) {
      value_t v;
      if (const auto err = item.get(v)) fail(err, location(doc, open));
      const std::size_t at = offset_of(v);
      simdjson::ondemand::object obj;
      if (const auto err = v.get_object().get(obj)) {
        if (err == simdjson::INCORRECT_TYPE)
          throw input_error("trace event: expected an object", at);
        fail(err, at);
      }
      read_event(obj, at, b);
    }
  }

  /// Throws for a simdjson error, at the parser's position when it knows one.
  [[noreturn]] void fail(simdjson::error_code err, std::size_t offset) const {
    if (doc_ != nullptr) offset = std::max(offset, location(*doc_, offset));
    throw input_error(std::string("invalid JSON: ") + simdjson::error_message(err), offset);
  }
  /// A number simdjson refused: out of range when it is well formed (1e999), else invalid.
  [[noreturn]] void number_error(value_t& v, std::string_view what, std::size_t at) const {
    const std::string_view tok = token_of(v);
    std::int64_t ignored = 0;
    const bool well_formed =
        !tok.empty() && (tok[0] == '-' || (tok[0] >= '0' && tok[0] <= '9')) &&
        (parse_micros(tok, ignored) || tok.find_first_of("eE") != std::string_view::npos);
    throw input_error(
        std::string(what) + (well_formed ? ": number out of range" : ": invalid number"), at);
  }
  std::size_t location(simdjson::ondemand::document& doc, std::size_t fallback) const {
    const char* p = nullptr;
    if (doc.current_location().get(p) == simdjson::SUCCESS && p >= buf_.data() &&
        p < buf_.data() + len_)
      return static_cast<std::size_t>(p - buf_.data());
    return fallback;
  }
  std::size_t offset_of(value_t& v) const {
    const std::string_view tok = v.raw_json_token();
    if (tok.data() >= buf_.data() && tok.data() < buf_.data() + len_)
      return static_cast<std::size_t>(tok.data() - buf_.data());
    return 0;
  }

  // ---- one event -------------------------------------------------------------------------------
  /// A field's key: its text in the buffer when it has no escapes (no copy), else unescaped.
  std::string_view key_of(simdjson::ondemand::field& fld, std::size_t at) {
    const char* k = fld.key().raw();
    const char* end = buf_.data() + len_;
    const char* q = k;
    while (q < end && *q != '"' && *q != '\\') ++q;
    if (q < end && *q == '"') return {k, static_cast<std::size_t>(q - k)};
    std::string_view key;
    if (const auto err = fld.unescaped_key().get(key)) fail(err, at);
    return key;
  }

  /// is_null() reports a malformed literal ("nul", "nulx") as an error
  /// result; its implicit bool conversion would throw, so read it by value.
  static bool is_null_literal(value_t& v) {
    bool yes = false;
    return !v.is_null().get(yes) && yes;
  }

  template <class T>
  T get_or_fail(simdjson::simdjson_result<T> r, std::string_view what, std::size_t at) {
    T v{};
    if (const auto err = std::move(r).get(v)) {
      if (err == simdjson::INCORRECT_TYPE)
        throw input_error(std::string(what) + ": wrong type", at);
      fail(err, at);
    }
    return v;
  }

  /// A pid or tid: a number, or a string (made a string key when the event is built).
  key_value read_key(value_t v, std::string_view what) {
    key_value k;
    std::int64_t n = 0;
    if ((opt_.fast_paths && plain_integer(token_of(v), n)) ||
        v.get_int64().get(n) == simdjson::SUCCESS) {  // the usual case
      k.number = static_cast<std::uint64_t>(n);
      return k;
    }
    const std::size_t at = offset_of(v);
    simdjson::ondemand::json_type type;
    if (const auto err = v.type().get(type)) fail(err, at);
    if (type == simdjson::ondemand::json_type::string) {
      k.text = get_or_fail(v.get_string(), what, at);
      k.is_string = true;
      return k;
    }
    if (type != simdjson::ondemand::json_type::number)
      throw input_error(std::string(what) + ": expected a number or a string", at);
    // Not an int64 (tried above): an unsigned one above 2^63 still fits.
    if (v.get_uint64().get(k.number) == simdjson::SUCCESS) return k;
    throw input_error(std::string(what) + ": not an integer in range", at);
  }
  /// A pid or tid: read_key, and numbers that would read back as string keys (bit 62 set, bit
  /// 63 clear: 2^62 to 2^63 - 1, never an operating system's id) are an error.
  key_value read_track_key(value_t v, std::string_view what) {
    const key_value k = read_key(v, what);
    if (!k.is_string && table_t::is_string_key(k.number))
      throw input_error(std::string(what) + ": numbers from 2^62 to 2^63 - 1 are not supported",
                        offset_of(v));
    return k;
  }
  std::uint64_t key(const key_value& k) { return k.is_string ? t_.string_key(k.text) : k.number; }

  std::int64_t read_micros(value_t v, std::string_view what) {
    // The usual case first: a well-formed number that fits, parsed from its text once.
    const std::string_view text = token_of(v);
    std::int64_t ns = 0;
    if (is_json_number_start(text) && parse_micros(text, ns)) return ns;
    // Otherwise find out what is wrong, as simdjson sees it.
    const std::size_t at = offset_of(v);
    simdjson::ondemand::json_type type;
    if (const auto err = v.type().get(type)) fail(err, at);
    if (type != simdjson::ondemand::json_type::number)
      throw input_error(std::string(what) + ": expected a number", at);
    double check = 0;  // validates the number (and rejects out-of-range values)
    if (v.get_double().get(check)) number_error(v, what, at);
    if (!parse_micros(text, ns)) throw input_error(std::string(what) + ": number out of range", at);
    return ns;
  }
  /// A number's text starts as JSON wants it: an optional '-', then a digit, and no digit after
  /// a leading zero (parse_micros checks the rest of the grammar).
  static bool is_json_number_start(std::string_view t) noexcept {
    std::size_t i = !t.empty() && t[0] == '-' ? 1 : 0;
    if (i >= t.size() || t[i] < '0' || t[i] > '9') return false;
    return !(t[i] == '0' && i + 1 < t.size() && t[i + 1] >= '0' && t[i + 1] <= '9');
  }

  /// The keys of a trace event that the model reads.
  enum class event_key : std::uint8_t { other, ph, name, cat, pid, tid, ts, dur, s, bp, id, args };
  static event_key event_key_of(std::string_view k) noexcept {
    switch (k.size()) {
      case 1:
        return k[0] == 's' ? event_key::s : event_key::other;
      case 2:
        if (k == "ph") return event_key::ph;
        if (k == "ts") return event_key::ts;
        if (k == "id") return event_key::id;
        if (k == "bp") return event_key::bp;
        return event_key::other;
      case 3:
        if (k == "pid") return event_key::pid;
        if (k == "tid") return event_key::tid;
        if (k == "dur") return event_key::dur;
        if (k == "cat") return event_key::cat;
        return event_key::other;
      case 4:
        if (k == "name") return event_key::name;
        if (k == "args") return event_key::args;
        return event_key::other;
      default:
        return event_key::other;
    }
  }
  /// The record key whose opening quote is at `p` and the position after the colon that follows
  /// it, read as one word when it is one of the keys `event_key` names and the colon follows the
  /// closing quote at once (as every writer puts them); {other, 0} when it is not. Both quotes
  /// are in the patterns, so a match is the whole key. Reads 8 bytes from `p`, within the
  /// padding; a match that runs past the text's end (a text cut inside a key, padding that
  /// happens to complete it) leaves a position past the end, which the caller rejects.
  std::pair<event_key, std::size_t> known_event_key(std::size_t p) const noexcept {
    static constexpr auto word = [](std::string_view t) {
      std::uint64_t w = 0;
      for (std::size_t i = 0; i < t.size(); ++i)
        w |= std::uint64_t{static_cast<unsigned char>(t[i])} << (8 * i);
      return w;
    };
    struct pattern {
      std::uint64_t w, mask;
      std::size_t size;
      event_key k;
    };
    static constexpr auto make = [](std::string_view t, event_key k) {
      return pattern{word(t),
                     t.size() == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * t.size())) - 1,
                     t.size(), k};
    };
    // In the order the writers put them (ph, cat, name, pid, tid, ts, dur, args).
    static constexpr pattern patterns[] = {
        make("\"ph\":", event_key::ph),     make("\"cat\":", event_key::cat),
        make("\"name\":", event_key::name), make("\"pid\":", event_key::pid),
        make("\"tid\":", event_key::tid),   make("\"ts\":", event_key::ts),
        make("\"dur\":", event_key::dur),   make("\"args\":", event_key::args),
        make("\"id\":", event_key::id),     make("\"s\":", event_key::s),
        make("\"bp\":", event_key::bp)};
    const std::uint64_t w = load_u64(buf_.data() + p);
    for (const pattern& c : patterns)
      if ((w & c.mask) == c.w) return {c.k, p + c.size};
    return {event_key::other, 0};
  }
  /// A value's text without the whitespace after it (simdjson's stage 1 has validated the
  /// structure and the UTF-8 around it; what the token is, the caller checks).
  static std::string_view token_of(value_t& v) noexcept {
    std::string_view t = v.raw_json_token();
    while (!t.empty() && is_json_space(t.back())) t.remove_suffix(1);
    return t;
  }
  /// An integer token in int64 range, as simdjson would read it; false for anything else
  /// (fractions, exponents, big unsigned values, malformed text, and "-0", whose type
  /// simdjson decides): those go through simdjson.
  static bool plain_integer(std::string_view t, std::int64_t& out) noexcept {
    if (t.size() > 1 && t[0] == '-' && t[1] == '0') return false;
    return is_json_number_start(t) && parse_int64(t, out);
  }
  /// A string token without escapes, straight from the text (no copy into the parser's
  /// string buffer); false when it has escapes or is not a complete string.
  static bool plain_string(std::string_view t, std::string_view& out) noexcept {
    if (t.size() < 2 || t.front() != '"' || t.back() != '"') return false;
    const std::string_view inner = t.substr(1, t.size() - 2);
    // A quote inside would have ended the token unless escaped: a backslash is all to look for.
    if (std::memchr(inner.data(), '\\', inner.size()) != nullptr) return false;
    out = inner;
    return true;
  }

  /// A string value; the offset is looked up only for the error.
  std::string_view string_or_fail(value_t& v, std::string_view what) {
    std::string_view out;
    if (opt_.fast_paths && plain_string(token_of(v), out)) return out;
    if (const auto err = v.get_string().get(out)) {
      if (err == simdjson::INCORRECT_TYPE)
        throw input_error(std::string(what) + ": wrong type", offset_of(v));
      fail(err, offset_of(v));
    }
    return out;
  }

  void read_event(simdjson::ondemand::object& obj, std::size_t at, batch& b) {
    fields& f = b.events.emplace_back();
    f.at = at;
    f.args_first = static_cast<std::uint32_t>(b.args.size());
    for (auto field_result : obj) {
      simdjson::ondemand::field field;
      if (const auto err = std::move(field_result).get(field)) fail(err, at);
      value_t& v = field.value();
      switch (event_key_of(key_of(field, at))) {
        case event_key::ph:
          f.ph = string_or_fail(v, "ph");
          f.has_ph = true;
          break;
        case event_key::name:
          f.name = string_or_fail(v, "name");
          break;
        case event_key::cat:
          f.cat = string_or_fail(v, "cat");
          break;
        case event_key::pid:
          f.pid = read_track_key(v, "pid");
          break;
        case event_key::tid:
          f.tid = read_track_key(v, "tid");
          break;
        case event_key::ts:
          f.ts = read_micros(v, "ts");
          f.has_ts = true;
          break;
        case event_key::dur:
          f.dur = read_micros(v, "dur");
          f.has_dur = true;
          break;
        case event_key::s:
          f.scope = string_or_fail(v, "s");
          break;
        case event_key::bp:
          f.bp = string_or_fail(v, "bp");
          break;
        case event_key::id:
          f.id = read_id(v);
          f.has_id = true;
          break;
        case event_key::args:
          read_args(v, f, b);
          break;
        case event_key::other:
          skip_value(v);  // tts, cname, ...: not part of the model, validated and dropped
          break;
      }
    }
    f.args_count = static_cast<std::uint32_t>(b.args.size()) - f.args_first;
    if (const char* problem = incomplete(f)) throw input_error(problem, at);
    // A metadata record's args are cut on the parsing side: the builder never scans text,
    // whose batch separators a parser thread may be rewriting meanwhile.
    if (f.ph[0] == 'M' && f.has_args)
      f.raw_args = {buf_.data() + f.args_at, scan_.skip_value(f.args_at) - f.args_at};
  }

  /// What a record as read lacks, or null when it has what its phase needs.
  static const char* incomplete(const fields& f) noexcept {
    if (!f.has_ph) return "trace event without \"ph\"";
    if (f.ph.size() != 1) return "trace event with an unknown \"ph\"";
    switch (f.ph[0]) {
      case 'X':
      case 'i':
      case 'I':
      case 'B':
      case 'E':
        if (!f.has_ts) return "trace event without \"ts\"";
        break;
      case 's':
      case 'f':
      case 't':
        if (!f.has_ts || !f.has_id) return "flow event without \"ts\" or \"id\"";
        break;
      default:
        break;
    }
    return nullptr;
  }

  /// Builds one record into the table (the consumer's side of `read_event`).
  void build_event(const fields& f, const batch_view& b) {
    const std::uint64_t pid = key(f.pid), tid = key(f.tid);
    switch (const char ph = f.ph[0]) {
      case 'X':
      case 'i':
      case 'I':
      case 'B':
        add_event(f, b, ph, pid, tid);
        break;
      case 'E':
        end_event(f, pid, tid);
        break;
      case 's':
      case 'f':
      case 't':
        if (flows_.size() == flows_.capacity()) reserve_flows(f.at);
        flows_.push_back({f.id, absolute(base_, f.ts, f.at), f.at, t_.strings.intern(f.cat),
                          tracks_.id(pid, tid), ph, f.bp == "e"});
        break;
      case 'M':
        t_.info.records.push_back({t_.strings.intern(f.name), static_cast<process_key>(pid), tid,
                                   t_.strings.intern(f.raw_args)});
        break;
      default:
        t_.anomalies.add(anomaly::unsupported_record);
        break;
    }
  }

  /// Room for the flow records still to come. Writers put them together, often after all the
  /// events (so the first batch says nothing about their number): rather than doubling (a
  /// copy of every record so far each time), room for as many as the rest of the text can
  /// hold at 64 bytes each, in pages that stay untouched until used.
  void reserve_flows(std::size_t at) {
    const std::size_t rest = len_ > at ? len_ - at : 0;
    flows_.reserve(flows_.size() + std::max(flows_.size(), rest / 64) + 64);
  }

  std::uint64_t read_id(value_t v) {
    const std::size_t at = offset_of(v);
    simdjson::ondemand::json_type type;
    if (const auto err = v.type().get(type)) fail(err, at);
    if (type == simdjson::ondemand::json_type::string) {
      const std::string_view s = get_or_fail(v.get_string(), "id", at);
      std::uint64_t u = 0;
      if (parse_uint64(s, u)) return u;
      // Perfetto reads string ids as hex.
      const std::string_view h = s.starts_with("0x") ? s.substr(2) : s;
      u = 0;
      if (h.empty() || h.size() > 16) throw input_error("id: not a number", at);
      for (char c : h) {
        const int d = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
        if (d < 0) throw input_error("id: not a number", at);
        u = u * 16 + static_cast<std::uint64_t>(d);
      }
      return u;
    }
    return read_key(v, "id").number;  // strings were handled above
  }

  void skip_value(value_t v, int depth = 0) {
    const std::size_t at = offset_of(v);
    if (depth > 1024) throw input_error("nesting deeper than 1024 levels", at);
    simdjson::ondemand::json_type type;
    if (const auto err = v.type().get(type)) fail(err, at);
    switch (type) {
      case simdjson::ondemand::json_type::object: {
        simdjson::ondemand::object o = get_or_fail(v.get_object(), "object", at);
        for (auto fld : o) {
          value_t x;
          if (const auto err = fld.value().get(x)) fail(err, at);
          skip_value(x, depth + 1);
        }
        break;
      }
      case simdjson::ondemand::json_type::array: {
        simdjson::ondemand::array a = get_or_fail(v.get_array(), "array", at);
        for (auto el : a) {
          value_t x;
          if (const auto err = el.get(x)) fail(err, at);
          skip_value(x, depth + 1);
        }
        break;
      }
      case simdjson::ondemand::json_type::number: {
        double d = 0;
        if (v.get_double().get(d)) {
          std::uint64_t u = 0;  // big unsigned integers are fine
          if (v.get_uint64().get(u) == simdjson::SUCCESS) break;
          number_error(v, "value", at);
        }
        break;
      }
      case simdjson::ondemand::json_type::string:
        (void)get_or_fail(v.get_string(), "string", at);
        break;
      case simdjson::ondemand::json_type::boolean:
        (void)get_or_fail(v.get_bool(), "boolean", at);
        break;
      case simdjson::ondemand::json_type::null:
        if (!is_null_literal(v)) throw input_error("invalid literal", at);
        break;
    }
  }

  /// The op input list an arg key names (`Input Dims`, `Input Strides`; `Input type`,
  /// `Concrete Inputs`), or null.
  static dims_range* dims_list(std::string_view key, fields& f) noexcept {
    return key == "Input Dims" ? &f.dims : key == "Input Strides" ? &f.strides : nullptr;
  }
  static string_range* string_list(std::string_view key, fields& f) noexcept {
    return key == "Input type" ? &f.types : key == "Concrete Inputs" ? &f.concrete : nullptr;
  }
  /// Points `r` at what `read` appends to `items` (a repeated key: the last wins); false when
  /// `read` could not read the list.
  template <class Range, class Items, class Read>
  static bool fill_list(Range& r, const Items& items, Read read) {
    r.first = static_cast<std::uint32_t>(items.size());
    if (!read()) return false;
    r.count = static_cast<std::uint32_t>(items.size()) - r.first;
    if constexpr (requires { r.present; }) r.present = true;
    return true;
  }

  void read_args(value_t v, fields& f, batch& b) {
    const std::size_t at = offset_of(v);
    simdjson::ondemand::json_type type;
    if (const auto err = v.type().get(type)) fail(err, at);
    if (type != simdjson::ondemand::json_type::object)
      throw input_error("args: expected an object", at);
    f.args_at = at;
    f.has_args = true;
    simdjson::ondemand::object o = get_or_fail(v.get_object(), "args", at);
    for (auto fld_result : o) {
      simdjson::ondemand::field fld;
      if (const auto err = std::move(fld_result).get(fld)) fail(err, at);
      raw_arg a;
      a.key = key_of(fld, at);
      value_t& x = fld.value();
      a.offset = offset_of(x);
      if (dims_range* r = dims_list(a.key, f)) {
        fill_list(*r, b.dims, [&] {
          if (!opt_.fast_paths || read_dims_text(a.offset, b) == 0) read_dims(x, b, 0);
          return true;
        });
        continue;
      }
      if (string_range* r = string_list(a.key, f)) {
        fill_list(*r, b.strings, [&] {
          if (!opt_.fast_paths || read_strings_text(a.offset, b.strings) == 0)
            read_strings(x, b.strings, a.offset);
          return true;
        });
        continue;
      }
      if (opt_.fast_paths) {  // integers and plain strings, the usual args, from the text
        const std::string_view tok = token_of(x);
        if (plain_integer(tok, a.i)) {
          a.kind = raw_arg::type::integer;
          b.args.push_back(a);
          continue;
        }
        if (plain_string(tok, a.text)) {
          a.kind = raw_arg::type::string;
          b.args.push_back(a);
          continue;
        }
      }
      simdjson::ondemand::json_type xt;
      if (const auto err = x.type().get(xt)) fail(err, a.offset);
      switch (xt) {
        case simdjson::ondemand::json_type::number: {
          simdjson::ondemand::number_type nt;
          if (x.get_number_type().get(nt)) number_error(x, "args." + std::string(a.key), a.offset);
          if (nt == simdjson::ondemand::number_type::signed_integer &&
              x.get_int64().get(a.i) == simdjson::SUCCESS) {
            a.kind = raw_arg::type::integer;
          } else if (nt == simdjson::ondemand::number_type::unsigned_integer &&
                     x.get_uint64().get(a.u) == simdjson::SUCCESS) {
            a.kind = raw_arg::type::unsigned_integer;
          } else {  // fractions, exponents, and integers beyond 64 bits: the nearest double
            a.kind = raw_arg::type::floating;
            double d = 0;
            if (x.get_double().get(d)) number_error(x, "args." + std::string(a.key), a.offset);
            a.f = d;
          }
          break;
        }
        case simdjson::ondemand::json_type::string:
          a.kind = raw_arg::type::string;
          a.text = get_or_fail(x.get_string(), a.key, a.offset);
          break;
        case simdjson::ondemand::json_type::boolean:
          a.kind = raw_arg::type::boolean;
          a.b = get_or_fail(x.get_bool(), a.key, a.offset);
          break;
        case simdjson::ondemand::json_type::null:
          if (!is_null_literal(x)) throw input_error("invalid literal", a.offset);
          a.kind = raw_arg::type::null;
          break;
        default: {  // arrays and objects: validated, kept as raw JSON
          const std::size_t e = scan_.skip_value(a.offset);
          a.kind = raw_arg::type::json;
          a.text = std::string_view(buf_.data() + a.offset, e - a.offset);
          skip_value(x);
          break;
        }
      }
      b.args.push_back(a);
    }
  }

  void read_dims(value_t v, batch& out, int depth) {
    const std::size_t at = offset_of(v);
    if (depth > 64) throw input_error("Input Dims: nested too deeply", at);
    simdjson::ondemand::array a;
    if (v.get_array().get(a)) throw input_error("Input Dims/Strides: expected an array", at);
    if (depth == 0) {
      for (auto el : a) {
        value_t x;
        if (const auto err = el.get(x)) fail(err, at);
        read_dims(x, out, 1);
      }
      return;
    }
    // An entry: an array of numbers (a tensor's dims) or of arrays (a list).
    const std::size_t self = out.dims.size();
    out.dims.push_back({false, 0, static_cast<std::uint32_t>(out.ints.size())});
    for (auto el : a) {
      value_t x;
      if (const auto err = el.get(x)) fail(err, at);
      std::int64_t n = 0;
      if (!out.dims[self].list && x.get_int64().get(n) == simdjson::SUCCESS) {  // the usual case
        out.ints.push_back(n);
        ++out.dims[self].count;
        continue;
      }
      simdjson::ondemand::json_type type;
      if (const auto err = x.type().get(type)) fail(err, at);
      if (type == simdjson::ondemand::json_type::array) {
        if (!out.dims[self].list && out.dims[self].count > 0)
          throw input_error("Input Dims: mixed numbers and lists", offset_of(x));
        out.dims[self].list = true;
        ++out.dims[self].count;
        read_dims(x, out, depth + 1);
      } else if (type == simdjson::ondemand::json_type::number) {
        if (out.dims[self].list)
          throw input_error("Input Dims: mixed numbers and lists", offset_of(x));
        out.ints.push_back(get_or_fail(x.get_int64(), "Input Dims", offset_of(x)));
        ++out.dims[self].count;
      } else {
        throw input_error("Input Dims/Strides: expected numbers or arrays", offset_of(x));
      }
    }
  }

  // Fast paths for the op input lists, which are most of a Kineto trace's values: read from the
  // text without a simdjson value per element (simdjson stage 1 has validated the batch's
  // strings and UTF-8). Anything unusual returns false with nothing added, and simdjson reads
  // the value instead (and names the error, if there is one).

  /// `Input Dims` / `Input Strides` when they are arrays of entries that hold integers or
  /// entries, 64 levels at most: the position after the array, or 0 with nothing added.
  std::size_t read_dims_text(std::size_t p, batch& out) const {
    const char* s = buf_.data();
    const std::size_t dims0 = out.dims.size(), ints0 = out.ints.size();
    auto bail = [&] {
      out.dims.resize(dims0);
      out.ints.resize(ints0);
      return std::size_t{0};
    };
    if (p >= len_ || s[p] != '[') return 0;
    ++p;
    std::uint32_t open[66];  // the entry open at each depth (depth 1: the outer array)
    int depth = 1;
    bool expect_value = true, allow_close = true;
    while (true) {
      while (p < len_ && is_json_space(s[p])) ++p;
      if (p >= len_) return bail();
      const char c = s[p];
      if (c == ']') {
        if (!allow_close) return bail();
        ++p;
        if (--depth == 0) return p;
        expect_value = false;
        continue;
      }
      if (!expect_value) {
        if (c != ',') return bail();
        ++p;
        expect_value = true;
        allow_close = false;
        continue;
      }
      if (c == '[') {  // an entry
        if (depth >= 65) return bail();
        if (depth >= 2) {
          dims_entry& parent = out.dims[open[depth]];
          if (!parent.list && parent.count > 0) return bail();
          parent.list = true;
          ++parent.count;
        }
        open[++depth] = static_cast<std::uint32_t>(out.dims.size());
        out.dims.push_back({false, 0, static_cast<std::uint32_t>(out.ints.size())});
        ++p;
        allow_close = true;
        continue;
      }
      if (depth < 2 || out.dims[open[depth]].list) return bail();
      // An integer: -?(0|[1-9][0-9]*), within int64, not followed by a fraction or exponent.
      std::size_t q = p;
      const bool neg = s[q] == '-';
      if (neg) ++q;
      if (q >= len_ || s[q] < '0' || s[q] > '9') return bail();
      if (s[q] == '0' && q + 1 < len_ && s[q + 1] >= '0' && s[q + 1] <= '9') return bail();
      std::uint64_t v = 0;
      int digits = 0;
      for (; q < len_ && s[q] >= '0' && s[q] <= '9'; ++q, ++digits)
        v = v * 10 + static_cast<std::uint64_t>(s[q] - '0');
      if (digits > 18 || (q < len_ && (s[q] == '.' || s[q] == 'e' || s[q] == 'E'))) return bail();
      out.ints.push_back(neg ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v));
      ++out.dims[open[depth]].count;
      p = q;
      expect_value = false;
      allow_close = true;
    }
  }

  /// `Input type` / `Concrete Inputs` when they are arrays of plain strings (direct_string):
  /// the position after the array, or 0 with nothing added.
  std::size_t read_strings_text(std::size_t p,
                                detail::scratch_vector<std::string_view>& out) const {
    const std::size_t n0 = out.size();
    auto bail = [&] {
      out.resize(n0);
      return std::size_t{0};
    };
    if (p >= len_ || buf_[p] != '[') return 0;
    p = scan_.skip_space(p + 1);
    if (p < len_ && buf_[p] == ']') return p + 1;
    while (true) {
      if (p >= len_ || buf_[p] != '"') return bail();
      p = direct_string(p, out.emplace_back());
      if (p == 0) return bail();
      p = scan_.skip_space(p);
      if (p < len_ && buf_[p] == ']') return p + 1;
      if (p >= len_ || buf_[p] != ',') return bail();
      p = scan_.skip_space(p + 1);
    }
  }

  // ---- the direct path ------------------------------------------------------------------------
  //
  // Most records of a trace have one shape: an object of plain keys whose values are plain
  // strings, integers, decimal numbers and an `args` object of the same, op input lists and
  // small arrays. The direct path reads such a record straight from the text in one pass, every
  // byte checked as JSON wants it (strings without escapes or control characters, UTF-8 checked
  // where a byte is not ASCII, numbers by the grammar, literals, nesting). Anything else (an
  // escape, a string id, a big integer, an error of any kind) makes it give up on the record
  // with nothing kept, and simdjson reads that record and the batch after it as before: the
  // direct path is only ever a faster way to the same table, and errors are always named by
  // the simdjson path.

  /// A string at `p` (a quote) without escapes or control characters, in valid UTF-8: its
  /// contents and the position after it, or 0.
  std::size_t direct_string(std::size_t p, std::string_view& out) const noexcept {
    const char* s = buf_.data();
    std::size_t q = p + 1;
    bool high = false;
    while (true) {
      q = find_string_special(s, q, len_);
      if (q >= len_) return 0;
      const auto c = static_cast<unsigned char>(s[q]);
      if (c == '"') break;
      if (c < 0x80) return 0;  // a backslash or a control character
      high = true;
      ++q;
    }
    out = {s + p + 1, q - p - 1};
    if (high && !simdjson::validate_utf8(out.data(), out.size())) return 0;
    return q + 1;
  }

  static constexpr bool is_number_char(char c) noexcept {
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
  }
  /// The number-like token at `p` (empty when there is none).
  std::string_view number_token(std::size_t p) const noexcept {
    std::size_t q = p;
    while (q < len_ && is_number_char(buf_[q])) ++q;
    return {buf_.data() + p, q - p};
  }
  /// A JSON number with a fraction or an exponent: what simdjson reads as a double.
  static bool is_json_float(std::string_view t) noexcept {
    const std::size_t n = t.size();
    std::size_t i = n > 0 && t[0] == '-' ? 1 : 0;
    auto digits = [&] {
      const std::size_t from = i;
      while (i < n && t[i] >= '0' && t[i] <= '9') ++i;
      return i > from;
    };
    if (i < n && t[i] == '0') {
      ++i;
    } else if (i >= n || t[i] < '1' || t[i] > '9' || !digits()) {
      return false;
    }
    bool fraction_or_exponent = false;
    if (i < n && t[i] == '.') {
      ++i;
      if (!digits()) return false;
      fraction_or_exponent = true;
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
      ++i;
      if (i < n && (t[i] == '+' || t[i] == '-')) ++i;
      if (!digits()) return false;
      fraction_or_exponent = true;
    }
    return i == n && fraction_or_exponent;
  }
  /// A decimal number as the nearest double (as simdjson reads it); false when it is not one,
  /// or is out of range or below the normal range (simdjson decides those).
  static bool read_double(std::string_view t, double& d) noexcept {
    if (!is_json_float(t)) return false;
    const auto r = std::from_chars(t.data(), t.data() + t.size(), d);
    return r.ec == std::errc() && r.ptr == t.data() + t.size() && std::isfinite(d) &&
           (d == 0 || std::fabs(d) >= std::numeric_limits<double>::min());
  }
  /// `true`, `false` or `null` at `p`: the position after it, or 0.
  std::size_t direct_literal(std::size_t p, raw_arg& a) const noexcept {
    const std::string_view rest(buf_.data() + p, len_ - p);
    if (rest.starts_with("true")) {
      a.kind = raw_arg::type::boolean;
      a.b = true;
      return p + 4;
    }
    if (rest.starts_with("false")) {
      a.kind = raw_arg::type::boolean;
      a.b = false;
      return p + 5;
    }
    if (rest.starts_with("null")) {
      a.kind = raw_arg::type::null;
      return p + 4;
    }
    return 0;
  }

  /// Checks the value at `p` (any JSON, 63 levels deep at most): the position after it, or 0.
  std::size_t direct_skip(std::size_t p) const noexcept {
    const char* s = buf_.data();
    std::uint64_t objects = 0;  // bit k: the container at depth k + 1 is an object
    int depth = 0;
    auto key = [&](std::size_t q) -> std::size_t {  // a key and its ':', at q
      std::string_view k;
      if (q >= len_ || s[q] != '"' || (q = direct_string(q, k)) == 0) return 0;
      q = scan_.skip_space(q);
      return q < len_ && s[q] == ':' ? scan_.skip_space(q + 1) : 0;
    };
    while (true) {
      if (p >= len_) return 0;
      const char c = s[p];
      bool closed = true;  // a whole value was read
      if (c == '{' || c == '[') {
        if (depth == 63) return 0;
        const bool object = c == '{';
        objects = (objects & ~(std::uint64_t{1} << depth)) |
                  (static_cast<std::uint64_t>(object) << depth);
        ++depth;
        p = scan_.skip_space(p + 1);
        if (p < len_ && s[p] == (object ? '}' : ']')) {
          --depth;
          ++p;
        } else {
          if (object && (p = key(p)) == 0) return 0;
          closed = false;
        }
      } else if (c == '"') {
        std::string_view text;
        if ((p = direct_string(p, text)) == 0) return 0;
      } else if (c == '-' || (c >= '0' && c <= '9')) {
        const std::string_view t = number_token(p);
        std::int64_t i = 0;
        double d = 0;
        if (!(is_json_number_start(t) && parse_int64(t, i)) && !read_double(t, d)) return 0;
        p += t.size();
      } else {
        raw_arg a;
        if ((p = direct_literal(p, a)) == 0) return 0;
      }
      if (!closed) continue;
      // After a value: close containers, or go on to the next element.
      while (true) {
        if (depth == 0) return p;
        p = scan_.skip_space(p);
        if (p >= len_) return 0;
        const bool object = (objects >> (depth - 1)) & 1;
        if (s[p] == (object ? '}' : ']')) {
          ++p;
          --depth;
          continue;
        }
        if (s[p] != ',') return 0;
        p = scan_.skip_space(p + 1);
        if (object && (p = key(p)) == 0) return 0;
        break;
      }
    }
  }

  /// A pid or tid: an integer (not one that would read back as a string key) or a string.
  std::size_t direct_track_key(std::size_t p, key_value& k) const noexcept {
    if (buf_[p] == '"') {
      k.is_string = true;
      return direct_string(p, k.text);
    }
    const std::string_view t = number_token(p);
    std::int64_t n = 0;
    if (!plain_integer(t, n) || table_t::is_string_key(static_cast<std::uint64_t>(n))) return 0;
    k = {static_cast<std::uint64_t>(n), {}, false};
    return p + t.size();
  }

  /// The value of an arg other than the op input lists, at `p`.
  std::size_t direct_arg(std::size_t p, raw_arg& a) const noexcept {
    const char c = buf_[p];
    if (c == '"') {
      a.kind = raw_arg::type::string;
      return direct_string(p, a.text);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      const std::string_view t = number_token(p);
      if (plain_integer(t, a.i)) {
        a.kind = raw_arg::type::integer;
      } else if (read_double(t, a.f)) {
        a.kind = raw_arg::type::floating;
      } else {
        return 0;  // big integers, -0, malformed: simdjson decides
      }
      return p + t.size();
    }
    if (c == '[' || c == '{') {
      const std::size_t e = direct_skip(p);
      a.kind = raw_arg::type::json;
      a.text = {buf_.data() + p, e - p};
      return e;
    }
    return direct_literal(p, a);
  }

  /// The `args` object at `p` into `f` and `b`; the position after it, or 0.
  std::size_t direct_args(std::size_t p, fields& f, batch& b) {
    const char* s = buf_.data();
    if (s[p] != '{') return 0;
    f.args_at = p;
    f.has_args = true;
    p = scan_.skip_space(p + 1);
    if (p < len_ && s[p] == '}') return p + 1;
    while (true) {
      std::string_view key;
      if (p >= len_ || s[p] != '"' || (p = direct_string(p, key)) == 0) return 0;
      p = scan_.skip_space(p);
      if (p >= len_ || s[p] != ':') return 0;
      p = scan_.skip_space(p + 1);
      if (p >= len_) return 0;
      if (dims_range* d = dims_list(key, f)) {
        if (!fill_list(*d, b.dims, [&] { return (p = read_dims_text(p, b)) != 0; })) return 0;
      } else if (string_range* r = string_list(key, f)) {
        if (!fill_list(*r, b.strings, [&] { return (p = read_strings_text(p, b.strings)) != 0; }))
          return 0;
      } else {  // in place (a failure rolls the batch back)
        raw_arg& a = b.args.emplace_back();
        a.key = key;
        a.offset = p;
        if ((p = direct_arg(p, a)) == 0) return 0;
      }
      p = scan_.skip_space(p);
      if (p >= len_) return 0;
      if (s[p] == '}') return p + 1;
      if (s[p] != ',') return 0;
      p = scan_.skip_space(p + 1);
    }
  }

  /// How much of a batch was read: what to cut it back to.
  struct batch_mark {
    std::size_t events, args, dims, ints, strings;
  };
  static batch_mark mark_of(const batch& b) noexcept {
    return {b.events.size(), b.args.size(), b.dims.size(), b.ints.size(), b.strings.size()};
  }
  static void roll_back(batch& b, const batch_mark& m) {
    b.events.resize(m.events);
    b.args.resize(m.args);
    b.dims.resize(m.dims);
    b.ints.resize(m.ints);
    b.strings.resize(m.strings);
  }

  /// The record at `p` (a '{') into `b` when the direct path can read it: the position after
  /// it, or 0 with `b` as it was.
  TRACEMODEL_FLATTEN std::size_t direct_event(std::size_t p, batch& b) {
    const char* s = buf_.data();
    // The text is read once, front to back, from memory: loading it was about a tenth of the
    // parse's samples. Asking for the lines a few records ahead took 4-5% off a serial read.
    TRACEMODEL_PREFETCH(s + p + 1024);
    TRACEMODEL_PREFETCH(s + p + 1088);
    const batch_mark m = mark_of(b);
    auto bail = [&] {
      roll_back(b, m);
      return std::size_t{0};
    };
    fields& f = b.events.emplace_back();
    f.at = p;
    f.args_first = static_cast<std::uint32_t>(m.args);
    std::size_t args_end = 0;
    p = scan_.skip_space(p + 1);
    while (true) {
      if (p >= len_ || s[p] != '"') return bail();
      auto [k, q] = known_event_key(p);
      if (q == 0) {
        std::string_view key;
        if ((p = direct_string(p, key)) == 0) return bail();
        k = event_key_of(key);
        p = scan_.skip_space(p);
        if (p >= len_ || s[p] != ':') return bail();
        q = p + 1;
      }
      p = scan_.skip_space(q);
      if (p >= len_) return bail();
      const bool string_value = s[p] == '"';
      switch (k) {
        case event_key::ph:
          p = string_value ? direct_string(p, f.ph) : 0;
          f.has_ph = true;
          break;
        case event_key::name:
          p = string_value ? direct_string(p, f.name) : 0;
          break;
        case event_key::cat:
          p = string_value ? direct_string(p, f.cat) : 0;
          break;
        case event_key::s:
          p = string_value ? direct_string(p, f.scope) : 0;
          break;
        case event_key::bp:
          p = string_value ? direct_string(p, f.bp) : 0;
          break;
        case event_key::pid:
          p = direct_track_key(p, f.pid);
          break;
        case event_key::tid:
          p = direct_track_key(p, f.tid);
          break;
        case event_key::ts:
        case event_key::dur: {
          const std::string_view t = number_token(p);
          const bool ts = k == event_key::ts;
          if (!is_json_number_start(t) || !parse_micros(t, ts ? f.ts : f.dur)) return bail();
          (ts ? f.has_ts : f.has_dur) = true;
          p += t.size();
          break;
        }
        case event_key::id: {
          const std::string_view t = number_token(p);
          std::int64_t n = 0;
          if (!plain_integer(t, n)) return bail();  // string and big ids: simdjson
          f.id = static_cast<std::uint64_t>(n);
          f.has_id = true;
          p += t.size();
          break;
        }
        case event_key::args:
          p = direct_args(p, f, b);
          args_end = p;
          break;
        case event_key::other:
          p = direct_skip(p);
          break;
      }
      if (p == 0) return bail();
      p = scan_.skip_space(p);
      if (p >= len_) return bail();
      if (s[p] == '}') break;
      if (s[p] != ',') return bail();
      p = scan_.skip_space(p + 1);
    }
    f.args_count = static_cast<std::uint32_t>(b.args.size() - m.args);
    if (incomplete(f) != nullptr) return bail();
    if (f.ph[0] == 'M' && f.has_args) f.raw_args = {s + f.args_at, args_end - f.args_at};
    return p + 1;
  }

  // ---- the events array through the direct path
  // --------------------------------------------------
  /// Where reading the events array stands: the next element starts at `p`, after the separator
  /// at `before` ('[' or ','); after the last element, `before` is the array's ']'.
  struct cursor {
    std::size_t before = 0, p = 0;
  };
  static constexpr std::size_t no_limit = static_cast<std::size_t>(-1);
  /// Why a run of the direct path stopped.
  enum class run_end {
    limit,  ///< the next element starts at or after the limit
    last,   ///< the array's last element was read
    stuck,  ///< the direct path cannot read the element at the cursor
  };

  /// Reads elements through the direct path into `b`, from the one at `at.p`, while they start
  /// before `limit`; `at` follows. Touches nothing but `b` and `at` (a parsing thread runs it).
  run_end direct_run(cursor& at, std::size_t limit, batch& b) {
    while (true) {
      if (at.p >= limit) return run_end::limit;
      const batch_mark m = mark_of(b);
      const std::size_t e = at.p < len_ && buf_[at.p] == '{' ? direct_event(at.p, b) : 0;
      if (e == 0) return run_end::stuck;
      const std::size_t sep = scan_.skip_space(e);
      if (sep < len_ && buf_[sep] == ']') {
        at = {sep, sep + 1};
        return run_end::last;
      }
      std::size_t next = 0;
      if (!(sep < len_ && buf_[sep] == ',' && (next = scan_.skip_space(sep + 1)) < len_ &&
            buf_[next] != ']')) {
        roll_back(b, m);  // malformed after the element: simdjson's to name
        return run_end::stuck;
      }
      at = {sep, next};
    }
  }

  /// Builds the batch `b` read between the separators at `open` and `close`.
  void build_read(batch& b, std::size_t open, std::size_t close, bool last) {
    b.where = {open, close, last};
    build_batch(b);
    b.clear();
  }

  /// Reads and builds the elements from `at` while they start before `limit`: through the
  /// direct path in batches of about `batch_bytes`, and an element it cannot read through
  /// simdjson, with the batch that starts there. `hold()` is called before simdjson parses (it
  /// writes separators into the text, and restores them) and its result kept meanwhile. True
  /// after the array's last element.
  template <class Hold>
  bool read_serial(cursor& at, std::size_t limit, batch& b, Hold hold) {
    b.clear();
    while (at.p < limit) {
      const std::size_t open = at.before;
      const std::size_t room = std::min(limit - at.p, opt_.batch_bytes);
      const run_end r = direct_run(at, at.p + std::max<std::size_t>(room, 1), b);
      if (!b.events.empty()) build_read(b, open, at.before, r == run_end::last);
      if (r == run_end::last) return true;
      if (r == run_end::limit) continue;
      // Through simdjson: a batch from this element.
      [[maybe_unused]] const auto held = hold();
      splitter split(*this, at.before, at.p);
      bounds bd;
      split.next(bd);
      parse_batch(bd, b);
      build_batch(b);
      b.clear();
      at = {bd.close, bd.last ? bd.close + 1 : scan_.skip_space(bd.close + 1)};
      if (bd.last) return true;
    }
    return false;
  }

  /// A likely element start at or after `from`, with the separator before it, for cutting the
  /// array into stretches parsed in parallel: the first '{' after a line break whose previous
  /// character (white space aside) is a ','. A JSON string holds no raw line break, so the scan
  /// knows from there which bytes are in strings; it cannot know the nesting depth, and a '{'
  /// in an array of objects inside an event matches too. A guess, checked before it is used.
  /// False when no line break or no match lies within 64 KiB.
  bool guess_element(std::size_t from, cursor& out) const noexcept {
    const char* s = buf_.data();
    const std::size_t end = std::min(len_, from + (std::size_t{64} << 10));
    if (from >= end) return false;
    const void* nl = std::memchr(s + from, '\n', end - from);
    if (nl == nullptr) return false;
    std::size_t q = static_cast<std::size_t>(static_cast<const char*>(nl) - s);
    std::size_t prev = q;  // the last character before q that is not white space
    while (prev > 0 && is_json_space(s[prev - 1])) --prev;
    if (prev-- == 0) return false;
    for (; q < end; ++q) {
      const char c = s[q];
      if (is_json_space(c)) continue;
      if (c == '{' && s[prev] == ',') {
        out = {prev, q};
        return true;
      }
      if (c == '"') {
        while (++q < end && s[q] != '"')
          if (s[q] == '\\') ++q;
        if (q >= end) return false;
      }
      prev = q;
    }
    return false;
  }

  /// A stretch of the events array parsed ahead of building.
  struct chunk {
    batch b;         ///< parsed on the building thread
    published copy;  ///< parsed on the other thread
    bool copied = false;
    cursor from, to;  ///< where it starts (a guess, past the first) and where it stopped
    run_end end = run_end::stuck;
    bool failed = false;  ///< parsing it threw (memory): it is read again on the building thread
  };
  static constexpr std::size_t chunks_ahead = 4;  // chunks parsed and not yet built, at most

  /// Reads the array from `at` in stretches of about `batch_bytes` cut at guessed element
  /// starts: a second thread parses stretches through the direct path while this one builds
  /// them in order and parses stretches too when the next one to build is not ready. A stretch
  /// is used only where the serial read reaches exactly its guessed start; otherwise, and from
  /// where the direct path stops inside it, this thread reads serially up to the next stretch.
  /// The table is the serial read's. False (nothing read) when the text offers too few places
  /// to cut (no line breaks: a one-line file).
  bool read_events_chunked(cursor& at) {
    std::vector<cursor> starts{at};
    for (std::size_t from = at.p + opt_.batch_bytes; from < len_ && from > at.p;
         from += std::max<std::size_t>(opt_.batch_bytes, 1)) {
      cursor g;
      if (guess_element(from, g) && g.p > starts.back().p) starts.push_back(g);
      if (from + opt_.batch_bytes < from) break;  // overflow
    }
    const std::size_t n = starts.size();
    if (n < 3) return false;
    auto limit_of = [&](std::size_t k) { return k + 1 < n ? starts[k + 1].p : no_limit; };
    std::vector<chunk> slots(chunks_ahead);
    struct shared_state {
      std::mutex m;
      std::condition_variable cv;
      std::size_t claimed = 0;           // chunks taken for parsing
      std::size_t built = 0;             // chunks built (or passed over)
      std::vector<unsigned char> ready;  // per chunk: parsed
      bool stop = false, paused = false;
      int busy = 0;  // the other thread is parsing
    } st;
    st.ready.assign(n, 0);
    // `own`: the other thread's batch, copied out; null: the slot's.
    auto parse = [&](std::size_t k, batch* own) {
      chunk& c = slots[k % chunks_ahead];
      batch& b = own != nullptr ? *own : c.b;
      b.clear();
      c.from = c.to = starts[k];
      c.failed = false;
      c.copied = own != nullptr;
      try {
        c.end = direct_run(c.to, limit_of(k), b);
        if (own != nullptr) c.copy.assign(b);
      } catch (...) {
        c.failed = true;
      }
    };
    auto claimable = [&] { return st.claimed < std::min(n, st.built + chunks_ahead); };
    worker parser;
    try {
      parser = worker(opt_, [&] {
        batch own;
        std::unique_lock lock(st.m);
        while (true) {
          st.cv.wait(lock, [&] { return st.stop || (!st.paused && claimable()); });
          if (st.stop) break;
          const std::size_t k = st.claimed++;
          st.busy = 1;
          lock.unlock();
          parse(k, &own);
          lock.lock();
          st.busy = 0;
          st.ready[k] = 1;
          st.cv.notify_all();
        }
      });
    } catch (const std::system_error&) {
      return false;  // no second thread to be had: the serial read
    }
    const stop_and_join<shared_state> guard{st, parser};
    // simdjson writes into the text: the other thread waits meanwhile.
    auto hold = [&] {
      std::unique_lock lock(st.m);
      st.paused = true;
      st.cv.wait(lock, [&] { return st.busy == 0; });
      struct resume {
        shared_state* st;
        ~resume() {
          std::lock_guard lock(st->m);
          st->paused = false;
          st->cv.notify_all();
        }
      };
      return resume{&st};
    };
    batch& serial = batches_.emplace_back();
    for (std::size_t k = 0; k < n; ++k) {
      {
        std::unique_lock lock(st.m);
        while (st.ready[k] == 0) {
          if (claimable()) {  // parse one here rather than wait
            const std::size_t j = st.claimed++;
            lock.unlock();
            parse(j, nullptr);
            lock.lock();
            st.ready[j] = 1;
            st.cv.notify_all();
          } else {
            st.cv.wait(lock);
          }
        }
      }
      chunk& c = slots[k % chunks_ahead];
      bool done = false;
      if (!c.failed && c.from.p == at.p) {
        const batch_view v = c.copied ? c.copy.view() : view_of(c.b);
        if (!v.events.empty()) build_batch(v, {at.before, c.to.before, c.end == run_end::last});
        at = c.to;
        done = c.end == run_end::last;
        if (c.end == run_end::stuck) done = read_serial(at, limit_of(k), serial, hold);
      } else {  // a wrong guess (the serial read is past it), or a failure: read it here
        done = read_serial(at, limit_of(k), serial, hold);
      }
      std::lock_guard lock(st.m);
      st.built = k + 1;
      st.cv.notify_all();
      if (done) return true;
    }
    // The last stretch runs to the array's end: read_serial returned true or threw.
    throw input_error("unexpected end of input in traceEvents (truncated?)", at.p);
  }

  void read_strings(value_t v, detail::scratch_vector<std::string_view>& out, std::size_t at) {
    simdjson::ondemand::array a;
    if (v.get_array().get(a))
      throw input_error("Input type/Concrete Inputs: expected an array", at);
    for (auto el : a) {
      value_t x;
      if (const auto err = el.get(x)) fail(err, at);
      simdjson::ondemand::json_type type;
      if (const auto err = x.type().get(type)) fail(err, at);
      if (type == simdjson::ondemand::json_type::string) {
        out.emplace_back(get_or_fail(x.get_string(), "string", offset_of(x)));
      } else {  // numbers or others in Concrete Inputs: their JSON text
        const std::size_t s = offset_of(x);
        const std::size_t e = scan_.skip_value(s);
        skip_value(x);
        out.emplace_back(buf_.data() + s, e - s);
      }
    }
  }

  // ---- building events --------------------------------------------------------------------------
  void add_event(const fields& f, const batch_view& b, char ph, std::uint64_t pid,
                 std::uint64_t tid) {
    const activity_type act = f.cat.empty() ? activity_type::cpu_op : activity_type_from(f.cat);
    event_t& e = t_.events.emplace_back();
    e.start_ns = absolute(base_, f.ts, f.at);
    e.pid = static_cast<process_key>(pid);
    e.tid = tid;
    std::int64_t end = e.start_ns;
    if (ph == 'X') {
      end = absolute(e.start_ns, f.has_dur && f.dur > 0 ? f.dur : 0, f.at);
      if (f.dur < 0) {
        t_.anomalies.add(anomaly::end_before_start);
        end = e.start_ns;
      }
    } else if (ph == 'i' || ph == 'I') {
      e.instant_scope = f.scope.empty() ? 't' : f.scope[0];
    }
    const bool begin = ph == 'B';
    bool built = false;
    if (act == activity_type::cpu_op || act == activity_type::user_annotation) {
      if constexpr (Schema::template contains<event_kind::op>) {
        auto& op = e.fields.template emplace<Schema::template index_of<event_kind::op>>();
        op.name = t_.strings.intern(f.name);
        op.scope =
            act == activity_type::user_annotation ? op_scope::user_scope : op_scope::function;
        op.end_ns = begin ? no_end_ns : end;
        op.end_tid = e.tid;
        fill_payload(e, f, b, op);
        build_inputs(op, f, b);
        built = true;
      }
    } else if (act == activity_type::python_function) {
      if (f.name.starts_with("<built-in")) {
        if constexpr (Schema::template contains<event_kind::native_call>) {
          auto& c = e.fields.template emplace<Schema::template index_of<event_kind::native_call>>();
          c.name = t_.strings.intern(f.name);
          c.end_ns = end;
          fill_payload(e, f, b, c);
          built = true;
        }
      } else if constexpr (Schema::template contains<event_kind::script_call>) {
        auto& c = e.fields.template emplace<Schema::template index_of<event_kind::script_call>>();
        c.name = t_.strings.intern(f.name);
        c.end_ns = end;
        fill_payload(e, f, b, c);
        built = true;
      }
    } else if (act == activity_type::cpu_instant_event && f.name == "[memory]") {
      if constexpr (Schema::template contains<event_kind::allocation>) {
        fill_payload(
            e, f, b,
            e.fields.template emplace<Schema::template index_of<event_kind::allocation>>());
        built = true;
      }
    } else if (act == activity_type::cpu_instant_event && f.name == "[OutOfMemory]") {
      if constexpr (Schema::template contains<event_kind::out_of_memory>) {
        fill_payload(
            e, f, b,
            e.fields.template emplace<Schema::template index_of<event_kind::out_of_memory>>());
        built = true;
      }
    }
    if (!built) {
      if constexpr (Schema::template contains<event_kind::device_activity>) {
        auto& d =
            e.fields.template emplace<Schema::template index_of<event_kind::device_activity>>();
        d.name = t_.strings.intern(f.name);
        d.category = t_.strings.intern(f.cat);
        d.activity = act;
        d.end_ns = end;
        fill_payload(e, f, b, d);
        built = true;
      }
    }
    if (!built) {  // the schema has no kind for it
      t_.events.pop_back();
      t_.anomalies.add(anomaly::unsupported_record);
      return;
    }
    if (begin) open_.push_back(static_cast<event_index>(t_.events.size() - 1));
    in_order_ = in_order_ && e.start_ns >= last_start_;
    last_start_ = e.start_ns;
    event_track_.push_back(tracks_.id(pid, tid));
    event_keys_.push_back(bind_key_of(e));
  }

  void end_event(const fields& f, std::uint64_t pid, std::uint64_t tid) {
    // The innermost open `B` of the same pid and tid.
    for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
      event_t& e = t_.events[*it];
      if (static_cast<std::uint64_t>(e.pid) != pid || e.tid != tid) continue;
      std::int64_t end = absolute(base_, f.ts, f.at);
      if (end < e.start_ns) {
        t_.anomalies.add(anomaly::end_before_start);
        end = e.start_ns;
      }
      e.visit([end](auto& p) {
        if constexpr (requires { p.end_ns; }) p.end_ns = end;
      });
      open_.erase(std::next(it).base());
      return;
    }
    t_.anomalies.add(anomaly::unmatched_end);
  }

  /// Fills payload fields from the args, keeps the other args as attributes.
  template <class P>
  void fill_payload(event_t& e, const fields& f, const batch_view& b, P& payload) {
    for (const raw_arg& a : std::span(b.args).subspan(f.args_first, f.args_count)) {
      if constexpr (std::is_same_v<P, extra_fields<event_kind::op>>) {
        if (a.key == "finished") {
          if ((a.kind == raw_arg::type::boolean && !a.b) ||
              (a.kind == raw_arg::type::string && a.text == "false"))
            payload.flags |= op_flag::unfinished;
          continue;
        }
      }
      if (assign_field(payload, a)) continue;
      add_attr(e, a);
    }
  }

  template <class P>
  bool assign_field(P& payload, const raw_arg& a) {
    if constexpr (!reflectable<P>) {
      return false;
    } else if constexpr (has_field_table<export_args<P>>) {
      // The key's spec at run time, its member at compile time.
      constexpr auto& specs = export_args<P>::fields;
      std::size_t which = std::size(specs);
      for (std::size_t k = 0; k < std::size(specs); ++k)
        if (specs[k].key == a.key) which = k;
      bool done = false;
      [&]<std::size_t... S>(std::index_sequence<S...>) {
        (void)((which == S &&
                (done = set_value(field_at<field_index<P>(specs[S].field)>(payload), a), true)) ||
               ...);
      }
      (std::make_index_sequence<std::size(specs)>{});
      return done;
    } else {
      if (is_record_field(a.key)) return false;
      bool done = false;
      for_each_field(payload, [&](std::string_view name, auto& v) {
        if (!done && name == a.key) done = set_value(v, a);
      });
      return done;
    }
  }

  /// Sets a field from an arg; false (the arg is kept as an attribute instead) when the value
  /// does not fit the field: real profilers write ids as hex strings and the like.
  template <class V>
  bool set_value(V& v, const raw_arg& a) {
    using T = std::remove_cvref_t<V>;
    if constexpr (std::is_same_v<T, bool>) {
      if (a.kind != raw_arg::type::boolean) return false;
      v = a.b;
    } else if constexpr (std::is_integral_v<T>) {
      std::int64_t i = 0;
      std::uint64_t u = 0;
      bool is_unsigned = false;
      switch (a.kind) {
        case raw_arg::type::integer:
          i = a.i;
          break;
        case raw_arg::type::unsigned_integer:
          u = a.u;
          is_unsigned = true;
          break;
        case raw_arg::type::string:  // ids written as decimal strings above 2^53
          if (!parse_uint64(a.text, u)) return false;
          is_unsigned = true;
          break;
        default:
          return false;
      }
      if (is_unsigned) {
        if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return false;
        v = static_cast<T>(u);
      } else {
        if (i < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
            (i > 0 && static_cast<std::uint64_t>(i) >
                          static_cast<std::uint64_t>(std::numeric_limits<T>::max())))
          return false;
        v = static_cast<T>(i);
      }
    } else if constexpr (std::is_floating_point_v<T>) {
      if (a.kind == raw_arg::type::floating)
        v = a.f;
      else if (a.kind == raw_arg::type::integer)
        v = static_cast<T>(a.i);
      else if (a.kind == raw_arg::type::unsigned_integer)
        v = static_cast<T>(a.u);
      else
        return false;
    } else if constexpr (std::is_same_v<T, name_id>) {
      if (a.kind != raw_arg::type::string) return false;
      v = t_.strings.intern(a.text);
    } else {
      return false;
    }
    return true;
  }

  void add_attr(event_t& e, const raw_arg& a) {
    attribute& at = t_.add_attr(e, a.key, attr_type::integer);
    switch (a.kind) {
      case raw_arg::type::integer:
        at.i = a.i;
        break;
      case raw_arg::type::unsigned_integer:
        at.type = attr_type::unsigned_integer;
        at.u = a.u;
        break;
      case raw_arg::type::floating:
        at.type = attr_type::floating;
        at.f = a.f;
        break;
      case raw_arg::type::boolean:
        at.type = attr_type::boolean;
        at.b = a.b;
        break;
      case raw_arg::type::string:
        if (a.key == "Call stack" || a.key == "Module Hierarchy") {
          add_joined_list(at, a.text, a.key == "Call stack" ? ';' : '.');
        } else {
          at.type = attr_type::string;
          at.s = t_.strings.intern(a.text);
        }
        break;
      case raw_arg::type::null:
        at.type = attr_type::json;
        at.s = t_.strings.intern("null");
        break;
      case raw_arg::type::json:
        at.type = attr_type::json;
        at.s = t_.strings.intern(a.text);
        break;
    }
  }

  void add_joined_list(attribute& at, std::string_view text, char sep) {
    const auto first = static_cast<std::uint32_t>(t_.name_lists.size());
    std::size_t p = 0;
    while (true) {
      const std::size_t q = text.find(sep, p);
      t_.name_lists.push_back(
          t_.strings.intern(text.substr(p, q == std::string_view::npos ? q : q - p)));
      if (q == std::string_view::npos) break;
      p = q + 1;
    }
    at.type = attr_type::string_list;
    at.list = {first, static_cast<std::uint32_t>(t_.name_lists.size() - first)};
  }

  // ---- op inputs from Input Dims / Input type / Input Strides / Concrete Inputs ---------------
  void build_inputs(extra_fields<event_kind::op>& op, const fields& f, const batch_view& b) {
    if (!f.dims.present && f.types.count == 0) return;
    auto view = [&b](const dims_range& r) {
      return dims_view{std::span(b.dims).subspan(r.first, r.count), b.ints.data(), r.present};
    };
    dims_ = view(f.dims);
    strides_ = view(f.strides);
    types_ = std::span(b.strings).subspan(f.types.first, f.types.count);
    concrete_ = std::span(b.strings).subspan(f.concrete.first, f.concrete.count);
    const auto first = static_cast<std::uint32_t>(t_.inputs.size());
    std::size_t d = 0, s = 0;  // positions in dims_.entries and strides_.entries
    const std::size_t tops = std::max(count_top(dims_), types_.size());
    for (std::size_t k = 0; k < tops; ++k) {
      const std::string_view type = k < types_.size() ? std::string_view(types_[k]) : "";
      const dims_entry* de = d < dims_.entries.size() ? &dims_.entries[d] : nullptr;
      const dims_entry* se =
          strides_.present && s < strides_.entries.size() ? &strides_.entries[s] : nullptr;
      const std::string_view concrete = k < concrete_.size() ? std::string_view(concrete_[k]) : "";
      if (type == "Scalar") {
        input_value& v = t_.inputs.emplace_back();
        v.kind = input_kind::scalar;
        v.dtype = t_.strings.intern("Scalar");
        v.scalar = parse_scalar(concrete);
      } else if (type == "ScalarList") {
        add_scalar_list(concrete);
      } else if (type == "TensorList" || (de != nullptr && de->list)) {
        add_tensor_list(de, d, se, s);
      } else if (type.empty() && (de == nullptr || de->count == 0)) {
        t_.inputs.emplace_back().kind = input_kind::other;
      } else {
        add_tensor(t_.strings.intern(type), de, se);
      }
      d = skip_entry(dims_, d);
      if (strides_.present) s = skip_entry(strides_, s);
    }
    op.inputs = {first, static_cast<std::uint32_t>(t_.inputs.size() - first)};
  }

  static std::size_t count_top(const dims_view& p) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < p.entries.size(); i = skip_entry(p, i)) ++n;
    return n;
  }
  /// The position after the entry at `i` and its elements.
  static std::size_t skip_entry(const dims_view& p, std::size_t i) {
    if (i >= p.entries.size()) return i;
    std::size_t pending = 1;
    while (pending > 0 && i < p.entries.size()) {
      pending += p.entries[i].list ? p.entries[i].count : 0;
      --pending;
      ++i;
    }
    return i;
  }

  void add_tensor(name_id dtype, const dims_entry* de, const dims_entry* se) {
    input_value& v = t_.inputs.emplace_back();
    v.kind = input_kind::tensor;
    v.dtype = dtype;
    v.dims = static_cast<std::uint32_t>(t_.ints.size());
    if (de != nullptr && !de->list) {
      v.rank = de->count;
      for (std::uint32_t k = 0; k < de->count; ++k) t_.ints.push_back(dims_.ints[de->first + k]);
    }
    if (se != nullptr && !se->list && se->count == v.rank) {
      v.has_strides = true;
      for (std::uint32_t k = 0; k < se->count; ++k) t_.ints.push_back(strides_.ints[se->first + k]);
    }
  }

  void add_tensor_list(const dims_entry* de, std::size_t d, const dims_entry* se, std::size_t s) {
    // Iteratively over the nested lists of dims (and, in step, of strides).
    const std::size_t list_at = t_.inputs.size();
    input_value& l = t_.inputs.emplace_back();
    l.kind = input_kind::tensor_list;
    if (de == nullptr || !de->list) return;
    struct open_list {
      std::size_t at;
      std::uint32_t left;
    };
    std::vector<open_list> stack{{list_at, de->count}};
    t_.inputs[list_at].rank = de->count;
    std::size_t di = d + 1, si = se != nullptr && se->list ? s + 1 : strides_.entries.size();
    while (!stack.empty()) {
      if (stack.back().left == 0) {
        const std::size_t at = stack.back().at;
        t_.inputs[at].subtree = static_cast<std::uint32_t>(t_.inputs.size() - at);
        stack.pop_back();
        continue;
      }
      --stack.back().left;
      const dims_entry& c = dims_.entries[di];
      const dims_entry* cs = si < strides_.entries.size() ? &strides_.entries[si] : nullptr;
      if (c.list) {
        const std::size_t at = t_.inputs.size();
        input_value& inner = t_.inputs.emplace_back();
        inner.kind = input_kind::tensor_list;
        inner.rank = c.count;
        stack.push_back({at, c.count});
      } else {
        add_tensor(empty_name, &c, cs);
      }
      ++di;
      if (cs != nullptr) ++si;
    }
  }

  void add_scalar_list(std::string_view text) {
    const std::size_t at = t_.inputs.size();
    input_value& l = t_.inputs.emplace_back();
    l.kind = input_kind::scalar_list;
    if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
      text = text.substr(1, text.size() - 2);
      std::uint32_t n = 0;
      while (!text.empty()) {
        const std::size_t c = text.find(',');
        std::string_view item = text.substr(0, c);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        input_value& v = t_.inputs.emplace_back();
        v.kind = input_kind::scalar;
        v.dtype = t_.strings.intern("Scalar");
        v.scalar = parse_scalar(item);
        ++n;
        if (c == std::string_view::npos) break;
        text.remove_prefix(c + 1);
      }
      t_.inputs[at].rank = n;
    }
    t_.inputs[at].subtree = static_cast<std::uint32_t>(t_.inputs.size() - at);
  }

  static scalar_value parse_scalar(std::string_view s) {
    if (s == "True") return scalar_value::boolean(true);
    if (s == "False") return scalar_value::boolean(false);
    std::int64_t i = 0;
    if (parse_int64(s, i)) return scalar_value::integer(i);
    if (s.empty() || s == "None") return {};
    double d = 0;
    const std::string tmp(s);
    char* end = nullptr;
    d = std::strtod(tmp.c_str(), &end);
    if (end != nullptr && *end == '\0') return scalar_value::floating(d);
    return {};
  }

  // ---- after the last event ---------------------------------------------------------------------
  void finish() {
    for (const event_index i : open_) {  // `B` without `E`: an op that never ended
      event_t& e = t_.events[i];
      if (auto* op = e.template get_if<event_kind::op>()) {
        op->flags |= op_flag::unfinished;
        t_.anomalies.add(anomaly::unfinished_op);
      }
    }
    open_.clear();
    sort_events();
    bind_flows();
  }

  void sort_events() {
    // Files are usually written in start order: then the table is in order as built (times
    // shifted by a late base time all move together), and there is nothing to sort.
    if (in_order_) return;
    const std::size_t n = t_.events.size();
    const auto order = start_order(t_.events);
    {  // and what each event got for the binding of flows
      detail::scratch_vector<std::uint32_t> track(n);
      detail::scratch_vector<bind_key> keys(n);
      for (std::size_t i = 0; i < n; ++i) {
        track[i] = event_track_[order[i]];
        keys[i] = event_keys_[order[i]];
      }
      event_track_ = std::move(track);
      event_keys_ = std::move(keys);
    }
    // Apply the permutation in place, cycle by cycle: no second copy of the events.
    std::vector<bool> done(n, false);
    for (std::size_t i = 0; i < n; ++i) {
      if (done[i] || order[i] == i) continue;
      event_t tmp = std::move(t_.events[i]);
      std::size_t j = i;
      while (true) {
        const std::size_t k = order[j];
        done[j] = true;
        if (k == i) {
          t_.events[j] = std::move(tmp);
          break;
        }
        t_.events[j] = std::move(t_.events[k]);
        j = k;
      }
    }
  }

  struct raw_flow {  // 40 bytes
    std::uint64_t id;
    std::int64_t ts;
    std::size_t offset;
    name_id cat;
    std::uint32_t track;  ///< its (pid, tid) in tracks_
    char ph;
    bool enclosing;
  };

  /// What binding a flow needs of an event, kept in track order: finding a flow's event then
  /// reads this compact array (16 bytes an event, each track's run read in time order) instead
  /// of the 112-byte events at scattered places.
  struct bind_key {
    std::int64_t start;
    std::uint32_t correlation;  ///< a device activity's, when it fits (bind_corr32)
    std::uint8_t cls;   ///< bind_op, bind_device, bind_runtime, bind_device_side, bind_corr32
    std::uint8_t mark;  ///< the event's flow while flows are bound (mark_*)
  };
  static constexpr std::uint8_t bind_op = 1, bind_device = 2, bind_runtime = 4,
                                bind_device_side = 8, bind_corr32 = 16;
  /// An event's flow mark while flows are bound (the fields are written at the end): a start,
  /// a start whose end bound too (an end refused because its activity carries a flow already,
  /// the start's own when both bind to one activity, leaves its start without), an end, a flow
  /// the event carried before.
  enum : std::uint8_t {
    mark_none = 0,
    mark_start = 1,
    mark_end = 2,
    mark_before = 3,
    mark_start_ended = 4
  };
  static constexpr std::uint32_t no_slot = 0xffffffffu;

  static bind_key bind_key_of(const event_t& e) noexcept {
    bind_key k{e.start_ns, 0, 0, mark_none};
    if (const auto* d = e.template get_if<event_kind::device_activity>()) {
      const bool fits = d->correlation_id <= 0xffffffffu;
      k.correlation = fits ? static_cast<std::uint32_t>(d->correlation_id) : 0;
      k.cls = static_cast<std::uint8_t>(bind_device | (fits ? bind_corr32 : 0) |
                                        (is_runtime_call(d->activity) ? bind_runtime : 0) |
                                        (is_device_side(d->activity) ? bind_device_side : 0));
      k.mark = d->flow_type != flow_kind::none ? mark_before : mark_none;
    } else if (e.template is<event_kind::op>()) {
      k.cls = bind_op;
    }
    return k;
  }

  /// The event a flow record points at, as its slot in `keys` (all tracks' events by track,
  /// then start; the flow's track is `keys[first, end)`): with "bp":"e" (and for starts) the
  /// innermost event of its track that encloses its time (Kineto puts it at the event's
  /// start); otherwise the next event of its track that starts at or after it.
  /// `lb`: the first slot of the track starting at or after f.ts.
  std::uint32_t bind(const raw_flow& f, bool device_flow, std::span<const bind_key> keys,
                     std::span<const event_index> by_track, std::size_t first, std::size_t end,
                     std::size_t lb) const {
    if (!f.enclosing && f.ph != 's') return lb == end ? no_slot : static_cast<std::uint32_t>(lb);
    // Events starting exactly at ts: choose by kind (and by correlation id for device flows).
    std::uint32_t best = no_slot;
    int best_score = -1;
    for (std::size_t k = lb; k < end && keys[k].start == f.ts; ++k) {
      const bind_key& e = keys[k];
      int score = 0;
      if (device_flow) {
        if ((e.cls & bind_device) != 0) {
          // A start passes over activities that already carry a flow (one flow each), so
          // that two starts on events of one start time both bind, as they were written.
          if (f.ph == 's' && e.mark != mark_none) continue;
          const bool right = (e.cls & (f.ph == 's' ? bind_runtime : bind_device_side)) != 0;
          const bool same = (e.cls & bind_corr32) != 0
                                ? e.correlation == f.id
                                : t_.events[by_track[k]].correlation_id() == f.id;
          score = right ? (same ? 3 : 2) : 1;
        }
      } else {
        score = (e.cls & bind_op) != 0 ? 2 : 1;
      }
      // Later events with equal start are inner ones: ops take the last of equal score. A
      // device flow takes the first: the writer writes device flows in table order, so the
      // first start of such a group is the first event's, and each start binds where it was
      // written from (a start passes over activities that carry a flow already).
      if (score > best_score || (score == best_score && !device_flow)) {
        best = static_cast<std::uint32_t>(k);
        best_score = score;
      }
    }
    if (best != no_slot) return best;
    // Otherwise the innermost event that encloses ts (a bounded look back).
    std::size_t k = lb;
    for (int steps = 0; k > first && steps < 256; ++steps) {
      --k;
      if (t_.events[by_track[k]].end_ns() >= f.ts) return static_cast<std::uint32_t>(k);
    }
    return no_slot;
  }

  void bind_flows() {
    if (flows_.empty()) return;
    const std::size_t n = t_.events.size();
    const std::size_t nf = flows_.size();
    // The flows' order by time (radix, stable) does not depend on the events: with many flows
    // it is made on another thread while this one lays out the tracks below (the sort is about
    // a sixth of the binding).
    struct by_time_t {
      detail::fill_vector<std::int64_t> ts;
      detail::scratch_vector<std::uint32_t> order;
    };
    auto sort_by_time = [this, nf] {
      by_time_t r{detail::fill_vector<std::int64_t>(nf), {}};
      for (std::size_t i = 0; i < nf; ++i) r.ts[i] = flows_[i].ts;
      r.order = detail::stable_order(r.ts);
      return r;
    };
    std::optional<by_time_t> sorted_aside;
    worker sorting;
    if (nf >= parallel_flows && thread_budget(opt_) > 1) {
      try {
        sorting = worker(opt_, [&] { sorted_aside = sort_by_time(); });
      } catch (const std::system_error&) {  // no thread to be had: sorted below instead
      }
    }
    // The events of each track (pid, tid) by start (the table is sorted): a counting sort,
    // which also lays out their bind keys in that order. Events and flows got their tracks as
    // they were built (a track with flows and no events is empty here).
    const std::size_t nt = tracks_.size();
    std::vector<std::size_t> track_begin(nt + 1, 0);
    for (const std::uint32_t k : event_track_) ++track_begin[k + 1];
    for (std::size_t k = 0; k < nt; ++k) track_begin[k + 1] += track_begin[k];
    detail::fill_vector<event_index> by_track(n);
    detail::fill_vector<bind_key> keys(n);
    {
      std::vector<std::size_t> fill(track_begin.begin(), track_begin.end() - 1);
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t at = fill[event_track_[i]]++;
        by_track[at] = static_cast<event_index>(i);
        keys[at] = event_keys_[i];
      }
      event_track_ = {};
      event_keys_ = {};
    }
    // Each flow's lower bound in its track, found by walking flows and events of a track in
    // step (flows sorted by track and time) instead of a binary search each: the flows are
    // then bound in file order, which decides which of two duplicates wins.
    // The order: by time (radix), then stably by track (counting).
    detail::fill_vector<std::uint32_t> flow_track(nf);
    for (std::size_t i = 0; i < nf; ++i) flow_track[i] = flows_[i].track;
    detail::fill_vector<std::uint32_t> lower(nf);
    {
      sorting.join();
      const by_time_t sorted = sorted_aside ? std::move(*sorted_aside) : sort_by_time();
      const auto& flow_ts = sorted.ts;
      detail::fill_vector<std::uint32_t> order(nf);
      {
        std::vector<std::size_t> flow_fill(nt + 1, 0);
        for (const std::uint32_t k : flow_track) ++flow_fill[k + 1];
        for (std::size_t k = 0; k < nt; ++k) flow_fill[k + 1] += flow_fill[k];
        for (const std::uint32_t i : sorted.order) order[flow_fill[flow_track[i]]++] = i;
      }
      for (std::size_t j = 0; j < nf;) {
        const std::uint32_t k = flow_track[order[j]];
        const std::size_t end = track_begin[k + 1];
        std::size_t at = track_begin[k];
        for (; j < nf && flow_track[order[j]] == k; ++j) {
          const std::int64_t ts = flow_ts[order[j]];
          while (at < end && keys[at].start < ts) ++at;
          lower[order[j]] = static_cast<std::uint32_t>(at);
        }
      }
    }
    name_id fwdbwd{}, ac2g{}, old_ac2g{};
    const bool has_fwdbwd = t_.strings.find("fwdbwd", fwdbwd);
    const bool has_ac2g = t_.strings.find("ac2g", ac2g);
    const bool has_old_ac2g = t_.strings.find("async_cpu_to_gpu", old_ac2g);
    struct pending {
      event_index from = no_event, to = no_event;
    };
    // Flow ids are dense and met roughly in order: id maps (an array over a window of ids,
    // hashed outside it) keep the lookups sequential where a hash spreads them over the map.
    // The lists are reserved for every flow: growing them copied them about 20 times, and the
    // pages of what is not used are never touched.
    detail::id_map fb_index(nf);  // flow id -> position in fb
    detail::scratch_vector<std::pair<std::uint64_t, pending>> fb;
    detail::id_map device_starts(nf);
    detail::scratch_vector<std::pair<std::uint64_t, std::uint32_t>> started;  // (id, slot)
    detail::scratch_vector<std::pair<std::uint64_t, std::uint32_t>> device_ends;
    fb.reserve(nf);
    started.reserve(nf);
    device_ends.reserve(nf);
    for (std::size_t fi = 0; fi < nf; ++fi) {
      const raw_flow& f = flows_[fi];
      const bool is_fb = has_fwdbwd && f.cat == fwdbwd;
      const bool is_dev = (has_ac2g && f.cat == ac2g) || (has_old_ac2g && f.cat == old_ac2g);
      if (!is_fb && !is_dev) {
        t_.anomalies.add(anomaly::unsupported_record);
        continue;
      }
      if (f.ph == 't') continue;  // a step: nothing to bind
      const std::uint32_t k = flow_track[fi];
      const std::uint32_t at =
          bind(f, is_dev, keys, by_track, track_begin[k], track_begin[k + 1], lower[fi]);
      if (at == no_slot) {
        t_.anomalies.add(anomaly::unbound_flow);
        continue;
      }
      if (is_fb) {
        event_index slot = fb_index.find(f.id);
        if (slot == no_event) {
          slot = static_cast<event_index>(fb.size());
          fb_index.insert(f.id, slot);
          fb.emplace_back(f.id, pending{});
        }
        pending& p = fb[slot].second;
        event_index& end = f.ph == 's' ? p.from : p.to;
        if (end != no_event)
          t_.anomalies.add(f.ph == 's' ? anomaly::duplicate_flow_start
                                       : anomaly::duplicate_flow_end);
        else
          end = by_track[at];
        continue;
      }
      if ((keys[at].cls & bind_device) == 0) {
        t_.anomalies.add(anomaly::unbound_flow);
        continue;
      }
      if (f.ph == 's') {
        if (device_starts.find(f.id) != no_event) {
          t_.anomalies.add(anomaly::duplicate_flow_start);
          continue;
        }
        if (keys[at].mark != mark_none) {  // an activity carries one flow: the first wins
          t_.anomalies.add(anomaly::unbound_flow);
          continue;
        }
        device_starts.insert(f.id, at);
        started.emplace_back(f.id, at);
        keys[at].mark = mark_start;
      } else {
        device_ends.emplace_back(f.id, at);
      }
    }
    detail::id_map ended(device_ends.size());
    std::size_t kept = 0;  // the ends that bind, moved to the front of device_ends
    for (const auto& [id, at] : device_ends) {
      const event_index start = device_starts.find(id);
      if (start == no_event) {
        t_.anomalies.add(anomaly::flow_end_without_start);
        continue;
      }
      if (!ended.insert(id, at)) {
        t_.anomalies.add(anomaly::duplicate_flow_end);
        continue;
      }
      if (keys[at].mark != mark_none) {  // already a flow's start or end
        t_.anomalies.add(anomaly::unbound_flow);
        continue;
      }
      keys[at].mark = mark_end;
      keys[start].mark = mark_start_ended;
      device_ends[kept++] = {id, at};
    }
    device_ends.resize(kept);
    auto mark = [&](std::uint32_t at, std::uint64_t id, bool start) {
      auto& d = t_.events[by_track[at]].template get<event_kind::device_activity>();
      d.flow_id = id;
      d.flow_type = flow_kind::async_cpu_gpu;
      d.flow_start = start;
    };
    // A start whose end never bound draws nothing (as for fwdbwd flows): it is not marked, so
    // that what is written reads back the same (a lone start would bind anew, perhaps to
    // another event of the same time).
    for (const auto& [id, at] : started)
      if (keys[at].mark == mark_start_ended) mark(at, id, true);
    for (const auto& [id, at] : device_ends) mark(at, id, false);
    t_.links.reserve(t_.links.size() + fb.size());
    for (const auto& [id, p] : fb) {
      if (p.from == no_event) {
        t_.anomalies.add(anomaly::flow_end_without_start);
        continue;
      }
      if (p.to == no_event) continue;  // a start without an end: nothing to draw
      t_.links.push_back({flow_kind::fwd_bwd, id, p.from, p.to});
    }
  }

  table_t& t_;
  std::span<char> buf_;
  std::size_t len_;
  const read_options& opt_;
  json_scanner scan_;
  trace_text* owner_;
  simdjson::ondemand::parser parser_;
  simdjson::ondemand::document* doc_ = nullptr;  // the batch being parsed
  std::int64_t base_ = 0;
  std::size_t events_begin_ = 0;  // the traceEvents array's '['
  bool built_any_ = false;        // a batch of events was built (the next is not the first)
  std::vector<batch> batches_;
  // The inputs of the op being built (build_inputs).
  dims_view dims_, strides_;
  std::span<const std::string_view> types_, concrete_;
  std::vector<event_index> open_;  // `B` records waiting for their `E`
  std::int64_t last_start_ = std::numeric_limits<std::int64_t>::min();  // of the last event built
  bool in_order_ = true;  // every event built so far started at or after the one before
  // The tracks (pid, tid) of events and flows, in order of first appearance, and each event's.
  detail::pair_ids tracks_;
  detail::scratch_vector<std::uint32_t> event_track_;
  detail::scratch_vector<bind_key> event_keys_;  // each event's, as it was built (bind_flows)
  detail::scratch_vector<raw_flow> flows_;
};

}  // namespace detail

/// Reads a Chrome trace from `buf`: `len` bytes of text followed by at least
/// simdjson::SIMDJSON_PADDING more. `buf` is modified during the read and restored.
template <class Schema = default_schema>
basic_event_table<Schema> read_chrome_trace(std::span<char> buf, std::size_t len,
                                            const read_options& opt = {}) {
  if (buf.size() < len + simdjson::SIMDJSON_PADDING)
    throw usage_error(
        "read_chrome_trace: the buffer needs simdjson::SIMDJSON_PADDING bytes after the text");
  basic_event_table<Schema> t;
  detail::chrome_reader<Schema>(t, buf, len, opt).run();
  return t;
}

/// Reads a Chrome trace from the first `len` bytes of `buf`, which grows by the padding the
/// parser needs if it lacks it.
template <class Schema = default_schema>
basic_event_table<Schema> read_chrome_trace(std::string& buf, std::size_t len,
                                            const read_options& opt = {}) {
  if (buf.size() < len + simdjson::SIMDJSON_PADDING)
    buf.resize(len + simdjson::SIMDJSON_PADDING, ' ');
  return read_chrome_trace<Schema>(std::span<char>(buf.data(), buf.size()), len, opt);
}

/// Reads a Chrome trace from a text it takes: the memory of the text is given back to the
/// operating system as the events are read (see trace_text::release_before), so the read
/// holds about the table and the unread rest of the text, not the whole text beside the table.
template <class Schema = default_schema>
basic_event_table<Schema> read_chrome_trace(trace_text text, const read_options& opt = {}) {
  basic_event_table<Schema> t;
  detail::chrome_reader<Schema>(t, text.padded(), text.size(), opt, &text).run();
  return t;
}

/// Reads a Chrome trace from a string of JSON.
template <class Schema = default_schema>
basic_event_table<Schema> read_chrome_trace_string(std::string_view json,
                                                   const read_options& opt = {}) {
  trace_text text(json.size());
  if (!json.empty()) std::memcpy(text.data(), json.data(), json.size());
  text.set_size(json.size());
  return read_chrome_trace<Schema>(std::move(text), opt);
}

/// Reads a Chrome trace file, gzip-compressed or not (the text's memory is released as it is
/// read).
template <class Schema = default_schema>
basic_event_table<Schema> read_chrome_trace_file(const std::string& path,
                                                 const read_options& opt = {}) {
  return read_chrome_trace<Schema>(load_trace_text(path, opt), opt);
}

TRACEMODEL_END_NAMESPACE

#if defined(TRACEMODEL_READER_COMPILED) && TRACEMODEL_READER_COMPILED
// The reader for the default schema is compiled in a unit of its own (src/chrome_trace_reader.cpp,
// linked as CMake's tracemodel_reader_compiled): units that include this header do not compile it.
TRACEMODEL_BEGIN_NAMESPACE
extern template class detail::chrome_reader<default_schema>;
TRACEMODEL_END_NAMESPACE
#endif
