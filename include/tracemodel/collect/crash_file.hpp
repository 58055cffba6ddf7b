// tracemodel/collect — the crash file: a live queue's blocks in a file-backed shared mapping
// (`live_queue_options::crash_file`), laid out so that another process can read them after any
// death of the recorder, or while it runs (collect/crash_recover.hpp, `tracemodel recover`).
//
// The file: a header (the format's magic and version, the queue's sizes and features, the
// process, the clock's sync points, the names of the value traits' dtypes), the held areas (the
// ops the consumer holds open across drains and those carried out of overwritten blocks, each
// area in two slots written in turn) and `blocks` slots, each a block's header, its records, its
// names and its side words. Every store the recording threads make goes to the mapping, so the
// kernel's page cache has it when the process dies, however it dies; no system call is made per
// record. A block's header says whether it is free (drained), current (a thread writes it) or
// sealed, and its generation; its published word says how many records and side words are
// whole: a record is announced (bit 31) before it is written and published after, so that a
// record the death cut is recognised and counted, never read.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "tracemodel/collect/clock.hpp"
#include "tracemodel/collect/records.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/os.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define TRACEMODEL_HAS_CRASH_FILE 1
#else
#define TRACEMODEL_HAS_CRASH_FILE 0
#endif

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

inline constexpr std::uint64_t crash_magic = 0x314853524344'4d54ULL;  // "TMDCRSH1"
inline constexpr std::uint32_t crash_version = 1;
inline constexpr std::uint64_t crash_page = 4096;
inline constexpr std::uint32_t crash_max_points = 1024;
inline constexpr std::uint32_t crash_dtype_bytes = 16;
/// The published word's bit saying that the record at its count is being written.
inline constexpr std::uint64_t crash_writing = std::uint64_t{1} << 31;

/// The features a queue records (the header's `features`).
inline constexpr std::uint32_t crash_inputs = 1, crash_call_stack = 2, crash_modules = 4,
                               crash_extra_args = 8;
/// A block slot's state (the low byte of its state word; the generation above).
enum class crash_state : std::uint8_t { free = 0, current = 1, sealed = 2, busy = 3 };

struct crash_header {
  std::uint64_t magic;
  std::uint32_t version, header_bytes;
  std::uint64_t file_bytes;
  std::uint32_t block_records, name_bytes, side_words, blocks;
  std::uint64_t block_stride, blocks_offset;
  std::uint64_t held_offset, held_slot_bytes;  ///< two areas of two slots each
  std::uint32_t features, ticks_are_ns;
  std::int64_t pid;
  std::uint64_t base;  ///< the mapping's address in the recorder
  std::int64_t created_ns;
  char process_name[64];
  /// What the queue lost (dropped, evicted), added as it loses them.
  std::atomic<std::uint64_t> lost_ops, lost_ends;
  /// The clock's sync points (the consumer's conversion), under a sequence word (odd: writing).
  std::atomic<std::uint64_t> points_seq;
  std::uint64_t points;
  clock_sync_point point[crash_max_points];
  char dtypes[256][crash_dtype_bytes];  ///< the value traits' dtype names, when inputs are kept
};

/// A block slot's header: one line for the state, one for the published word that the
/// recording thread stores at every record.
struct crash_block {
  std::atomic<std::uint64_t> state;  ///< crash_state | generation << 8
  std::uint64_t id_start, tid;
  std::atomic<std::uint32_t> names_used;  ///< bytes of name entries written
  std::uint32_t pad_;
  std::uint64_t line_[4];
  std::atomic<std::uint64_t> published;  ///< records (bit 31: one being written) | side << 32
  std::uint64_t line2_[7];
};
static_assert(sizeof(crash_block) == 128);
inline constexpr std::uint64_t crash_block_header = 128;

/// A held area: which slot is whole (`active`, its generation above bit 0) and the slots, each
/// a count of words then the words: ops, ends and side entries (`crash_held_writer`).
struct crash_held_area {
  std::atomic<std::uint64_t> active;
  std::uint64_t pad_[7];
};

inline std::uint64_t crash_round(std::uint64_t n, std::uint64_t to) {
  return (n + to - 1) / to * to;
}

