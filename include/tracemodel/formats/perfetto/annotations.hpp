// tracemodel/formats — the Perfetto reader's debug annotations (formats/perfetto_reader.hpp):
// typed values into a record's args, nested arrays and dictionaries as JSON text, and PyTorch's
// input annotations (`Input Dims`, `Input Strides`, `Input type`, `Concrete Inputs`) into the
// record's op inputs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/assert.hpp"
#include "tracemodel/formats/chrome_trace/dims_text.hpp"
#include "tracemodel/formats/json_check.hpp"
#include "tracemodel/formats/json_output.hpp"
#include "tracemodel/formats/perfetto/state.hpp"
#include "tracemodel/formats/perfetto_fields.hpp"
#include "tracemodel/formats/protobuf.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::perfetto {

/// What a read has learnt about texts it met before: the dims texts it parsed, by where their
/// interned text lies (this writer interns each shape's text once, and op after op reads the
/// same one; a pointer into the file, or into the reader's own storage, stands for the same
/// bytes for the whole read), and whether short `legacy_json_value` texts are JSON, by their
/// bytes (a kernel's grid and block, `[128,1,1]`, again and again).
class annotation_cache {
 public:
  /// Appends the parse of the dims text at `text` to `b`; false when it is not cached.
  bool append_dims(std::string_view text, batch& b) const {
    const dims_entry_set& e = dims_[slot(reinterpret_cast<std::uintptr_t>(text.data()))];
    if (e.p != text.data() || e.len != text.size()) return false;
    const auto base = static_cast<std::uint32_t>(b.ints.size());
    for (dims_entry d : e.dims) {  // (each entry, list or not, holds where its ints begin)
      d.first += base;
      b.dims.push_back(d);
    }
    b.ints.insert(b.ints.end(), e.ints.begin(), e.ints.end());
    return true;
  }
  /// Keeps the parse of `text`: `b`'s dims from `d0` and ints from `i0`.
  void keep_dims(std::string_view text, const batch& b, std::size_t d0, std::size_t i0) {
    dims_entry_set& e = dims_[slot(reinterpret_cast<std::uintptr_t>(text.data()))];
    e.p = text.data();
    e.len = text.size();
    e.dims.assign(b.dims.begin() + static_cast<std::ptrdiff_t>(d0), b.dims.end());
    for (dims_entry& d : e.dims) d.first -= static_cast<std::uint32_t>(i0);
    e.ints.assign(b.ints.begin() + static_cast<std::ptrdiff_t>(i0), b.ints.end());
  }

  /// Whether `text` is one JSON value (`is_json_value`), remembered for short texts.
  bool is_json(std::string_view text) {
    if (text.size() < 8 || text.size() > short_text) return is_json_value(text);
    std::uint64_t head = 0, tail = 0;  // (the first and last eight bytes: they may overlap)
    std::memcpy(&head, text.data(), 8);
    std::memcpy(&tail, text.data() + text.size() - 8, 8);
    verdict& v = verdicts_[slot(head ^ (tail * 31) ^ text.size())];
    if (v.len == text.size() && std::memcmp(v.text.data(), text.data(), text.size()) == 0)
      return v.json;
    v.len = text.size();
    std::memcpy(v.text.data(), text.data(), text.size());
    v.json = is_json_value(text);
    return v.json;
  }

 private:
  static constexpr std::size_t short_text = 32;
  struct dims_entry_set {
    const char* p = nullptr;
    std::size_t len = 0;
    std::vector<dims_entry> dims;
    std::vector<std::int64_t> ints;
  };
  struct verdict {
    std::size_t len = 0;  // (0: empty; texts of under 8 bytes are not kept)
    std::array<char, short_text> text{};
    bool json = false;
  };
  static std::size_t slot(std::uint64_t key) noexcept {
    return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ull) >> 58);  // one of 64
  }
  std::array<dims_entry_set, 64> dims_{};
  std::array<verdict, 64> verdicts_{};
};

/// Reads an event's debug annotations into a batch (`file`: the whole trace, which byte
/// offsets count from).
class annotation_reader {
 public:
  /// (`anomalies`: where a repaired value is counted; `cache`: what earlier events taught.)
  annotation_reader(std::string_view file, batch_text& b, anomaly_counts& anomalies,
                    annotation_cache& cache) noexcept
      : bytes_(file), b_(&b), anomalies_(&anomalies), cache_(&cache) {}

