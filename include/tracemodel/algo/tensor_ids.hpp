// tracemodel/algo — tensor identities.
//
//   tensor_id_stats s = tracemodel::assign_tensor_ids(table);
//
// Gives every tensor input of an op (list elements included) and every allocation of tensor
// storage a `tensor_id` (1, 2, ...; 0 means none), such that two tensors share an id when they
// share storage or an implementation object, transitively:
//  1. storage addresses become storage versions: an address gets a fresh version when it is
//     first seen and at every allocation, and a free (negative allocation size) retires it, so
//     memory reused after a free is another storage (keyed by address and device);
//  2. allocations whose storage no tensor ever used are not tensors and get no id;
//  3. an implementation object that changes storage merges the groups of its storages, with a
//     real disjoint-set (PyTorch merges sorted pairs in one greedy pass, which leaves chains such
//     as {(1,3),(2,3)} split; union-find does not), but only when an op replaced the storage:
//     the new one made and then the old one freed within the op that last saw the
//     implementation on the old one.
//     Allocators hand an implementation's address to a new tensor as soon as the old one dies
//     (a view of a parameter, whose storage lives on): PyTorch merges those too, and a few reused
//     addresses then tie a model's parameters, gradients and activations into one tensor;
//  4. groups are numbered in order of their first storage version (first appearance in time).
// Events are visited in start order.
#pragma once

#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/flat_map.hpp"
#include "tracemodel/detail/radix_sort.hpp"
#include "tracemodel/model/table.hpp"

TRACEMODEL_BEGIN_NAMESPACE

struct tensor_id_stats {
  std::size_t tensors = 0;      ///< tensor inputs that got an id
  std::size_t allocations = 0;  ///< allocations that got an id
  std::size_t ids = 0;          ///< distinct ids
  std::size_t storages = 0;     ///< storage versions seen
};

namespace detail {
class disjoint_sets {
 public:
  std::uint32_t add() {
    parent_.push_back(static_cast<std::uint32_t>(parent_.size()));
    return parent_.back();
  }
  void reserve(std::size_t n) { parent_.reserve(n); }
  std::uint32_t find(std::uint32_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];  // path halving
      x = parent_[x];
    }
    return x;
  }
  void unite(std::uint32_t a, std::uint32_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    // The smaller version stays the representative: groups keep their first appearance.
    if (b < a) std::swap(a, b);
    parent_[b] = a;
  }

 private:
  std::vector<std::uint32_t> parent_;
};
}  // namespace detail

