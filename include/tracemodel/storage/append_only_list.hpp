// tracemodel/storage — append-only chunked list with stable addresses.
//
// Elements live in blocks taken from the process-wide `block_pool`; an element never moves
// once written, so a pointer to it stays valid until the list is cleared. Appending is a
// pointer bump plus one compare; a new block is taken once per `capacity` elements. When the
// ID source is not `no_id_source`, each block takes `capacity` IDs from it and an element's
// correlation ID is `block start + index`.
//
// Elements must be trivially destructible: clearing a list hands its blocks back without
// running destructors. A list is written by one thread; readers must not overlap writers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <new>
#include <type_traits>
#include <utility>

#include "tracemodel/config.hpp"
#include "tracemodel/storage/block_pool.hpp"
#include "tracemodel/storage/id_source.hpp"

TRACEMODEL_BEGIN_NAMESPACE

template <class T, id_source Ids = no_id_source>
class append_only_list {
  static_assert(std::is_trivially_destructible_v<T>,
                "tracemodel::append_only_list<T>: T must be trivially destructible");
  static_assert(alignof(T) <= 64, "tracemodel::append_only_list<T>: T must align to <= 64");

  struct header {
    header* next;
    std::uint64_t id_start;
    std::size_t used;  ///< elements in the block (set when the list moves to the next block)
  };
  static constexpr std::size_t data_offset = 64;
  static_assert(sizeof(header) <= data_offset);

 public:
  using value_type = T;
  using id_source_type = Ids;
  static constexpr std::size_t capacity = (block_pool::block_size - data_offset) / sizeof(T);
  static_assert(capacity >= 1, "tracemodel::append_only_list<T>: T is larger than a block");
  static constexpr bool has_ids = !std::is_same_v<Ids, no_id_source>;

  /// What `emplace_back_with_id` returns.
  struct emplaced {
    T* ptr;
    std::uint64_t id;
  };

  append_only_list() noexcept = default;
  append_only_list(const append_only_list&) = delete;
  append_only_list& operator=(const append_only_list&) = delete;
  append_only_list(append_only_list&& o) noexcept { steal(o); }
  append_only_list& operator=(append_only_list&& o) noexcept {
    if (this != &o) {
      clear();
      steal(o);
    }
    return *this;
  }
  ~append_only_list() { clear(); }

  /// Bytes ahead of the write position that are prefetched for writing: the lines are owned
  /// by the time they are written, so stores do not wait for memory (and loads that happen to
  /// share a page offset with a waiting store are not held up behind it).
  static constexpr std::size_t prefetch_bytes = 512;

  template <class... A>
  TRACEMODEL_ALWAYS_INLINE T* emplace_back(A&&... a) {
    if (next_ == end_) [[unlikely]]
      grow();
    prefetch_ahead();
    return ::new (static_cast<void*>(next_++)) T{std::forward<A>(a)...};
  }

  /// Appends and returns the element with its correlation ID (`block start + index`).
  template <class... A>
  TRACEMODEL_ALWAYS_INLINE emplaced emplace_back_with_id(A&&... a) {
    static_assert(has_ids, "append_only_list::emplace_back_with_id needs an ID source");
    if (next_ == end_) [[unlikely]]
      grow();
    T* p = next_++;
    ::new (static_cast<void*>(p)) T{std::forward<A>(a)...};
    return {p, last_->id_start + static_cast<std::uint64_t>(p - data(last_))};
  }

  /// The correlation ID of an element of any list of this type, from its address alone.
  static std::uint64_t id_of(const T* p) noexcept {
    static_assert(has_ids, "append_only_list::id_of needs an ID source");
    const auto* b = static_cast<const header*>(block_pool::block_of(p));
    return b->id_start + static_cast<std::uint64_t>(p - data(b));
  }

