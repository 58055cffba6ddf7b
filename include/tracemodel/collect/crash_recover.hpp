// tracemodel/collect — reading a live queue's crash file (collect/crash_file.hpp) after its
// recorder died, or while it runs: every whole record becomes an event, as a drain would have
// made it; what cannot be read is counted, never guessed.
//
//   tracemodel::recovered_trace r = tracemodel::recover_crash_file("run.crash");
//   // r.table: the ops not drained (ended, or unfinished with their thread's last time)
//   // r.counts: blocks read, records, torn records, lost blocks, unfinished ops, ...
//
// A running recorder's file is read block by block: a block's header is read before and after
// its records are copied, and a block that changed meanwhile is read again (a snapshot that is
// consistent per block). Bad or cut files: an `input_error` when the header cannot be trusted,
// else counted losses (`lost_block`, `torn_record` anomalies and `recover_counts`).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracemodel/collect/clock.hpp"
#include "tracemodel/collect/crash_file.hpp"
#include "tracemodel/collect/kind_records.hpp"
#include "tracemodel/collect/live_blocks.hpp"
#include "tracemodel/collect/live_side.hpp"
#include "tracemodel/collect/records.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/assert.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/detail/radix_sort.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// What a recovery read and what it could not.
struct recover_counts {
  std::uint64_t blocks = 0;         ///< blocks read (being written or sealed, not drained)
  std::uint64_t records = 0;        ///< whole records read (ops and late ends)
  std::uint64_t ops = 0;            ///< ops in the table
  std::uint64_t other = 0;          ///< allocations, out-of-memory and device records in it
  std::uint64_t unfinished = 0;     ///< ops begun and not ended (their thread's last time)
  std::uint64_t torn_records = 0;   ///< records being written when the file was read (or the
                                    ///< recorder died): counted, not read
  std::uint64_t lost_blocks = 0;    ///< blocks cut off by the file's end, inconsistent, or
                                    ///< changing faster than they could be read
  std::uint64_t lost_held = 0;      ///< held areas (ops the consumer held) unreadable or overfull
  std::uint64_t orphan_ends = 0;    ///< ends whose op is not in the file (drained, or lost)
  std::uint64_t ended_twice = 0;    ///< second ends of an op (the first kept)
  std::uint64_t unknown_names = 0;  ///< records whose name entry is missing: named "?"
  std::uint64_t lost_ops = 0;       ///< ops the recorder lost before (its cap), as it counted
  std::uint64_t lost_ends = 0;      ///< ends the recorder lost before (its cap)
};

struct recovered_trace {
  event_table table;
  recover_counts counts;
  std::int64_t pid = 0;
  std::string process_name;
  std::int64_t created_ns = 0;  ///< when the recorder created the file (ns since the epoch)
};

namespace detail {

/// The dtype names a crash file keeps, as value traits for the side decoder.
struct crash_dtype_names {
  static inline thread_local const char (*table)[crash_dtype_bytes] = nullptr;
  static std::string_view dtype_name(std::uint8_t c) {
    if (table == nullptr) return {};
    const char* n = table[c];
    return {n, strnlen(n, crash_dtype_bytes)};
  }
};
/// Ticks of a recorder's clock, converted through its file's points.
struct crash_file_ticks {
  static constexpr bool ticks_are_ns = false;
  static approx_time now() noexcept { return 0; }
};

class crash_reader {
 public:
  crash_reader(const char* base, std::size_t size) : p_(base), size_(size) {}

  recovered_trace read() {
    header();
    held();
    std::size_t taken = 0;  // (room for the blocks that hold records)
    for (std::uint32_t k = 0; k < blocks_; ++k)
      taken +=
          (shared(layout_.blocks_offset + std::uint64_t{k} * layout_.block_stride) & 0xff) != 0;
    ops_.reserve(taken * h_.block_records);
    for (std::uint32_t k = 0; k < blocks_; ++k) block(k);
    return finish();
  }