  /// Adds one annotation to the record's args (or its op inputs); true when it is the
  /// correlation id. One pass over its fields: the first name, the first string (an input's
  /// dims text), the last value.
  bool annotation(const sequence_state& s, std::string_view bytes, fields& rec) {
    pb::decoder d = sub(bytes);
    pb::field f, value;  // (value.number 0: no value)
    std::string_view key, text;
    bool named = false, nested = false, has_text = false, text_interned = false;
    arg_kind kind = plain_arg;
    while (d.next(f)) {
      switch (f.number) {
        case pf::annotation::name_iid:
          if (!named && f.type == pb::wire::varint) {
            key = interned(s.annotation_names, f.value);
            kind = f.value < s.annotation_kinds.size()
                       ? static_cast<arg_kind>(s.annotation_kinds[f.value])
                       : plain_arg;
            named = true;
          }
          break;
        case pf::annotation::name:
          if (!named && f.type == pb::wire::bytes) {
            key = utf8_text(f.bytes, b_->kept, *anomalies_);
            kind = arg_kind_of(key);
            named = true;
          }
          break;
        case pf::annotation::nested_value:
        case pf::annotation::dict_entries:
        case pf::annotation::array_values:
          nested = true;
          break;
        case pf::annotation::string_value:
          if (!has_text && f.type == pb::wire::bytes) {
            text = f.bytes;
            has_text = true;
          }
          value = f;
          break;
        case pf::annotation::string_value_iid:
          if (!has_text && f.type == pb::wire::varint) {
            text = interned(s.string_values, f.value);
            has_text = text_interned = true;
          }
          value = f;
          break;
        case pf::annotation::bool_value:
        case pf::annotation::uint_value:
        case pf::annotation::int_value:
        case pf::annotation::double_value:
        case pf::annotation::pointer_value:
        case pf::annotation::legacy_json_value:
          value = f;
          break;
        default:
          break;
      }
    }
    if (kind == dims_arg || kind == strides_arg) {
      chrome_trace::dims_range& r = kind == dims_arg ? rec.dims : rec.strides;
      const auto d0 = static_cast<std::uint32_t>(b_->b.dims.size());
      const std::size_t i0 = b_->b.ints.size();
      // This writer's form, the JSON text (interned: shapes repeat op after op), or other
      // writers' nested arrays of integers.
      const bool read = text.data() != nullptr ? dims_text(text, text_interned) : dims_of(bytes, 0);
      if (read) {
        r = {d0, static_cast<std::uint32_t>(b_->b.dims.size() - d0), true};
        return false;
      }
      b_->b.dims.resize(d0);
      b_->b.ints.resize(i0);
    } else if (kind == types_arg || kind == concrete_arg) {
      chrome_trace::string_range& r = kind == types_arg ? rec.types : rec.concrete;
      const auto s0 = static_cast<std::uint32_t>(b_->b.strings.size());
      bool inline_text = false;  // (interned strings are repaired when they are interned)
      if (strings_of(s, bytes, inline_text)) {
        for (std::size_t k = s0; inline_text && k < b_->b.strings.size(); ++k)
          b_->b.strings[k] = utf8_text(b_->b.strings[k], b_->kept, *anomalies_);
        r = {s0, static_cast<std::uint32_t>(b_->b.strings.size() - s0)};
        return false;
      }
      b_->b.strings.resize(s0);
    }
    raw_arg& a = b_->b.args.emplace_back();
    a.key = key;
    a.offset = at(bytes);
    if (nested) {  // (nested values as JSON text)
      std::string json;
      json_output j = json_output::to_string(json);
      json_of(s, bytes, j, 0);
      j.flush();
      a.kind = raw_arg::type::json;
      a.text = keep(std::move(json));
    } else {
      value_of(s, value, a);
    }
    return kind == correlation_arg;
  }

  /// An annotation's value field as a raw arg (none: an empty array, as Perfetto writes one).
  void value_of(const sequence_state& s, const pb::field& f, raw_arg& a) {
    switch (f.number) {
      case pf::annotation::bool_value:
        a.kind = raw_arg::type::boolean;
        a.b = f.value != 0;
        break;
      case pf::annotation::uint_value:
        if (f.value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
          a.kind = raw_arg::type::integer;
          a.i = static_cast<std::int64_t>(f.value);
        } else {
          a.kind = raw_arg::type::unsigned_integer;
        }
        a.u = f.value;
        break;
      case pf::annotation::int_value:
        a.kind = raw_arg::type::integer;
        a.i = f.as_int();
        break;
      case pf::annotation::double_value:
        a.kind = raw_arg::type::floating;
        a.f = f.as_double();
        break;
      case pf::annotation::string_value:
        a.kind = raw_arg::type::string;
        a.text = utf8_text(f.bytes, b_->kept, *anomalies_);
        break;
      case pf::annotation::string_value_iid:
        a.kind = raw_arg::type::string;
        a.text = interned(s.string_values, f.value);
        break;
      case pf::annotation::pointer_value:
        a.kind = raw_arg::type::string;
        a.text = keep(fmt::format("0x{:x}", f.value));
        break;
      case pf::annotation::legacy_json_value:  // kept as JSON when it is JSON
        if (json_or_counted(f.bytes)) {
          a.kind = raw_arg::type::json;
          a.text = f.bytes;
        } else {
          a.kind = raw_arg::type::string;
          a.text = utf8_text(f.bytes, b_->kept, *anomalies_);
        }
        break;
      default:
        a.kind = raw_arg::type::json;
        a.text = "[]";
        break;
    }
  }

