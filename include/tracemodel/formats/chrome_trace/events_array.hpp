// tracemodel/formats/chrome_trace — the events array: cut into batches, parsed by the direct
// path (direct_path.hpp) or simdjson (simdjson_path.hpp), serially or on two threads, and handed
// to the sink in file order.
//
// The serial read runs the direct path over the array and builds each batch of about
// `batch_bytes`; where the direct path cannot read an element, simdjson parses the batch that
// starts there. On two threads, the array is cut into stretches at guessed element starts
// (`guess_element`) that a second thread parses ahead through the direct path; a stretch is used
// only where the serial read reaches exactly its guessed start, so the table, the anomalies and
// the errors are the serial read's. Without the fast paths, a `splitter` finds the batches and a
// second thread parses them through simdjson a few batches ahead of building.
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace/direct_path.hpp"
#include "tracemodel/formats/chrome_trace/parse.hpp"
#include "tracemodel/formats/chrome_trace/records.hpp"
#include "tracemodel/formats/chrome_trace/simdjson_path.hpp"
#include "tracemodel/formats/json_scan.hpp"
#include "tracemodel/formats/trace_text.hpp"
#include "tracemodel/threads.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::chrome_trace {

inline constexpr std::size_t max_event_depth = 1023;  // 1024 levels with the array

/// Finds the batches of the events array one after the other.
class splitter {
 public:
  /// The array's elements from the one at `first`, after the separator at `begin`.
  splitter(std::span<const char> buf, std::size_t len, std::size_t batch_bytes, std::size_t begin,
           std::size_t first) noexcept
      : buf_(buf),
        len_(len),
        batch_bytes_(batch_bytes),
        scan_(std::string_view(buf.data(), len)),
        p_(first),
        open_(begin) {}
  /// The next batch, false after the last; throws for malformed structure.
  bool next(bounds& out) {
    if (done_) return false;
    std::size_t bytes = 0;
    while (true) {
      const std::size_t e_end = scan_.skip_value(p_, max_event_depth);
      bytes += e_end - p_;
      const std::size_t sep = scan_.skip_space(e_end);
      if (sep >= len_)
        throw input_error("unexpected end of input in traceEvents (truncated?)", sep);
      if (buf_[sep] != ',' && buf_[sep] != ']')
        throw input_error("expected ',' or ']' between trace events", sep);
      const bool last = buf_[sep] == ']';
      if (!last) {
        p_ = scan_.skip_space(sep + 1);
        if (p_ < len_ && buf_[p_] == ']') throw input_error("trailing ',' in traceEvents", sep);
      }
      if (last || bytes >= batch_bytes_) {
        out = {open_, sep, last};
        open_ = sep;
        done_ = last;
        return true;
      }
    }
  }

 private:
  std::span<const char> buf_;
  std::size_t len_, batch_bytes_;
  json_scanner scan_;
  std::size_t p_;     // the next element
  std::size_t open_;  // the separator before it
  bool done_ = false;
};