 private:
  struct op {
    std::uint64_t tid = 0;
    approx_time start = 0, end = 0;
    std::uint64_t end_tid = 0;
    std::int64_t seq = -1, debug = -1;
    std::uint64_t fwd = 0;
    std::uint64_t id = 0;  ///< its correlation id
    name_id name{};
    op_scope scope = op_scope::function;
    std::uint8_t flags = 0;
    bool valid = false;  ///< an op (a late end's slot is not)
  };
  /// A block's ops in `ops_`: its records' slots, by id.
  struct id_range {
    std::uint64_t id_start;
    std::uint32_t first, n;
  };
  struct name_entry {
    std::uint64_t len;
    name_id id;
  };
  struct end_rec {
    std::uint64_t id;
    approx_time end;
    std::uint64_t tid;
    bool only_if_open;
  };

  template <class T>
  T at(std::size_t off) const {
    T v;
    std::memcpy(&v, p_ + off, sizeof v);
    return v;
  }
  /// A word that another process may be writing (a running recorder's file): an acquiring load
  /// (the offsets of these words are multiples of 8 in memory that is 8-aligned).
  std::uint64_t shared(std::size_t off) const {
    auto& w = *reinterpret_cast<std::uint64_t*>(const_cast<char*>(p_ + off));
    return std::atomic_ref<std::uint64_t>(w).load(std::memory_order_acquire);
  }

  void header() {
    if (size_ < sizeof(crash_header))
      throw input_error("not a tracemodel crash file: " + std::to_string(size_) +
                        " bytes, shorter than its header");
    if (at<std::uint64_t>(offsetof(crash_header, magic)) != crash_magic)
      throw input_error("not a tracemodel crash file (no magic number)", 0);
    if (const auto v = at<std::uint32_t>(offsetof(crash_header, version)); v != crash_version)
      throw input_error("crash file of format version " + std::to_string(v) + "; this reads " +
                            std::to_string(crash_version),
                        offsetof(crash_header, version));
    h_.block_records = at<std::uint32_t>(offsetof(crash_header, block_records));
    h_.name_bytes = at<std::uint32_t>(offsetof(crash_header, name_bytes));
    h_.side_words = at<std::uint32_t>(offsetof(crash_header, side_words));
    h_.blocks = at<std::uint32_t>(offsetof(crash_header, blocks));
    if (h_.block_records < 2 || h_.block_records > (1u << 24) || h_.name_bytes < 64 ||
        h_.name_bytes > (1u << 26) || h_.side_words > (1u << 28) || h_.blocks > (1u << 24))
      throw input_error("crash file header: sizes out of range",
                        offsetof(crash_header, block_records));
    const crash_layout l =
        crash_layout::of(h_.block_records, h_.name_bytes, h_.side_words, h_.blocks);
    if (at<std::uint64_t>(offsetof(crash_header, block_stride)) != l.block_stride ||
        at<std::uint64_t>(offsetof(crash_header, blocks_offset)) != l.blocks_offset ||
        at<std::uint64_t>(offsetof(crash_header, held_offset)) != l.held_offset ||
        at<std::uint64_t>(offsetof(crash_header, held_slot_bytes)) != l.held_slot_bytes)
      throw input_error("crash file header: its layout does not follow from its sizes",
                        offsetof(crash_header, block_stride));
    layout_ = l;
    // Blocks past the file's end (a cut file): counted as lost.
    blocks_ = h_.blocks;
    if (size_ < l.file_bytes) {
      const std::uint64_t whole =
          size_ <= l.blocks_offset ? 0 : (size_ - l.blocks_offset) / l.block_stride;
      blocks_ = static_cast<std::uint32_t>(std::min<std::uint64_t>(whole, h_.blocks));
      counts_.lost_blocks += h_.blocks - blocks_;
    }
    out_.pid = at<std::int64_t>(offsetof(crash_header, pid));
    out_.created_ns = at<std::int64_t>(offsetof(crash_header, created_ns));
    const char* name = p_ + offsetof(crash_header, process_name);
    out_.process_name.assign(name, strnlen(name, sizeof crash_header::process_name));
    counts_.lost_ops = shared(offsetof(crash_header, lost_ops));
    counts_.lost_ends = shared(offsetof(crash_header, lost_ends));
    dtypes_ =
        reinterpret_cast<const char(*)[crash_dtype_bytes]>(p_ + offsetof(crash_header, dtypes));
    points();
  }