namespace detail {
/// What the identity passes find: the storage version of every tensor input and allocation (the
/// storage a tensor's data lives in, one per allocation: memory reused after a free is another),
/// and the tensor id of every storage version (0: no tensor ever used it).
struct storage_identities {
  static constexpr std::uint32_t none = ~std::uint32_t{0};
  std::vector<std::uint32_t> input_version;  ///< per entry of the table's `inputs`
  std::vector<std::uint32_t> event_version;  ///< per event: its allocation's storage version
  std::vector<std::uint64_t> tensor_id;      ///< per storage version
  std::vector<std::uint64_t> address;        ///< per storage version
  std::size_t ids = 0;                       ///< distinct tensor ids
  /// Allocations at an address whose last storage was still live (no free recorded): the event
  /// and that storage's version.
  std::vector<std::pair<event_index, std::uint32_t>> reused;
  /// Frees of an address no recorded allocation held (each its own storage version).
  std::vector<event_index> unheld_frees;
};

/// The identities, visiting the events in `order` (their start order).
template <class Schema, class Order>
storage_identities identify_storages(const basic_event_table<Schema>& t, const Order& order) {
  storage_identities out;
  out.input_version.assign(t.inputs.size(), storage_identities::none);
  out.event_version.assign(t.size(), storage_identities::none);

  detail::pair_ids addresses;                 // (address, device) -> dense address id
  std::vector<std::uint32_t> live;            // address id -> current storage version + 1
  detail::disjoint_sets groups;               // over storage versions
  std::vector<bool> used_by_tensor;           // storage version -> seen as a tensor's storage
  detail::flat_map<std::uint32_t> impl_slot;  // impl address -> its slot below
  struct impl_state {
    std::uint32_t version;  // the storage it was last seen on
    std::int64_t seen;      // ... when its op began
    std::int64_t until;     // ... and ended
  };
  std::vector<impl_state> impls;
  std::vector<std::int64_t> born, died;  // storage version -> first seen, freed (or max)
  std::int64_t now = 0;
  {  // (at most one version per allocation and tensor input: reserved, not touched)
    const std::size_t most = t.size() + t.inputs.size();
    born.reserve(most);
    died.reserve(most);
    used_by_tensor.reserve(most);
    out.address.reserve(most);
    groups.reserve(most);
  }

  auto address_id = [&](std::uint64_t address, std::int8_t type, std::int8_t index) {
    const std::uint64_t device =
        std::uint64_t{static_cast<std::uint8_t>(type)} << 8 | static_cast<std::uint8_t>(index);
    const std::uint32_t a = addresses.id(address, device);
    if (a == live.size()) live.push_back(0);
    return a;
  };
  auto version_at = [&](std::uint32_t a, std::uint64_t address) {  // the live one, or a new one
    if (live[a] == 0) {
      live[a] = groups.add() + 1;
      born.push_back(now);
      died.push_back(std::numeric_limits<std::int64_t>::max());
      used_by_tensor.push_back(false);
      out.address.push_back(address);
    }
    return live[a] - 1;
  };

  for (const event_index i : order) {
    const auto& e = t.events[i];
    now = e.start_ns;
    if constexpr (Schema::template contains<event_kind::op>) {
      if (const auto* op = e.template get_if<event_kind::op>()) {
        for (std::uint32_t k = 0; k < op->inputs.size; ++k) {
          const input_value& v = t.inputs[op->inputs.first + k];
          if (v.kind != input_kind::tensor || v.impl == 0 || v.storage == 0) continue;
          const std::uint32_t version =
              version_at(address_id(v.storage, v.device_type, v.device_index), v.storage);
          used_by_tensor[version] = true;
          auto [slot, inserted] =
              impl_slot.try_emplace(v.impl, static_cast<std::uint32_t>(impls.size()));
          const std::int64_t end = now + e.duration_ns();
          if (inserted) impls.push_back({version, now, end});
          impl_state& last = impls[*slot];
          // The same tensor on another storage only when an op replaced its storage: the new
          // one made and the old one freed, in that order, within the op that last saw the
          // tensor on the old one (PyTorch's resize_, set_).
          if (last.version != version && last.seen <= born[version] &&
              born[version] < died[last.version] && died[last.version] <= last.until)
            groups.unite(last.version, version);
          last = {version, now, end};
          out.input_version[op->inputs.first + k] = version;
        }
        continue;
      }
    }
    if constexpr (Schema::template contains<event_kind::allocation>) {
      if (const auto* a = e.template get_if<event_kind::allocation>()) {
        if (a->ptr == 0) continue;
        const std::uint32_t addr = address_id(a->ptr, a->device_type, a->device_index);
        if (a->alloc_size > 0 && live[addr] != 0) {
          // An allocation at an address still live (its free never recorded) is another
          // storage, as PyTorch gives every allocation its own allocation id.
          out.reused.emplace_back(i, live[addr] - 1);
          died[live[addr] - 1] = now;
          live[addr] = 0;
        }
        if (a->alloc_size < 0 && live[addr] == 0) out.unheld_frees.push_back(i);
        const std::uint32_t version = version_at(addr, a->ptr);
        out.event_version[i] = version;
        if (a->alloc_size < 0) {  // freed: the next use is another storage
          died[version] = now;
          live[addr] = 0;
        }
      }
    }
  }
  // Number the groups that hold a tensor, in order of their first storage version.
  const std::size_t versions = used_by_tensor.size();
  std::vector<bool> group_used(versions, false);
  for (std::uint32_t v = 0; v < versions; ++v)
    if (used_by_tensor[v]) group_used[groups.find(v)] = true;
  std::vector<std::uint64_t> group_id(versions, 0);
  for (std::uint32_t v = 0; v < versions; ++v)
    if (group_used[v]) group_id[v] = ++out.ids;
  out.tensor_id.resize(versions);
  for (std::uint32_t v = 0; v < versions; ++v) out.tensor_id[v] = group_id[groups.find(v)];
  return out;
}
template <class Schema>
storage_identities identify_storages(const basic_event_table<Schema>& t) {
  return identify_storages(t, detail::start_order(t.events));
}
}  // namespace detail

struct assign_tensor_ids_fn {
  template <class Schema>
  tensor_id_stats operator()(basic_event_table<Schema>& t) const {
    const detail::storage_identities s = detail::identify_storages(t);
    tensor_id_stats stats;
    stats.ids = s.ids;
    stats.storages = s.tensor_id.size();
    for (std::size_t k = 0; k < t.inputs.size(); ++k)
      if (const std::uint32_t v = s.input_version[k]; v != s.none) {
        t.inputs[k].tensor_id = s.tensor_id[v];
        stats.tensors += s.tensor_id[v] != 0;
      }
    if constexpr (Schema::template contains<event_kind::allocation>) {
      for (std::size_t i = 0; i < t.size(); ++i)
        if (const std::uint32_t v = s.event_version[i]; v != s.none) {
          t.events[i].template get<event_kind::allocation>().tensor_id = s.tensor_id[v];
          stats.allocations += s.tensor_id[v] != 0;
        }
    }
    return stats;
  }
};

/// Assigns tensor identities (see the header comment).
inline constexpr assign_tensor_ids_fn assign_tensor_ids{};

TRACEMODEL_END_NAMESPACE