/// The layout a queue of these sizes has.
struct crash_layout {
  std::uint64_t blocks_offset, block_stride, held_offset, held_slot_bytes, file_bytes;
  static crash_layout of(std::uint32_t block_records, std::uint32_t name_bytes,
                         std::uint32_t side_words, std::uint32_t blocks) {
    crash_layout l{};
    l.held_offset = crash_round(sizeof(crash_header), crash_page);
    l.held_slot_bytes = 256 * 1024;
    l.blocks_offset = l.held_offset + 2 * (sizeof(crash_held_area) + 2 * l.held_slot_bytes);
    l.blocks_offset = crash_round(l.blocks_offset, crash_page);
    l.block_stride = crash_round(crash_block_header + std::uint64_t{block_records} * 64 +
                                     crash_round(name_bytes, 8) + std::uint64_t{side_words} * 8,
                                 crash_page);
    l.file_bytes = l.blocks_offset + l.block_stride * blocks;
    return l;
  }
};

/// The held areas' wire: one op (its record's fields and name), one end, side words.
struct crash_held_writer {
  std::uint64_t* p;
  std::uint64_t room, used = 0;
  bool full = false;
  bool put(std::uint64_t w) {
    if (used == room) return !(full = true);
    p[used++] = w;
    return true;
  }
  void op(std::uint64_t id, std::uint64_t tid, approx_time start, std::string_view name,
          std::int64_t seq, std::uint64_t fwd, std::int64_t debug, op_scope scope,
          std::uint8_t flags) {
    const std::uint64_t n = (name.size() + 7) / 8;
    if (room - used < 8 + n) {
      full = true;
      return;
    }
    put(1 | std::uint64_t{static_cast<std::uint8_t>(scope)} << 8 | std::uint64_t{flags} << 16 |
        std::uint64_t{name.size()} << 32);
    put(id);
    put(tid);
    put(start);
    put(static_cast<std::uint64_t>(seq));
    put(fwd);
    put(static_cast<std::uint64_t>(debug));
    if (n > 0) {
      p[used + n - 1] = 0;
      std::memcpy(p + used, name.data(), name.size());
      used += n;
    }
    put(0);  // (the op's entry ends here)
  }
  void end(std::uint64_t id, approx_time end, std::uint64_t tid, bool only_if_open) {
    if (room - used < 4) {
      full = true;
      return;
    }
    put(2 | std::uint64_t{only_if_open} << 8);
    put(id);
    put(end);
    put(tid);
  }
  void side(const std::uint64_t* w, std::size_t n) {
    if (room - used < 2 + n) {
      full = true;
      return;
    }
    put(3 | std::uint64_t{n} << 8);
    put(0);
    std::memcpy(p + used, w, n * sizeof *w);
    used += n;
  }
};