  /// The sync points (read again while the recorder writes them).
  void points() {
    std::vector<clock_sync_point> pts;
    for (int attempt = 0; attempt < 100; ++attempt) {
      const std::uint64_t s = shared(offsetof(crash_header, points_seq));
      const std::uint64_t n = std::min<std::uint64_t>(
          at<std::uint64_t>(offsetof(crash_header, points)), crash_max_points);
      pts.resize(n);
      if (n > 0)
        std::memcpy(pts.data(), p_ + offsetof(crash_header, point), n * sizeof(clock_sync_point));
      if ((s & 1) == 0 && shared(offsetof(crash_header, points_seq)) == s) break;
    }
    std::erase_if(pts, [](const clock_sync_point& q) { return q.wall <= 0; });
    for (std::size_t k = 1; k < pts.size(); ++k)
      if (pts[k].approx <= pts[k - 1].approx)
        throw input_error("crash file header: its clock's sync points are out of order",
                          offsetof(crash_header, point));
    if (pts.empty())
      throw input_error("crash file header: no clock sync point", offsetof(crash_header, point));
    ns_ticks_ = at<std::uint32_t>(offsetof(crash_header, ticks_are_ns)) != 0;
    points_ = std::move(pts);
  }

  /// The held areas: ops the consumer held open (and ends before their op, side entries), and
  /// ops carried out of overwritten blocks.
  void held() {
    for (std::uint64_t area = 0; area < 2; ++area) {
      const std::uint64_t a =
          layout_.held_offset + area * (sizeof(crash_held_area) + 2 * layout_.held_slot_bytes);
      if (a + sizeof(crash_held_area) + 2 * layout_.held_slot_bytes > size_) {
        ++counts_.lost_held;
        continue;
      }
      const std::uint64_t active = shared(a);
      if (active == 0) continue;  // never written
      const std::uint64_t slot = active & 1;
      const std::size_t base = a + sizeof(crash_held_area) + slot * layout_.held_slot_bytes;
      const std::uint64_t room = layout_.held_slot_bytes / 8 - 2;
      std::vector<std::uint64_t> w(std::min<std::uint64_t>(at<std::uint64_t>(base), room));
      if (at<std::uint64_t>(base) > room || at<std::uint64_t>(base + 8) != 0) ++counts_.lost_held;
      if (!w.empty()) std::memcpy(w.data(), p_ + base + 16, w.size() * 8);
      if (shared(a) != active) {  // rewritten while read: the other slot is whole now
        ++counts_.lost_held;
        continue;
      }
      if (!held_words(w)) ++counts_.lost_held;
    }
  }
  bool held_words(const std::vector<std::uint64_t>& w) {
    for (std::size_t k = 0; k < w.size();) {
      const std::uint64_t head = w[k];
      switch (head & 0xff) {
        case 1: {  // an op
          const std::uint64_t len = head >> 32;
          const std::uint64_t words = (len + 7) / 8;
          if (w.size() - k < 8 + words) return false;
          op o;
          o.scope = static_cast<op_scope>((head >> 8) & 0xff);
          o.flags = static_cast<std::uint8_t>(head >> 16);
          o.id = w[k + 1];
          o.tid = w[k + 2];
          o.start = w[k + 3];
          o.seq = static_cast<std::int64_t>(w[k + 4]);
          o.fwd = w[k + 5];
          o.debug = static_cast<std::int64_t>(w[k + 6]);
          o.name = out_.table.strings.intern(
              std::string_view(reinterpret_cast<const char*>(w.data() + k + 7), len));
          o.valid = true;
          held_.push_back(o);  // (a block's copy of it, if any, is taken instead)
          k += 8 + words;
          break;
        }
        case 2:  // an end
          if (w.size() - k < 4) return false;
          ends_.push_back({w[k + 1], w[k + 2], w[k + 3], ((head >> 8) & 1) != 0});
          k += 4;
          break;
        case 3: {  // side entries
          const std::uint64_t n = head >> 8;
          if (w.size() - k < 2 + n) return false;
          side_.insert(side_.end(), w.begin() + static_cast<std::ptrdiff_t>(k + 2),
                       w.begin() + static_cast<std::ptrdiff_t>(k + 2 + n));
          k += 2 + n;
          break;
        }
        default:
          return false;
      }
    }
    return true;
  }

