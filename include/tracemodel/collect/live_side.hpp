// tracemodel/collect — the live queue's side data on the consumer's side (collect/live_queue.hpp):
// a part's side entries indexed by op (those of a block's own ops by record, the others by id),
// decoded into the part's inputs, call stacks, module frames and extra args, and the entries of
// ops not handed out yet copied out of the blocks before they are recycled.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tracemodel/collect/encoder.hpp"
#include "tracemodel/collect/live_blocks.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail {

/// The side entries of the parts a live queue hands out (one consumer at a time); `Inputs`:
/// whether the queue records inputs (their values decoded through `ValueTraits`).
template <bool Inputs, class ValueTraits>
class live_side_index {
 public:
  /// A new part: the last part's entries in the blocks are gone, names are interned again.
  void begin_part() {
    refs_.clear();
    chains_.clear();
    dtype_known_.fill(false);
  }
  /// The entries of the op at record `k` of the block indexed last are the next to attach.
  void select(std::uint32_t k) { local_ = local_first_[k]; }
  /// The selected op was not handed out: its entries are copied out of the block for later.
  void keep_selected(std::uint64_t id) {
    if (local_ != no_ref) keep_entries(id, local_);
  }
  void deselect() { local_ = no_ref; }
  /// Whether any entries may be waiting for an op.
  [[nodiscard]] bool any() const {
    return local_ != no_ref || chains_.size() != 0 || !side_.empty();
  }
  /// The end of a part: entries of ops not handed out (open, or not come yet) are copied out of
  /// the blocks before they are recycled.
  void end_part() {
    chains_.for_each([&](std::uint64_t id, const side_chain& c) {
      if (!c.consumed) keep_entries(id, c.first);
    });
    chains_.clear();
  }
  /// The last part: the entries kept for ops that never came are dropped; returns how many ops.
  std::size_t drop_kept() {
    const std::size_t n = side_.size();
    side_.clear();
    return n;
  }

  /// The entries kept for ops not handed out yet (a crash file keeps them).
  template <class F>
  void for_each_kept(F&& f) const {
    for (const auto& [id, words] : side_) f(words);
  }
  /// Indexes the block's side entries (beyond what cuts read): those of its own ops by record,
  /// the others by id.
  void index_block(const live_block& b) {
    local_first_.assign(b.count, no_ref);
    local_last_.resize(b.count);
    const std::uint64_t* p = b.side.get();
    for (std::uint32_t k = b.tail_side; k + 2 <= b.side_used;) {
      const auto len = static_cast<std::uint32_t>(2 + (p[k] >> 8));
      const std::uint64_t at = p[k + 1] - b.id_start;
      if (at < b.count) {
        const auto r = static_cast<std::uint32_t>(refs_.size());
        refs_.push_back({p + k, len, no_ref});
        if (local_first_[at] == no_ref)
          local_first_[at] = r;
        else
          refs_[local_last_[at]].next = r;
        local_last_[at] = r;
      } else {
        index_side(p + k, len);
      }
      k += len;
    }
  }
  /// Copies a chain of entries out of the blocks, for an op handed out later.
  void keep_entries(std::uint64_t id, std::uint32_t first) {
    std::vector<std::uint64_t>& to = side_[id];
    for (std::uint32_t r = first; r != no_ref; r = refs_[r].next)
      to.insert(to.end(), refs_[r].p, refs_[r].p + refs_[r].n);
  }

  /// Indexes the side entries of `n` words at `p` by their op's id, for this part.
  void index_side(const std::uint64_t* p, std::size_t n) {
    for (std::size_t k = 0; k + 2 <= n;) {
      const auto len = static_cast<std::uint32_t>(2 + (p[k] >> 8));
      const auto r = static_cast<std::uint32_t>(refs_.size());
      refs_.push_back({p + k, len, no_ref});
      if (auto [c, inserted] = chains_.try_emplace(p[k + 1], side_chain{r, r, false}); !inserted) {
        refs_[c->last].next = r;
        c->last = r;
      }
      k += len;
    }
  }