/// The recording process's crash file: created at the queue's start, mapped for its life.
class crash_mapping {
 public:
  crash_mapping(const std::string& path, std::uint32_t block_records, std::uint32_t name_bytes,
                std::uint32_t side_words, std::uint32_t blocks, std::uint32_t features,
                bool ticks_are_ns) {
#if TRACEMODEL_HAS_CRASH_FILE
    const crash_layout l = crash_layout::of(block_records, name_bytes, side_words, blocks);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "crash file " + path);
    if (::ftruncate(fd, static_cast<off_t>(l.file_bytes)) != 0) {
      const int e = errno;
      ::close(fd);
      throw std::system_error(e, std::generic_category(), "crash file " + path);
    }
    void* m = ::mmap(nullptr, l.file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED)
      throw std::system_error(errno, std::generic_category(), "crash file " + path);
    base_ = static_cast<char*>(m);
    bytes_ = l.file_bytes;
    // Every page touched now (the recording threads take no fault for it later); zeros.
    std::memset(base_, 0, bytes_);
    crash_header& h = header();
    h.version = crash_version;
    h.header_bytes = sizeof(crash_header);
    h.file_bytes = l.file_bytes;
    h.block_records = block_records;
    h.name_bytes = name_bytes;
    h.side_words = side_words;
    h.blocks = blocks;
    h.block_stride = l.block_stride;
    h.blocks_offset = l.blocks_offset;
    h.held_offset = l.held_offset;
    h.held_slot_bytes = l.held_slot_bytes;
    h.features = features;
    h.ticks_are_ns = ticks_are_ns ? 1 : 0;
    h.pid = process_id();
    h.base = reinterpret_cast<std::uint64_t>(base_);
    h.created_ns = wall_ns();
    process_name(h.process_name, sizeof h.process_name);
    std::atomic_ref(h.magic).store(crash_magic, std::memory_order_release);  // (the rest before)
#else
    (void)path, (void)block_records, (void)name_bytes, (void)side_words, (void)blocks,
        (void)features, (void)ticks_are_ns;
    throw std::runtime_error("crash files need a POSIX system");
#endif
  }
  crash_mapping(const crash_mapping&) = delete;
  crash_mapping& operator=(const crash_mapping&) = delete;
  ~crash_mapping() {
#if TRACEMODEL_HAS_CRASH_FILE
    ::munmap(base_, bytes_);
#endif
  }

  [[nodiscard]] crash_header& header() const { return *reinterpret_cast<crash_header*>(base_); }
  [[nodiscard]] crash_block& block(std::uint32_t k) const {
    return *reinterpret_cast<crash_block*>(slot(k));
  }
  [[nodiscard]] op_record* records(std::uint32_t k) const {
    return reinterpret_cast<op_record*>(slot(k) + crash_block_header);
  }
  [[nodiscard]] char* names(std::uint32_t k) const {
    return slot(k) + crash_block_header + std::uint64_t{header().block_records} * 64;
  }
  [[nodiscard]] std::uint64_t* side(std::uint32_t k) const {
    return reinterpret_cast<std::uint64_t*>(names(k) + crash_round(header().name_bytes, 8));
  }

  /// The file of a queue with these features, value traits (their dtype names kept for a
  /// reader that does not know them) and clock.
  template <auto Features, class ValueTraits, class Clock>
  static std::unique_ptr<crash_mapping> open(const std::string& path, std::uint32_t block_records,
                                             std::uint32_t name_bytes, std::uint32_t side_words,
                                             std::uint32_t blocks) {
    auto m = std::make_unique<crash_mapping>(path, block_records, name_bytes, side_words, blocks,
                                             (Features.inputs ? crash_inputs : 0) |
                                                 (Features.call_stack ? crash_call_stack : 0) |
                                                 (Features.module_hierarchy ? crash_modules : 0) |
                                                 (Features.extra_args ? crash_extra_args : 0),
                                             Clock::ticks_are_ns);
    if constexpr (Features.inputs)
      m->dtypes([](std::uint8_t c) { return std::string_view(ValueTraits::dtype_name(c)); });
    return m;
  }

  /// The value traits' dtype names, for a reader that does not know them.
  template <class Name>
  void dtypes(Name&& name) {
    for (unsigned c = 0; c < 256; ++c) {
      const std::string_view n = name(static_cast<std::uint8_t>(c));
      std::memcpy(header().dtypes[c], n.data(),
                  std::min<std::size_t>(n.size(), crash_dtype_bytes - 1));
    }
  }

  /// The consumer's sync points (the last `crash_max_points`).
  void points(const std::vector<clock_sync_point>& p) {
    crash_header& h = header();
    const std::size_t n = std::min<std::size_t>(p.size(), crash_max_points);
    // Odd while the points are written (an acquiring read-modify-write: they come after it).
    const std::uint64_t s = h.points_seq.fetch_add(1, std::memory_order_acq_rel);
    std::copy(p.end() - static_cast<std::ptrdiff_t>(n), p.end(), h.point);
    h.points = n;
    h.points_seq.store(s + 2, std::memory_order_release);
  }

  /// A block slot taken by a thread: emptied, then current with a new generation (a reader
  /// never sees the new ids with the old count).
  void take(std::uint32_t k, std::uint64_t id_start, std::uint64_t tid) {
    crash_block& b = block(k);
    const std::uint64_t gen = (b.state.load(std::memory_order_relaxed) >> 8) + 1;
    b.state.store(static_cast<std::uint64_t>(crash_state::busy) | gen << 8,
                  std::memory_order_release);
    b.published.store(0, std::memory_order_release);
    b.names_used.store(0, std::memory_order_release);
    b.id_start = id_start;
    b.tid = tid;
    b.state.store(static_cast<std::uint64_t>(crash_state::current) | gen << 8,
                  std::memory_order_release);
  }
  void set(std::uint32_t k, crash_state s) {
    crash_block& b = block(k);
    const std::uint64_t gen = b.state.load(std::memory_order_relaxed) >> 8;
    b.state.store(static_cast<std::uint64_t>(s) | gen << 8, std::memory_order_release);
  }

  /// Writes a held area's next slot with `fill(crash_held_writer&)`, then makes it the whole one.
  template <class Fill>
  void held(std::uint64_t area, Fill&& fill) {
    crash_header& h = header();
    char* a = base_ + h.held_offset + area * (sizeof(crash_held_area) + 2 * h.held_slot_bytes);
    auto& head = *reinterpret_cast<crash_held_area*>(a);
    const std::uint64_t active = head.active.load(std::memory_order_relaxed);
    const std::uint64_t next = (active + 1) & 1;
    auto* words =
        reinterpret_cast<std::uint64_t*>(a + sizeof(crash_held_area) + next * h.held_slot_bytes);
    crash_held_writer w{words + 2, h.held_slot_bytes / 8 - 2};
    fill(w);
    words[0] = w.used;
    words[1] = w.full ? 1 : 0;  // something did not fit: counted as lost by a reader
    head.active.store((active + 1), std::memory_order_release);
  }

 private:
  [[nodiscard]] char* slot(std::uint32_t k) const {
    const crash_header& h = header();
    return base_ + h.blocks_offset + std::uint64_t{k} * h.block_stride;
  }
  static void process_name(char* to, std::size_t room) {
#if defined(__linux__)
    const int fd = ::open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    const ssize_t n = ::read(fd, to, room - 1);
    ::close(fd);
    if (n > 0 && to[n - 1] == '\n') to[n - 1] = 0;
#else
    (void)to, (void)room;
#endif
  }

  char* base_ = nullptr;
  std::size_t bytes_ = 0;
};