  /// One block slot: read whole, again when it changed meanwhile.
  void block(std::uint32_t k) {
    const std::size_t at_block = layout_.blocks_offset + std::uint64_t{k} * layout_.block_stride;
    for (int attempt = 0; attempt < 8; ++attempt) {
      const std::uint64_t s1 = shared(at_block + offsetof(crash_block, state));
      const auto state = static_cast<crash_state>(s1 & 0xff);
      if (state == crash_state::free || state == crash_state::busy) return;
      if (state != crash_state::current && state != crash_state::sealed) {
        ++counts_.lost_blocks;
        return;
      }
      const std::uint64_t id_start = at<std::uint64_t>(at_block + offsetof(crash_block, id_start));
      const std::uint64_t tid = at<std::uint64_t>(at_block + offsetof(crash_block, tid));
      const std::uint64_t pub = shared(at_block + offsetof(crash_block, published));
      const auto names_used =
          static_cast<std::uint32_t>(shared(at_block + offsetof(crash_block, names_used)));
      const auto n =
          static_cast<std::uint32_t>(pub) & static_cast<std::uint32_t>(crash_writing - 1);
      const auto side = static_cast<std::uint32_t>(pub >> 32);
      if (n > h_.block_records || side > h_.side_words || names_used > h_.name_bytes) {
        ++counts_.lost_blocks;
        return;
      }
      const std::size_t recs = at_block + crash_block_header;
      const std::size_t names = recs + std::uint64_t{h_.block_records} * 64;
      const std::size_t words = names + crash_round(h_.name_bytes, 8);
      // Read where it is, then taken back if the block was recycled meanwhile.
      const std::size_t ops = ops_.size(), ends = ends_.size(), side_words = side_.size();
      const std::uint64_t unknown = counts_.unknown_names;
      take_block(id_start, tid, {reinterpret_cast<const op_record*>(p_ + recs), n},
                 {p_ + names, names_used},
                 {reinterpret_cast<const std::uint64_t*>(p_ + words), side});
      if (shared(at_block + offsetof(crash_block, state)) != s1) {
        ops_.resize(ops);
        ends_.resize(ends);
        side_.resize(side_words);
        while (!side_spans_.empty() && side_spans_.back().at >= side_words) side_spans_.pop_back();
        ranges_.pop_back();
        counts_.unknown_names = unknown;
        continue;
      }
      counts_.records += n;
      ++counts_.blocks;
      if ((pub & crash_writing) != 0) ++counts_.torn_records;
      return;
    }
    ++counts_.lost_blocks;
  }

