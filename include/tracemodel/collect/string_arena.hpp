// tracemodel/collect — per-thread copies of strings that do not live long enough by themselves
// (dynamic op names, call-stack frames, extra-argument values). Strings are contiguous; they
// sit in pool blocks, or in an allocation of their own when larger than a quarter block.
#pragma once

#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/storage/block_pool.hpp"

TRACEMODEL_BEGIN_NAMESPACE

class string_arena {
 public:
  string_arena() = default;
  string_arena(const string_arena&) = delete;
  string_arena& operator=(const string_arena&) = delete;
  ~string_arena() { clear(); }

  /// A copy of `s` that stays valid until `clear`.
  std::string_view copy(std::string_view s) {
    if (s.empty()) return {};
    if (s.size() > block_pool::block_size / 4) {
      auto& big = big_.emplace_back(std::make_unique<char[]>(s.size()));
      std::memcpy(big.get(), s.data(), s.size());
      return {big.get(), s.size()};
    }
    if (s.size() > static_cast<std::size_t>(end_ - pos_)) {
      void* b = block_pool::instance().acquire();
      blocks_.push_back(b);
      pos_ = static_cast<char*>(b);
      end_ = pos_ + block_pool::block_size;
    }
    std::memcpy(pos_, s.data(), s.size());
    std::string_view v(pos_, s.size());
    pos_ += s.size();
    return v;
  }

  void clear() noexcept {
    for (void* b : blocks_) block_pool::instance().release(b);
    blocks_.clear();
    big_.clear();
    pos_ = end_ = nullptr;
  }

 private:
  std::vector<void*> blocks_;
  std::vector<std::unique_ptr<char[]>> big_;
  char* pos_ = nullptr;
  char* end_ = nullptr;
};

TRACEMODEL_END_NAMESPACE
