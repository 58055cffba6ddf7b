// tracemodel/collect — the live queue's options, handles and counts (collect/live_queue.hpp).
#pragma once

#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tracemodel/collect/records.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/storage/block_pool.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// What a thread does when it needs a block and the queue holds `max_blocks`.
enum class when_full : std::uint8_t {
  drop_newest,       ///< record nothing until a block is free; count what was dropped
  overwrite_oldest,  ///< take the oldest sealed block (a flight recorder)
  wait,              ///< wait up to `block_timeout` for a free block, then drop
};

struct live_queue_options {
  /// Records per block: a block of the block pool, `TRACEMODEL_BLOCK_BYTES` (64 KiB: 1,024
  /// records), by default.
  std::uint32_t block_records = block_bytes / sizeof(op_record);
  std::uint32_t name_bytes = 16384;  ///< room per block for names copied (`op_info::copy_name`)
  /// Room per block, in 8-byte words, for the ops' side data (inputs, call stacks, module
  /// frames, extra args) when the queue's features record any.
  std::uint32_t side_words = 8192;
  std::size_t max_blocks = 0;  ///< 0: no cap
  when_full policy = when_full::drop_newest;
  std::chrono::milliseconds block_timeout{100};
  /// With `overwrite_oldest`: sealed blocks older than this are overwritten too, so that a
  /// flight recorder keeps about the last `keep_for` (0: as many blocks as the cap allows).
  std::chrono::milliseconds keep_for{0};
  bool start_stopped = false;
  /// How often a consumer waiting in `wait_sealed` looks for sealed blocks (sealing one does
  /// not wake it: the recording threads make no system call for it).
  std::chrono::microseconds poll_interval{1000};
  /// A file to keep the blocks in (a shared mapping, `collect/crash_file.hpp`), for
  /// `tracemodel recover` after the process dies or while it runs; empty: none. It needs a cap
  /// (`max_blocks`: 256 when 0), all of it in the file. Names not copied are copied into the
  /// block at their first use in it.
  std::string crash_file{};
};

/// Returned by `begin_op`; pass it to `end_op`.
struct live_handle {
  op_record* record = nullptr;
  std::uint64_t id = 0;  ///< the op's correlation id
  explicit operator bool() const noexcept { return record != nullptr; }
};

/// What a queue handed out and lost, since its creation.
struct live_counts {
  std::uint64_t begun = 0;          ///< ops recorded (with a record)
  std::uint64_t ended = 0;          ///< ops handed out with their end
  std::uint64_t unfinished = 0;     ///< ops handed out without an end (by `close`, or a dump)
  std::uint64_t dropped_ops = 0;    ///< ops not recorded: no block under the cap
  std::uint64_t dropped_ends = 0;   ///< ends not recorded: no block under the cap
  std::uint64_t evicted_ops = 0;    ///< ops recorded, then overwritten before a drain
  std::uint64_t orphan_ends = 0;    ///< ends whose op was never handed over (by `close`)
  std::uint64_t ended_twice = 0;    ///< second ends of an op (the first is kept)
  std::uint64_t lost_side = 0;      ///< side data (inputs, stacks, args) without room: not kept
  std::uint64_t open = 0;           ///< ops the consumer holds open now (their end to come)
  std::uint64_t handed_open = 0;    ///< open ops handed out as unfinished copies by `cut`/`dump`
  std::uint64_t other = 0;          ///< allocations, out-of-memory and device records handed out
  std::uint64_t evicted_other = 0;  ///< those overwritten before a drain (lost)
};

/// Where a process writes the dump that `tracemodel dump PID` asks for with `live_dump_signal`,
/// when its queue has no crash file to read instead: the temporary folder (`TMPDIR`, else
/// `/tmp`), `tracemodel-dump-PID.json`. The process's own consumer writes it (docs/recording.md,
/// "Dumps asked for from outside"); the signal's handler only calls `request_dump`.
inline std::string live_dump_path(std::int64_t pid) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr && *dir != 0 ? dir : "/tmp") + "/tracemodel-dump-" +
         std::to_string(pid) + ".json";
}
/// The signal `tracemodel dump PID` sends (SIGUSR2): a process that handles it asks its queue for
/// a dump there.
#if defined(SIGUSR2)
inline constexpr int live_dump_signal = SIGUSR2;
#else
inline constexpr int live_dump_signal = 0;
#endif

TRACEMODEL_END_NAMESPACE