  void take_block(std::uint64_t id_start, std::uint64_t tid, std::span<const op_record> records,
                  std::string_view names, std::span<const std::uint64_t> block_side) {
    // Its names: address in the recorder, length, bytes.
    names_map_.clear();
    for (std::size_t k = 0; k + 16 <= names.size();) {
      std::uint64_t head[2];
      std::memcpy(head, names.data() + k, sizeof head);
      if (head[1] > names.size() - k - 16) break;  // cut: the rest is not read
      const std::string_view text(names.data() + k + 16, static_cast<std::size_t>(head[1]));
      names_map_.insert_or_assign(head[0], {head[1], out_.table.strings.intern(text)});
      k += 16 + static_cast<std::size_t>((head[1] + 7) / 8 * 8);
    }
    approx_time last = 0;
    const auto first = static_cast<std::uint32_t>(ops_.size());
    ranges_.push_back({id_start, first, static_cast<std::uint32_t>(records.size())});
    struct cached {
      std::uint64_t ptr = 1;  // (no name's address is odd... and 1 is none)
      name_entry e{};
    };
    std::array<cached, 16> cache{};
    for (std::size_t k = 0; k < records.size(); ++k) {
      const op_record& r = records[k];
      if ((r.flags & kind_flag) != 0) {  // another kind's record (its slots have no op)
        ops_.push_back(op{});
        if (const std::uint32_t n = slots_of(kind_of(r)); n > 0 && records.size() - k >= n)
          take_kind(records.data() + k, tid, last);
        continue;
      }
      if ((r.flags & late_end_flag) != 0) {
        ends_.push_back({r.start, r.end, r.end_tid, false});
        last = std::max(last, r.end);
        ops_.push_back(op{});  // (the slot of its id)
        continue;
      }
      const auto ptr = reinterpret_cast<std::uint64_t>(r.name);
      cached& c = cache[(ptr >> 3) & 15];
      if (c.ptr != ptr) {
        const name_entry* e = names_map_.find(ptr);
        c = {ptr, e != nullptr ? *e : name_entry{~std::uint64_t{0}, {}}};
      }
      name_id name = c.e.id;
      if (c.e.len != r.name_len) {
        ++counts_.unknown_names;
        name = out_.table.strings.intern("?");
      }
      ops_.push_back(op{tid, r.start, r.end, r.end_tid, r.sequence_number, r.debug_handle,
                        r.fwd_thread_id, id_start + k, name, r.scope, r.flags, true});
      last = std::max({last, r.start, r.end});
    }
    approx_time* thread_last = last_.try_emplace(tid, last).first;
    *thread_last = std::max(*thread_last, last);
    // Side entries, whole ones only.
    std::size_t whole = 0;
    while (whole + 2 <= block_side.size() &&
           2 + (block_side[whole] >> 8) <= block_side.size() - whole)
      whole += static_cast<std::size_t>(2 + (block_side[whole] >> 8));
    side_spans_.push_back({id_start, side_.size(), whole});
    side_.insert(side_.end(), block_side.begin(),
                 block_side.begin() + static_cast<std::ptrdiff_t>(whole));
  }

  /// An allocation, out-of-memory or device record.
  void take_kind(const op_record* slots, std::uint64_t tid, approx_time& last) {
    kind_rec& k = kinds_.emplace_back();
    k.kind = kind_of(slots[0]);
    k.tid = tid;
    if (k.kind == live_kind::allocation) {
      k.a = get_kind<allocation_record>(slots);
      last = std::max(last, k.a.time);
    } else if (k.kind == live_kind::out_of_memory) {
      k.o = get_kind<oom_record>(slots);
      last = std::max(last, k.o.time);
    } else {
      k.d = get_kind<device_record>(slots);
      for (bool* b : {&k.d.host_thread, &k.d.flow_start}) {  // (bytes of a file: any value)
        unsigned char c = 0;
        std::memcpy(&c, b, 1);
        *b = c != 0;
      }
      const name_entry* e = names_map_.find(reinterpret_cast<std::uint64_t>(k.d.name));
      if (e != nullptr && e->len == k.d.name_len) {
        k.name = e->id;
      } else {
        ++counts_.unknown_names;
        k.name = out_.table.strings.intern("?");
      }
    }
  }

  /// The op of `id`: in a block read, or held; null when neither has it.
  op* find(std::uint64_t id) {
    const auto it =
        std::upper_bound(ranges_.begin(), ranges_.end(), id,
                         [](std::uint64_t x, const id_range& r) { return x < r.id_start; });
    if (it != ranges_.begin()) {
      const id_range& r = *std::prev(it);
      if (id - r.id_start < r.n && ops_[r.first + (id - r.id_start)].valid)
        return &ops_[r.first + (id - r.id_start)];
    }
    if (const std::uint32_t* k = held_index_.find(id); k != nullptr) return &ops_[*k];
    return nullptr;
  }