/// A likely element start at or after `from`, with the separator before it, for cutting the
/// array into stretches parsed in parallel: the first '{' after a line break whose previous
/// character (white space aside) is a ','. A JSON string holds no raw line break, so the scan
/// knows from there which bytes are in strings; it cannot know the nesting depth, and a '{'
/// in an array of objects inside an event matches too. A guess, checked before it is used.
/// False when no line break or no match lies within 64 KiB.
inline bool guess_element(std::span<const char> buf, std::size_t len, std::size_t from,
                          cursor& out) noexcept {
  const char* s = buf.data();
  const std::size_t end = std::min(len, from + (std::size_t{64} << 10));
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

/// The text as far as it is in place, for a text read as it is parsed (stream_trace_text): the
/// parser asks for the bytes it is about to read, and checks that what it read lay within them;
/// where not, it reads the file on and reads the same place again. So the text ends up read
/// exactly as a whole one, errors and their offsets included. A complete text (or none) has
/// every byte in place.
class text_window {
 public:
  explicit text_window(trace_text* owner) noexcept : t_(owner) {}
  /// Whether bytes may be missing.
  [[nodiscard]] bool partial() const noexcept { return t_ != nullptr && !t_->complete(); }
  /// The bytes before this position are the file's.
  [[nodiscard]] std::size_t end() const noexcept { return partial() ? t_->loaded() : no_limit; }
  /// Puts the bytes before `through` and a step of the file after them in place.
  void need(std::size_t through) {
    if (partial() && through > t_->loaded()) t_->load_through(through + t_->step());
  }
  /// Reads on, twice as far past `from` as is in place (a step of the file at least).
  void more(std::size_t from) {
    const std::size_t have = t_->loaded();
    t_->load_through(have + std::max<std::size_t>(1, have > from ? have - from : 0));
  }
  /// Puts every byte in place.
  void all() {
    if (t_ != nullptr) t_->load_all();
  }
  /// Runs `read`, which returns the position of the last byte its result depends on and has no
  /// effect but its result, until that byte is in place. While bytes are missing, an
  /// input_error reads on and runs it again: the error stands once the text is complete.
  template <class Read>
  void settle(std::size_t from, Read read) {
    while (true) {
      if (!partial()) {
        (void)read();
        return;
      }
      try {
        if (read() < end()) return;
      } catch (const input_error&) {
      }
      more(from);
    }
  }

 private:
  trace_text* t_;
};

/// A batch and the simdjson parser whose string buffer its unescaped strings point into.
struct parsed_batch {
  batch b;
  simdjson::ondemand::parser json;
};

/// Reads the events array into a sink.
class events_reader {
 public:
  events_reader(std::span<char> buf, std::size_t len, const read_options& opt, trace_text* owner,
                record_sink& sink)
      : buf_(buf),
        len_(len),
        opt_(opt),
        scan_(std::string_view(buf.data(), len)),
        owner_(owner),
        text_(owner),
        sink_(sink),
        direct_(buf, len),
        simdjson_(buf, len, opt.fast_paths) {}

  /// Reads the array at `begin` (a '['); returns the position after its ']'.
  std::size_t read_events(std::size_t begin) {
    std::size_t first = 0;
    text_.settle(begin, [&] { return first = scan_.skip_space(begin + 1); });
    if (first >= len_)
      throw input_error("unexpected end of input in traceEvents (truncated?)", first);
    if (buf_[first] == ']') return first + 1;
    events_begin_ = begin;
    const bool parallel = len_ - begin >= opt_.parallel_threshold && thread_budget(opt_) > 1;
    // Only the serial read of the direct path reads a text as it goes.
    if (parallel || !opt_.fast_paths) text_.all();
    if (opt_.fast_paths) {
      cursor at{begin, first};
      if (!parallel || !read_events_chunked(at)) {
        batches_.resize(1);
        read_serial(at, no_limit, batches_[0], [] { return 0; });
      }
      return at.before + 1;
    }
    splitter split(buf_, len_, opt_.batch_bytes, begin, first);
    bounds bd;
    if (!parallel) {
      batches_.resize(1);
      while (split.next(bd)) {
        parse_batch(bd, batches_[0]);
        build_batch(batches_[0].b);
      }
    } else {
      bd = read_events_parallel(split);
    }
    return bd.close + 1;  // (the last batch's)
  }

 private:
  static constexpr std::size_t pipeline_depth = 3;  // batches parsed ahead, at most

  void parse_batch(const bounds& where, parsed_batch& p) {
    simdjson_.parse_batch(where, p.b, p.json);
  }

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
      build_batch(batches_[k % pipeline_depth].b);
      std::lock_guard lock(st.m);
      st.built = k + 1;
      st.cv.notify_all();
    }
    if (scan_error) std::rethrow_exception(scan_error);
    return last;
  }

  /// Hands a parsed batch to the sink.
  void build_batch(batch& b) { build_batch(view_of(b), b.where); }
  void build_batch(const batch_view& b, const bounds& where) {
    const bool first = !built_any_;
    built_any_ = true;
    sink_.build(b);
    // Nothing refers to the text before this batch any more (later batches, which a parser
    // thread may be reading, lie after it).
    if (owner_ != nullptr) owner_->release_before(where.open);
    // The array is most of a trace: the sink can reserve room for the rest from what the
    // first batch produced (growing a vector of hundreds of megabytes copies it).
    if (first && !where.last)
      sink_.expect(static_cast<double>(len_ - events_begin_) /
                   static_cast<double>(where.close - events_begin_));
    if (opt_.progress) opt_.progress(where.close, len_);
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
  ///
  /// A text read as it goes (text_window) is read on ahead of each run; a run whose result
  /// depends on a byte not in place yet is read again with more.
  template <class Hold>
  bool read_serial(cursor& at, std::size_t limit, parsed_batch& into, Hold hold) {
    batch& b = into.b;
    b.clear();
    while (at.p < limit) {
      const std::size_t open = at.before;
      const std::size_t room = std::min(limit - at.p, opt_.batch_bytes);
      text_.need(at.p + room);
      const cursor start = at;
      const run_end r = direct_.direct_run(at, at.p + std::max<std::size_t>(room, 1), b);
      // The run looked at the next element's first byte, or after the last at the ']'.
      if ((r == run_end::last ? at.before : at.p) >= text_.end()) {
        b.clear();
        at = start;
        text_.more(at.p);
        continue;
      }
      if (!b.events.empty()) build_read(b, open, at.before, r == run_end::last);
      if (r == run_end::last) return true;
      if (r == run_end::limit) continue;
      if (text_.partial() && !in_place(at)) {  // stuck where the bytes in place end
        text_.more(at.p);
        continue;
      }
      // Through simdjson: a batch from this element.
      [[maybe_unused]] const auto held = hold();
      bounds bd;
      text_.settle(at.p, [&] {
        splitter split(buf_, len_, opt_.batch_bytes, at.before, at.p);
        split.next(bd);
        return bd.last ? bd.close : scan_.skip_space(bd.close + 1);  // what next() looked at
      });
      parse_batch(bd, into);
      build_batch(b);
      b.clear();
      at = {bd.close, bd.last ? bd.close + 1 : scan_.skip_space(bd.close + 1)};
      if (bd.last) return true;
    }
    return false;
  }

  /// Whether the element at `at.p`, the separator after it and the first byte after that are
  /// in place (what the direct path and the splitter look at).
  [[nodiscard]] bool in_place(const cursor& at) const {
    try {
      const std::size_t sep = scan_.skip_space(scan_.skip_value(at.p, max_event_depth));
      const std::size_t last = sep < len_ && buf_[sep] == ',' ? scan_.skip_space(sep + 1) : sep;
      return last < text_.end();
    } catch (const input_error&) {
      return false;
    }
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
      if (guess_element(buf_, len_, from, g) && g.p > starts.back().p) starts.push_back(g);
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
        c.end = direct_.direct_run(c.to, limit_of(k), b);
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
    parsed_batch& serial = batches_.emplace_back();
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

  std::span<char> buf_;
  std::size_t len_;
  const read_options& opt_;
  json_scanner scan_;
  trace_text* owner_;
  text_window text_;
  record_sink& sink_;
  direct_reader direct_;
  simdjson_reader simdjson_;
  std::size_t events_begin_ = 0;  // the traceEvents array's '['
  bool built_any_ = false;        // a batch of events was built (the next is not the first)
  std::vector<parsed_batch> batches_;
};

}  // namespace detail::chrome_trace
TRACEMODEL_END_NAMESPACE