  /// `Input Dims`/`Input Strides` from their JSON text (this writer's form), through the cache
  /// when the text is interned.
  bool dims_text(std::string_view text, bool text_interned) {
    if (text_interned && cache_->append_dims(text, b_->b)) return true;
    const std::size_t d0 = b_->b.dims.size(), i0 = b_->b.ints.size();
    if (text.empty() ||
        chrome_trace::read_dims_text(text.data(), text.size(), 0, b_->b) != text.size())
      return false;
    if (text_interned) cache_->keep_dims(text, b_->b, d0, i0);
    return true;
  }

  /// An annotation's value as JSON.
  void json_of(const sequence_state& s, std::string_view bytes, json_output& j, int depth) {
    if (depth > 64)
      throw input_error("perfetto: debug annotations nested deeper than 64", at(bytes));
    pb::decoder d = sub(bytes);
    pb::field f;
    bool any = false, dict = false;
    std::vector<std::string_view> entries;
    while (d.next(f)) {
      switch (f.number) {
        case pf::annotation::bool_value:
          j.boolean(f.value != 0);
          any = true;
          break;
        case pf::annotation::uint_value:
          j.unsigned_integer(f.value);
          any = true;
          break;
        case pf::annotation::int_value:
          j.integer(f.as_int());
          any = true;
          break;
        case pf::annotation::double_value:
          j.floating(f.as_double());
          any = true;
          break;
        case pf::annotation::string_value:
          j.string(counted_utf8(f.bytes, *anomalies_));
          any = true;
          break;
        case pf::annotation::string_value_iid:
          j.string(interned(s.string_values, f.value));
          any = true;
          break;
        case pf::annotation::pointer_value:
          j.string(fmt::format("0x{:x}", f.value));
          any = true;
          break;
        case pf::annotation::legacy_json_value:
          if (json_or_counted(f.bytes))
            j.raw(f.bytes);
          else
            j.string(counted_utf8(f.bytes, *anomalies_));
          any = true;
          break;
        case pf::annotation::nested_value:
          nested_json(f.bytes, j, depth + 1);
          any = true;
          break;
        case pf::annotation::dict_entries:
          dict = true;
          entries.push_back(f.bytes);
          break;
        case pf::annotation::array_values:
          entries.push_back(f.bytes);
          break;
        default:
          break;
      }
    }
    if (any) return;
    if (dict) {
      j.ch('{');
      for (std::size_t k = 0; k < entries.size(); ++k) {
        if (k) j.ch(',');
        pb::decoder e = sub(entries[k]);
        pb::field g;
        std::string_view key;
        while (e.next(g)) {
          if (g.number == pf::annotation::name && g.type == pb::wire::bytes)
            key = counted_utf8(g.bytes, *anomalies_);
          if (g.number == pf::annotation::name_iid) key = interned(s.annotation_names, g.value);
        }
        j.string(key).ch(':');
        json_of(s, entries[k], j, depth + 1);
      }
      j.ch('}');
      return;
    }
    j.ch('[');
    for (std::size_t k = 0; k < entries.size(); ++k) {
      if (k) j.ch(',');
      json_of(s, entries[k], j, depth + 1);
    }
    j.ch(']');
  }
  /// A deprecated NestedValue as JSON.
  void nested_json(std::string_view bytes, json_output& j, int depth) {
    if (depth > 64)
      throw input_error("perfetto: debug annotations nested deeper than 64", at(bytes));
    pb::decoder d = sub(bytes);
    pb::field f;
    std::uint64_t type = 0;
    std::vector<std::string_view> keys, values;
    bool scalar = false;
    std::string scalar_json;
    json_output sj = json_output::to_string(scalar_json);
    while (d.next(f)) {
      switch (f.number) {
        case pf::nested::nested_type:
          type = f.value;
          break;
        case pf::nested::dict_keys:
          keys.push_back(counted_utf8(f.bytes, *anomalies_));
          break;
        case pf::nested::dict_values:
        case pf::nested::array_values:
          values.push_back(f.bytes);
          break;
        case pf::nested::int_value:
          sj.integer(f.as_int());
          scalar = true;
          break;
        case pf::nested::double_value:
          sj.floating(f.as_double());
          scalar = true;
          break;
        case pf::nested::bool_value:
          sj.boolean(f.value != 0);
          scalar = true;
          break;
        case pf::nested::string_value:
          sj.string(counted_utf8(f.bytes, *anomalies_));
          scalar = true;
          break;
        default:
          break;
      }
    }
    sj.flush();
    if (type == pf::nested::dict) {
      j.ch('{');
      for (std::size_t k = 0; k < values.size(); ++k) {
        if (k) j.ch(',');
        j.string(k < keys.size() ? keys[k] : std::string_view{}).ch(':');
        nested_json(values[k], j, depth + 1);
      }
      j.ch('}');
    } else if (type == pf::nested::array) {
      j.ch('[');
      for (std::size_t k = 0; k < values.size(); ++k) {
        if (k) j.ch(',');
        nested_json(values[k], j, depth + 1);
      }
      j.ch(']');
    } else if (scalar) {
      j.raw(scalar_json);
    } else {
      j.raw("null");
    }
  }