  recovered_trace finish() {
    std::sort(ranges_.begin(), ranges_.end(),
              [](const id_range& a, const id_range& b) { return a.id_start < b.id_start; });
    for (const op& o : held_)  // the ops held out of drained or overwritten blocks
      if (find(o.id) == nullptr) {
        held_index_.insert_or_assign(o.id, static_cast<std::uint32_t>(ops_.size()));
        ops_.push_back(o);
      }
    for (const end_rec& e : ends_) {
      op* o = find(e.id);
      if (o == nullptr) {
        if (!e.only_if_open) ++counts_.orphan_ends;
      } else if (o->end == 0) {
        o->end = e.end;
        o->end_tid = e.tid;
      } else if (o->end != e.end && !e.only_if_open) {
        ++counts_.ended_twice;
      }
    }
    // In start order (ties: by id); the slots of late ends (no op) last, then dropped.
    approx_time latest = 0;
    for (const op& o : ops_) latest = std::max(latest, o.start);
    struct starts {
      const scratch_vector<op>& ops;
      approx_time none;
      [[nodiscard]] std::size_t size() const noexcept { return ops.size(); }
      std::int64_t operator[](std::size_t i) const noexcept {
        return static_cast<std::int64_t>(ops[i].valid ? ops[i].start : none);
      }
    };
    auto order = stable_order(starts{ops_, latest});
    std::erase_if(order, [&](std::uint32_t k) { return !ops_[k].valid; });
    for (std::size_t i = 0; i + 1 < order.size();) {  // (equal starts: rare)
      std::size_t j = i + 1;
      while (j < order.size() && ops_[order[j]].start == ops_[order[i]].start) ++j;
      if (j - i > 1)
        std::sort(order.begin() + static_cast<std::ptrdiff_t>(i),
                  order.begin() + static_cast<std::ptrdiff_t>(j),
                  [&](std::uint32_t a, std::uint32_t b) { return ops_[a].id < ops_[b].id; });
      i = j;
    }
    event_table& t = out_.table;
    t.events.reserve(order.size());
    live_side_index<true, crash_dtype_names> side;
    crash_dtype_names::table = dtypes_;
    side.begin_part();
    // The held entries first, then the blocks' in the order they were taken (their first ids),
    // as a drain meets them: an op's entries are decoded in that order.
    std::stable_sort(
        side_spans_.begin(), side_spans_.end(),
        [](const side_span& a, const side_span& b) { return a.id_start < b.id_start; });
    std::size_t held_words = side_.size();
    for (const side_span& sp : side_spans_) held_words = std::min(held_words, sp.at);
    side.index_side(side_.data(), held_words);
    for (const side_span& sp : side_spans_) side.index_side(side_.data() + sp.at, sp.n);
    const bool any_side = side.any();
    const bool ns_ticks = ns_ticks_;
    const piecewise_time_converter<steady_clock_source> ns(points_);
    const piecewise_time_converter<crash_file_ticks> ticks(points_);
    auto to_ns = [&](approx_time x) { return ns_ticks ? ns(x) : ticks(x); };
    for (const std::uint32_t k : order) {
      const op& o = ops_[k];
      const std::uint64_t id = o.id;
      auto& e = t.events.emplace_back();
      e.start_ns = to_ns(o.start);
      e.tid = o.tid;
      e.pid = out_.pid;
      auto& f = e.template new_fields<event_kind::op>();
      f.name = o.name;
      f.scope = o.scope;
      f.flags = static_cast<std::uint8_t>(o.flags & ~late_end_flag);
      f.sequence_number = o.seq;
      f.fwd_thread_id = o.fwd;
      f.correlation_id = id;
      f.debug_handle = o.debug;
      if (any_side) side.attach_side(t, e, f, id, false);
      if (o.end == 0) {  // unfinished: its thread's last time
        f.flags |= op_flag::unfinished;
        const approx_time* last = last_.find(o.tid);
        f.end_ns = std::max(e.start_ns, to_ns(std::max(o.start, last != nullptr ? *last : 0)));
        f.end_tid = o.tid;
        t.anomalies.add(anomaly::unfinished_op);
        ++counts_.unfinished;
      } else {
        const std::int64_t end_ns = to_ns(o.end);
        f.end_ns = std::max(e.start_ns, end_ns);
        if (end_ns < e.start_ns) t.anomalies.add(anomaly::end_before_start);
        f.end_tid = o.end_tid;
      }
    }
    crash_dtype_names::table = nullptr;
    counts_.ops = t.events.size();
    device_keys keys;
    for (const kind_rec& k : kinds_) {  // (then all in start order)
      auto& e = t.events.emplace_back();
      e.tid = k.tid;
      e.pid = out_.pid;
      if (k.kind == live_kind::allocation) {
        e.start_ns = to_ns(k.a.time);
        allocation_fields(e, k.a);
      } else if (k.kind == live_kind::out_of_memory) {
        e.start_ns = to_ns(k.o.time);
        oom_fields(e, k.o);
      } else {  // (a host call keeps its OS thread id: the file has no map to the runtime's)
        e.start_ns = to_ns(k.d.start);
        if (!k.d.host_thread) {
          e.tid = k.d.tid;
          e.pid = k.d.pid;
        }
        device_fields(t, e, k.d, k.name, std::max(e.start_ns, to_ns(k.d.end)), keys);
      }
    }
    counts_.other = kinds_.size();
    if (!kinds_.empty())
      std::stable_sort(t.events.begin(), t.events.end(),
                       [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
    t.anomalies.add(anomaly::torn_record, counts_.torn_records);
    t.anomalies.add(anomaly::lost_block, counts_.lost_blocks + counts_.lost_held);
    t.anomalies.add(anomaly::orphan_end, counts_.orphan_ends);
    t.anomalies.add(anomaly::op_ended_twice, counts_.ended_twice);
    t.anomalies.add(anomaly::lost_op, counts_.lost_ops);
    t.anomalies.add(anomaly::lost_end, counts_.lost_ends);
    t.anomalies.add(anomaly::bad_value, counts_.unknown_names);
    out_.counts = counts_;
    return std::move(out_);
  }

  const char* p_;
  std::size_t size_;
  struct {
    std::uint32_t block_records, name_bytes, side_words, blocks;
  } h_{};
  crash_layout layout_{};
  std::uint32_t blocks_ = 0;
  bool ns_ticks_ = false;
  std::vector<clock_sync_point> points_;
  const char (*dtypes_)[crash_dtype_bytes] = nullptr;
  scratch_vector<op> ops_;              ///< every record slot of the blocks read, then held ops
  std::vector<id_range> ranges_;        ///< the blocks' ids
  std::vector<op> held_;                ///< the held areas' ops
  flat_map<std::uint32_t> held_index_;  ///< held ops not in a block: their slot in `ops_`
  flat_map<approx_time> last_;          ///< the last time of each thread
  flat_map<name_entry> names_map_;      ///< the names of the block being read
  std::vector<end_rec> ends_;
  struct kind_rec {
    live_kind kind{};
    std::uint64_t tid = 0;
    allocation_record a{};
    oom_record o{};
    device_record d{};
    name_id name{};
  };
  std::vector<kind_rec> kinds_;  ///< allocations, out-of-memory and device records
  struct side_span {
    std::uint64_t id_start;
    std::size_t at, n;
  };
  std::vector<side_span> side_spans_;  ///< each block's side words in `side_`
  std::vector<std::uint64_t> side_;
  recover_counts counts_;
  recovered_trace out_;
};

}  // namespace detail

/// Recovers the ops of a crash file's bytes (a copy of the file).
inline recovered_trace recover_crash_bytes(std::span<const char> bytes) {
  if (reinterpret_cast<std::uintptr_t>(bytes.data()) % 8 == 0)
    return detail::crash_reader(bytes.data(), bytes.size()).read();
  std::vector<std::uint64_t> aligned((bytes.size() + 7) / 8);
  if (!bytes.empty()) std::memcpy(aligned.data(), bytes.data(), bytes.size());
  return detail::crash_reader(reinterpret_cast<const char*>(aligned.data()), bytes.size()).read();
}

/// Recovers the ops of a crash file, its recorder dead or running (read through a mapping: a
/// running recorder's blocks are read as they are, each consistent).
inline recovered_trace recover_crash_file(const std::string& path) {
#if TRACEMODEL_HAS_CRASH_FILE
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw input_error("cannot open crash file " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw input_error("not a regular file: " + path);
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    throw input_error("empty crash file " + path);
  }
#if defined(MAP_POPULATE)
  const int populate = MAP_POPULATE;  // (its pages mapped at once, not one fault each)
#else
  const int populate = 0;
#endif
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED | populate, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) throw input_error("cannot map crash file " + path);
  struct unmap {
    void* p;
    std::size_t n;
    ~unmap() { ::munmap(p, n); }
  } guard{m, size};
  return detail::crash_reader(static_cast<const char*>(m), size).read();
#else
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error("cannot open crash file " + path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return recover_crash_bytes(bytes);
#endif
}

TRACEMODEL_END_NAMESPACE