  /// Appends `n` elements copied from `src`, splitting them across blocks if needed.
  void append(const T* src, std::size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    while (n > 0) {
      if (next_ == end_) grow();
      const std::size_t room = static_cast<std::size_t>(end_ - next_);
      const std::size_t k = n < room ? n : room;
      std::memcpy(static_cast<void*>(next_), src, k * sizeof(T));
      next_ += k;
      src += k;
      n -= k;
    }
  }

  /// Appends `n` uninitialized elements that are contiguous in memory and returns the first
  /// (the caller writes them). When the current block has less room, its tail is left unused.
  /// For small runs of trivially copyable elements (tensor sizes and strides).
  TRACEMODEL_ALWAYS_INLINE T* append_contiguous(std::size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (static_cast<std::size_t>(end_ - next_) < n) [[unlikely]] {
      if (n > capacity) return nullptr;
      grow();
    }
    T* p = next_;
    next_ += n;
    prefetch_ahead();
    return p;
  }

  /// Appends several small runs with the write position held in the cursor and given to the
  /// list once, at `commit()` (one store and one prefetch instead of one per run): for an encoder
  /// writing a few runs per call. Runs behave as `append_contiguous`'s. The list sees them once
  /// committed (or, for those before it, when a run starts a new block); runs after that, of a
  /// cursor gone without a commit, are not kept.
  class cursor {
   public:
    explicit cursor(append_only_list& l) noexcept : list_(l), p_(l.next_), end_(l.end_) {}
    cursor(const cursor&) = delete;
    cursor& operator=(const cursor&) = delete;
    TRACEMODEL_ALWAYS_INLINE T* append_contiguous(std::size_t n) {
      if (static_cast<std::size_t>(end_ - p_) < n) [[unlikely]]
        return refill(n);
      T* r = p_;
      p_ += n;
      return r;
    }
    TRACEMODEL_ALWAYS_INLINE void emplace_back(const T& v) {
      if (T* r = append_contiguous(1); r != nullptr) *r = v;
    }
    void commit() noexcept {
      list_.next_ = p_;
      list_.prefetch_ahead();
    }

   private:
    TRACEMODEL_NOINLINE T* refill(std::size_t n) {
      list_.next_ = p_;
      T* r = list_.append_contiguous(n);
      p_ = list_.next_;
      end_ = list_.end_;
      return r;
    }
    append_only_list& list_;
    T* p_;
    T* end_;
  };

  [[nodiscard]] std::size_t size() const noexcept {
    if (last_ == nullptr) return 0;
    return size_before_last_ + static_cast<std::size_t>(next_ - data(last_));
  }
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  [[nodiscard]] std::size_t block_count() const noexcept {
    return last_ == nullptr ? 0 : full_blocks_ + 1;
  }

  /// Calls `f(T* first, T* last, std::uint64_t first_id)` for every block, in order.
  template <class F>
  void for_each_block(F&& f) {
    for (header* b = first_; b != nullptr; b = b->next) {
      T* first = data(b);
      T* last = b == last_ ? next_ : first + b->used;
      f(first, last, b->id_start);
    }
  }
  template <class F>
  void for_each_block(F&& f) const {
    for (const header* b = first_; b != nullptr; b = b->next) {
      const T* first = data(b);
      const T* last = b == last_ ? next_ : first + b->used;
      f(first, last, b->id_start);
    }
  }

  /// Gives every block back to the pool. Pointers into the list become invalid.
  void clear() noexcept {
    header* b = first_;
    while (b != nullptr) {
      header* n = b->next;
      block_pool::instance().release(b);
      b = n;
    }
    first_ = last_ = nullptr;
    next_ = end_ = nullptr;
    full_blocks_ = 0;
    size_before_last_ = 0;
  }

  template <bool Const>
  class basic_iterator {
    using list_t = std::conditional_t<Const, const append_only_list, append_only_list>;
    using ptr_t = std::conditional_t<Const, const T*, T*>;

   public:
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using reference = std::conditional_t<Const, const T&, T&>;
    using pointer = ptr_t;
    using iterator_category = std::forward_iterator_tag;