/// A name entry at `p` (room made): the name's address in this process (`copy`: of the bytes
/// written here), its length, its bytes padded to 8. Returns the bytes written.
inline std::string_view crash_name_entry(char* p, std::string_view name, bool copy) {
  const std::uint64_t head[2]{reinterpret_cast<std::uint64_t>(copy ? p + 16 : name.data()),
                              name.size()};
  std::memcpy(p, head, sizeof head);
  std::memset(p + 16 + (name.size() + 7) / 8 * 8 - 8, 0, name.empty() ? 0 : 8);
  std::memcpy(p + 16, name.data(), name.size());
  return {p + 16, name.size()};
}

/// The consumer's held area: the ops it holds open, the ends before their op, their side entries.
template <class Pairing, class SideIndex>
void crash_save_held(crash_mapping& m, const Pairing& pairing, const SideIndex& side) {
  m.points(pairing.points());
  m.held(0, [&](crash_held_writer& w) {
    pairing.for_each_held(
        [&](const auto& p) {
          w.op(p.id, p.tid, p.start, p.name, p.sequence_number, p.fwd_thread_id, p.debug_handle,
               p.scope, p.flags);
        },
        [&](std::uint64_t id, const auto& e) { w.end(id, e.end, e.tid, false); });
    if constexpr (requires { side.for_each_kept([](const std::vector<std::uint64_t>&) {}); })
      side.for_each_kept([&](const std::vector<std::uint64_t>& v) { w.side(v.data(), v.size()); });
  });
}

/// The queue's held area: the ops carried out of overwritten blocks, their ends and side
/// entries.
template <class Carried, class Ends>
void crash_save_carried(crash_mapping& m, const Carried& carried, const Ends& ends,
                        const std::vector<std::uint64_t>& side) {
  m.held(1, [&](crash_held_writer& w) {
    for (const auto& p : carried)
      w.op(p.id, p.tid, p.start, p.name, p.sequence_number, p.fwd_thread_id, p.debug_handle,
           p.scope, p.flags);
    for (const auto& e : ends) w.end(e.id, e.end.end, e.end.tid, e.only_if_open);
    if (!side.empty()) w.side(side.data(), side.size());
  });
}

}  // namespace detail
TRACEMODEL_END_NAMESPACE
