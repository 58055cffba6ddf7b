// tracemodel/adapters/cupti — the activity buffers: a bounded pool and a lock-free handoff.
//
// CUPTI asks for empty buffers and returns filled ones from its own threads. `buffer_pool`
// hands out buffers of one size from a fixed number of slots (Kineto's default: 4 MiB; the
// cap bounds memory), recycling returned ones through a lock-free stack whose head carries a
// tag against ABA. When every slot is out, `acquire` returns null and counts a refusal: CUPTI
// then drops records, and the adapter reports CUPTI's dropped count with the refusals — never
// silently. Filled buffers go onto a lock-free multi-producer list (`push_completed`); the
// consumer takes all of them at once, in completion order (`take_completed`).
//
// Nothing here calls CUPTI: it is tested on its own.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace cupti {

class buffer_pool {
 public:
  struct completed {
    std::uint8_t* data;
    std::size_t valid;
  };

  /// `buffer_size` bytes per buffer (multiple of 8), at most `max_buffers` at once.
  buffer_pool(std::size_t buffer_size, std::uint32_t max_buffers)
      : size_((buffer_size + 7) & ~std::size_t{7}),
        slots_(max_buffers),
        next_(max_buffers),
        valid_(max_buffers) {
    for (auto& s : slots_) s.store(nullptr, std::memory_order_relaxed);
  }
  buffer_pool(const buffer_pool&) = delete;
  buffer_pool& operator=(const buffer_pool&) = delete;
  ~buffer_pool() {
    for (auto& s : slots_) std::free(s.load(std::memory_order_relaxed));
  }

  [[nodiscard]] std::size_t buffer_size() const noexcept { return size_; }
  [[nodiscard]] std::uint32_t capacity() const noexcept {
    return static_cast<std::uint32_t>(slots_.size());
  }
  /// Buffers allocated so far (never more than the capacity).
  [[nodiscard]] std::uint32_t allocated() const noexcept {
    return allocated_.load(std::memory_order_relaxed);
  }
  /// Requests refused because every buffer was out.
  [[nodiscard]] std::uint64_t refused() const noexcept {
    return refused_.load(std::memory_order_relaxed);
  }

  /// An empty buffer, or null when all `capacity()` buffers are out.
  std::uint8_t* acquire() noexcept {
    if (const std::uint32_t slot = pop(free_); slot != 0) return data(slot);
    std::uint32_t n = allocated_.load(std::memory_order_relaxed);
    while (n < capacity()) {
      if (allocated_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) {
        // aligned_alloc wants a multiple of the alignment; CUPTI is told `size_`.
        void* p = std::aligned_alloc(64, (size_ + 63) & ~std::size_t{63});
        if (p == nullptr) {
          allocated_.fetch_sub(1, std::memory_order_relaxed);
          break;
        }
        slots_[n].store(static_cast<std::uint8_t*>(p), std::memory_order_release);
        return static_cast<std::uint8_t*>(p);
      }
    }
    refused_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  /// Gives an empty (or decoded) buffer back.
  void release(std::uint8_t* p) noexcept {
    if (const std::uint32_t slot = slot_of(p)) push(free_, slot);
  }
  /// A buffer CUPTI filled with `valid` bytes; from any thread.
  void push_completed(std::uint8_t* p, std::size_t valid) noexcept {
    const std::uint32_t slot = slot_of(p);
    if (slot == 0) return;
    valid_[slot - 1] = valid;
    push(done_, slot);
  }
  /// Every completed buffer, oldest first. The caller releases each after decoding it.
  std::vector<completed> take_completed() {
    // Detach the whole list (tag kept), then reverse it into completion order.
    std::uint64_t head = done_.load(std::memory_order_acquire);
    while (!done_.compare_exchange_weak(head, head & tag_mask, std::memory_order_acq_rel)) {
    }
    std::vector<completed> out;
    for (std::uint32_t slot = static_cast<std::uint32_t>(head & index_mask); slot != 0;
         slot = next_[slot - 1].load(std::memory_order_relaxed))
      out.push_back({data(slot), valid_[slot - 1]});
    return {out.rbegin(), out.rend()};
  }

 private:
  static constexpr std::uint64_t index_mask = 0xffffffffu;
  static constexpr std::uint64_t tag_mask = ~index_mask;

  std::uint8_t* data(std::uint32_t slot) const noexcept {
    return slots_[slot - 1].load(std::memory_order_acquire);
  }
  /// 1-based slot of a buffer of this pool, 0 for anything else.
  std::uint32_t slot_of(const std::uint8_t* p) const noexcept {
    for (std::uint32_t k = 0; k < slots_.size(); ++k)
      if (slots_[k].load(std::memory_order_acquire) == p && p != nullptr) return k + 1;
    return 0;
  }
  // A Treiber stack of 1-based slots; the upper 32 bits of the head count pushes (ABA tag).
  void push(std::atomic<std::uint64_t>& head, std::uint32_t slot) noexcept {
    std::uint64_t h = head.load(std::memory_order_relaxed);
    do {
      next_[slot - 1].store(static_cast<std::uint32_t>(h & index_mask), std::memory_order_relaxed);
    } while (!head.compare_exchange_weak(h, ((h & tag_mask) + (index_mask + 1)) | slot,
                                         std::memory_order_release, std::memory_order_relaxed));
  }
  std::uint32_t pop(std::atomic<std::uint64_t>& head) noexcept {
    std::uint64_t h = head.load(std::memory_order_acquire);
    while (true) {
      const auto slot = static_cast<std::uint32_t>(h & index_mask);
      if (slot == 0) return 0;
      const std::uint32_t after = next_[slot - 1].load(std::memory_order_relaxed);
      if (head.compare_exchange_weak(h, ((h & tag_mask) + (index_mask + 1)) | after,
                                     std::memory_order_acquire, std::memory_order_acquire))
        return slot;
    }
  }

  std::size_t size_;
  std::vector<std::atomic<std::uint8_t*>> slots_;
  std::vector<std::atomic<std::uint32_t>> next_;  // the stacks' links, by slot (atomic: a pop may
                                                  // read a link a push is writing; the tag decides)
  std::vector<std::size_t> valid_;                // valid bytes of completed buffers, by slot
  std::atomic<std::uint64_t> free_{0};
  std::atomic<std::uint64_t> done_{0};
  std::atomic<std::uint32_t> allocated_{0};
  std::atomic<std::uint64_t> refused_{0};
};

}  // namespace cupti
TRACEMODEL_END_NAMESPACE