    basic_iterator() = default;
    basic_iterator(list_t* l, header* b) : list_(l), block_(b) { settle(); }

    reference operator*() const { return *p_; }
    pointer operator->() const { return p_; }
    basic_iterator& operator++() {
      if (++p_ == stop_) {
        block_ = block_->next;
        settle();
      }
      return *this;
    }
    basic_iterator operator++(int) {
      auto t = *this;
      ++*this;
      return t;
    }
    /// Correlation ID of the element (lists with an ID source).
    [[nodiscard]] std::uint64_t id() const noexcept {
      return block_->id_start + static_cast<std::uint64_t>(p_ - data(block_));
    }
    friend bool operator==(const basic_iterator& a, const basic_iterator& b) {
      return a.p_ == b.p_;
    }

   private:
    void settle() {
      // Skip empty blocks (only the last block can be empty).
      while (block_ != nullptr) {
        p_ = data(block_);
        stop_ = block_ == list_->last_ ? list_->next_ : p_ + block_->used;
        if (p_ != stop_) return;
        block_ = block_->next;
      }
      p_ = stop_ = nullptr;
    }
    list_t* list_ = nullptr;
    header* block_ = nullptr;
    ptr_t p_ = nullptr;
    ptr_t stop_ = nullptr;
  };
  using iterator = basic_iterator<false>;
  using const_iterator = basic_iterator<true>;

  iterator begin() { return iterator(this, first_); }
  iterator end() { return iterator(); }
  const_iterator begin() const { return const_iterator(this, first_); }
  const_iterator end() const { return const_iterator(); }

 private:
  TRACEMODEL_ALWAYS_INLINE void prefetch_ahead() const noexcept {
#if defined(__GNUC__) || defined(__clang__)
    // Within the block only (the next block's pages may not be mapped yet: no TLB walks), and
    // not before the first block (no offset from a null position).
    const char* next = reinterpret_cast<const char*>(next_);
    if (reinterpret_cast<const char*>(end_) - next > static_cast<std::ptrdiff_t>(prefetch_bytes)) {
      const char* p = next + prefetch_bytes;
#if defined(__x86_64__)
      // PREFETCHW (0F 0D /1) takes the line in a writable state; CPUs without it run it as a NOP.
      asm volatile("prefetchw %0" : : "m"(*p));
#else
      __builtin_prefetch(p, 1, 3);
#endif
    }
#endif
  }

  static T* data(header* b) noexcept {
    return std::launder(reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(b) + data_offset));
  }
  static const T* data(const header* b) noexcept {
    return std::launder(
        reinterpret_cast<const T*>(reinterpret_cast<const unsigned char*>(b) + data_offset));
  }

  TRACEMODEL_NOINLINE void grow() {
    auto* b = ::new (block_pool::instance().acquire()) header{nullptr, 0, 0};
    if constexpr (has_ids) b->id_start = Ids::take(capacity);
    if (last_ == nullptr) {
      first_ = b;
    } else {
      last_->used = static_cast<std::size_t>(next_ - data(last_));
      size_before_last_ += last_->used;
      last_->next = b;
      ++full_blocks_;
    }
    last_ = b;
    next_ = data(b);
    end_ = next_ + capacity;
  }

  void steal(append_only_list& o) noexcept {
    first_ = std::exchange(o.first_, nullptr);
    last_ = std::exchange(o.last_, nullptr);
    next_ = std::exchange(o.next_, nullptr);
    end_ = std::exchange(o.end_, nullptr);
    full_blocks_ = std::exchange(o.full_blocks_, 0);
    size_before_last_ = std::exchange(o.size_before_last_, 0);
  }

  T* next_ = nullptr;
  T* end_ = nullptr;
  header* first_ = nullptr;
  header* last_ = nullptr;
  std::size_t full_blocks_ = 0;
  std::size_t size_before_last_ = 0;
};

TRACEMODEL_END_NAMESPACE