  /// `Input Dims`/`Input Strides`: an array of entries, each an array of integers or of
  /// entries (chrome_trace/records.hpp); false when it is not one.
  bool dims_of(std::string_view bytes, int depth) {
    if (depth > 64) return false;
    pb::decoder d = sub(bytes);
    pb::field f;
    const bool has_entry = depth > 0;
    const auto entry = static_cast<std::uint32_t>(b_->b.dims.size());
    if (has_entry) b_->b.dims.push_back({false, 0, static_cast<std::uint32_t>(b_->b.ints.size())});
    bool ints = false, lists = false;
    while (d.next(f)) {
      if (f.number == pf::annotation::name || f.number == pf::annotation::name_iid) continue;
      if (f.number != pf::annotation::array_values || f.type != pb::wire::bytes) return false;
      // An element: an integer (most often `int_value` in one byte), or an array.
      const auto* e = reinterpret_cast<const unsigned char*>(f.bytes.data());
      bool is_int = false;
      std::int64_t v = 0;
      if (f.bytes.size() == 2 && e[0] == 0x20 && e[1] < 0x80) {
        is_int = true;
        v = e[1];
      } else if (!f.bytes.empty() && (e[0] == 0x20 || e[0] == 0x18)) {
        pb::decoder x = sub(f.bytes);
        pb::field g;
        while (x.next(g)) {
          if (g.number == pf::annotation::int_value && g.type == pb::wire::varint)
            is_int = true, v = g.as_int();
          else if (g.number == pf::annotation::uint_value && g.type == pb::wire::varint &&
                   g.value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            is_int = true, v = static_cast<std::int64_t>(g.value);
          else
            return false;
        }
      }
      if (is_int) {
        if (!has_entry || lists) return false;
        ints = true;
        b_->b.ints.push_back(v);
        ++b_->b.dims[entry].count;
        continue;
      }
      if (ints) return false;
      if (has_entry) {
        b_->b.dims[entry].list = true;
        ++b_->b.dims[entry].count;
      }
      lists = true;
      if (!dims_of(f.bytes, depth + 1)) return false;  // an array (an empty one: no fields)
    }
    return true;
  }
  /// `Input type`/`Concrete Inputs`: an array of strings; false when it is not one
  /// (`inline_text`: set when a string is written out in it rather than interned).
  bool strings_of(const sequence_state& s, std::string_view bytes, bool& inline_text) {
    pb::decoder d = sub(bytes);
    pb::field f;
    while (d.next(f)) {
      if (f.number == pf::annotation::name || f.number == pf::annotation::name_iid) continue;
      if (f.number != pf::annotation::array_values || f.type != pb::wire::bytes) return false;
      pb::decoder e = sub(f.bytes);
      pb::field g;
      bool got = false;
      while (e.next(g)) {
        if (g.number == pf::annotation::string_value && g.type == pb::wire::bytes) {
          b_->b.strings.push_back(g.bytes);
          got = inline_text = true;
        } else if (g.number == pf::annotation::string_value_iid) {
          b_->b.strings.push_back(interned(s.string_values, g.value));
          got = true;
        } else {
          return false;
        }
      }
      if (!got) return false;
    }
    return true;
  }

 private:
  /// Whether a `legacy_json_value` is JSON; one that is not is counted (`bad_value`) and kept
  /// as a string instead, so that no writer copies it into its output.
  bool json_or_counted(std::string_view text) {
    if (cache_->is_json(text)) return true;
    anomalies_->add(anomaly::bad_value);
    return false;
  }
  std::size_t at(std::string_view s) const noexcept {
    return static_cast<std::size_t>(s.data() - bytes_.data());
  }
  pb::decoder sub(std::string_view s) const { return {s, at(s)}; }
  std::string_view keep(std::string s) {
    b_->kept.push_back(std::move(s));
    return b_->kept.back();
  }

  std::string_view bytes_;
  batch_text* b_;
  anomaly_counts* anomalies_;
  annotation_cache* cache_;
};

}  // namespace detail::perfetto
TRACEMODEL_END_NAMESPACE