  /// Decodes the op's side entries into the part: inputs, call stack, module frames, extra
  /// args (those kept from earlier parts first, then this part's). A copy handed out open keeps
  /// them for the op's ended self.
  template <class Event, class Fields>
  void attach_side(event_table& part, Event& e, Fields& f, std::uint64_t id, bool keep) {
    bool inputs_done = false;
    if (!side_.empty())
      if (const auto it = side_.find(id); it != side_.end()) {
        decode_side(part, e, f, it->second.data(), it->second.size(), inputs_done);
        if (!keep) side_.erase(it);
      }
    if (local_ != no_ref) {  // the entries in the op's own block
      for (std::uint32_t r = local_; r != no_ref; r = refs_[r].next)
        decode_side(part, e, f, refs_[r].p, refs_[r].n, inputs_done);
      if (!keep) local_ = no_ref;
    }
    if (chains_.size() == 0) return;
    if (side_chain* c = chains_.find(id); c != nullptr && !c->consumed) {
      for (std::uint32_t r = c->first; r != no_ref; r = refs_[r].next)
        decode_side(part, e, f, refs_[r].p, refs_[r].n, inputs_done);
      c->consumed = !keep;
    }
  }
  template <class Event, class Fields>
  void decode_side(event_table& part, Event& e, Fields& f, const std::uint64_t* w, std::size_t size,
                   bool& inputs_done) {
    for (std::size_t k = 0; k + 2 <= size;) {
      const auto kind = static_cast<side_kind>(w[k] & 0xff);
      const std::size_t n = static_cast<std::size_t>(w[k] >> 8);
      const std::uint64_t* p = w + k + 2;
      const std::uint64_t* end = p + n;
      k += 2 + n;
      switch (kind) {
        case side_kind::inputs:
          if constexpr (Inputs) {
            if (inputs_done) break;
            inputs_done = true;
            io_decoder<const std::uint64_t*> d(p, end);
            const auto first = static_cast<std::uint32_t>(part.inputs.size());
            if (!dtype_known_[256]) {  // (names are interned once per part)
              scalar_id_ = part.strings.intern("Scalar");
              dtype_known_[256] = true;
            }
            const std::uint32_t count =
                d.next(part.inputs, part.ints, scalar_id_, [&](std::uint8_t c) {
                  if (!dtype_known_[c]) {
                    dtype_ids_[c] =
                        part.strings.intern(std::string_view(ValueTraits::dtype_name(c)));
                    dtype_known_[c] = true;
                  }
                  return dtype_ids_[c];
                });
            f.inputs = {first, count};
          }
          break;
        case side_kind::call_stack:
        case side_kind::modules: {
          const auto first = static_cast<std::uint32_t>(part.name_lists.size());
          std::uint32_t count = 0;
          const std::uint64_t frames = p < end ? *p++ : 0;
          for (std::uint64_t j = 0; j < frames && p < end; ++j, ++count)
            part.name_lists.push_back(part.strings.intern(read_bytes(p, end, *p++)));
          part.add_attr(e, kind == side_kind::call_stack ? "Call stack" : "Module Hierarchy",
                        attr_type::string_list)
              .list = {first, count};
          break;
        }
        case side_kind::extra_args: {
          const std::uint64_t args = p < end ? *p++ : 0;
          for (std::uint64_t j = 0; j < args && end - p >= 2; ++j) {
            const std::uint64_t head = *p++;
            const std::uint64_t v = *p++;
            const auto type = static_cast<attr_type>(head & 0xff);
            const std::string_view key = read_bytes(p, end, (head >> 8) & 0xffffff);
            const std::string_view str = read_bytes(p, end, head >> 32);
            attribute& a = part.add_attr(e, key, type);
            switch (type) {
              case attr_type::floating:
                std::memcpy(&a.f, &v, sizeof v);
                break;
              case attr_type::boolean:
                a.b = v != 0;
                break;
              case attr_type::string:
                a.s = part.strings.intern(str);
                break;
              default:
                a.i = static_cast<std::int64_t>(v);
                break;
            }
          }
          break;
        }
      }
    }
  }
  /// `n` bytes packed in words at `p` (advanced past them), cut at `end`.
  static std::string_view read_bytes(const std::uint64_t*& p, const std::uint64_t* end,
                                     std::uint64_t n) {
    const std::size_t words = std::min<std::size_t>(static_cast<std::size_t>((n + 7) / 8),
                                                    static_cast<std::size_t>(end - p));
    const std::string_view s(reinterpret_cast<const char*>(p), std::min<std::size_t>(n, words * 8));
    p += words;
    return s;
  }

 private:
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> side_;  ///< by op, until handed
  // This part's side entries, in the blocks: chains of entries by op id.
  struct side_ref {
    const std::uint64_t* p;
    std::uint32_t n;
    std::uint32_t next;
  };
  struct side_chain {
    std::uint32_t first, last;
    bool consumed;
  };
  static constexpr std::uint32_t no_ref = ~std::uint32_t{0};
  std::vector<side_ref> refs_;
  flat_map<side_chain> chains_;                          ///< entries of ops of other blocks, by id
  std::vector<std::uint32_t> local_first_, local_last_;  ///< a block's own ops' entries
  std::uint32_t local_ = no_ref;         ///< the entries of the op being handed out, in its block
  std::array<bool, 257> dtype_known_{};  ///< (256: "Scalar")
  std::array<name_id, 256> dtype_ids_{};
  name_id scalar_id_{};
};

}  // namespace detail
TRACEMODEL_END_NAMESPACE
