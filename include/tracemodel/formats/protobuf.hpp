// tracemodel/formats — the protobuf wire format, as the Perfetto writer and reader use it: an
// encoder of fields into a growing buffer (nested messages sized in place) and a decoder that
// walks the fields of a message without building anything. No code generation, no library:
// varints, fixed 64/32-bit values and length-delimited fields are the whole format
// (protobuf.dev/programming-guides/encoding).
//
//   detail::pb::encoder e;
//   e.begin(1);                 // a nested message in field 1
//   e.uint(8, 1234);            // a varint field
//   e.bytes(23, "name");        // a string field
//   e.end();                    // its size is written before it
//
//   detail::pb::decoder d(bytes, offset_of_bytes_in_file);
//   detail::pb::field f;
//   while (d.next(f)) { if (f.number == 8) ...f.value...; }
//
// A decoder throws `input_error` naming the byte offset (in the file) of a field that runs past
// its message, a varint longer than ten bytes, a wire type the format does not have or a field
// number 0. Groups (wire types 3 and 4, deprecated and never written by Perfetto) are errors too.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/assert.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace detail::pb {

static_assert(std::endian::native == std::endian::little,
              "the protobuf encoder writes fixed-width values as the host stores them");

enum class wire : std::uint8_t { varint = 0, fixed64 = 1, bytes = 2, fixed32 = 5 };

/// The number of bytes of `v` as a varint.
constexpr std::size_t varint_size(std::uint64_t v) noexcept {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

/// Fields appended to a buffer. A nested message (`begin`/`end`) gets one byte for its size
/// when it starts; a message of 128 bytes or more is moved up to make room for a longer one.
class encoder {
 public:
  encoder() { grow(1 << 16); }

  void uint(std::uint32_t field, std::uint64_t v) {
    tag(field, wire::varint);
    varint(v);
  }
  /// An int32/int64 field: negative values as ten-byte varints (two's complement), as protobuf.
  void sint(std::uint32_t field, std::int64_t v) { uint(field, static_cast<std::uint64_t>(v)); }
  void boolean(std::uint32_t field, bool v) { uint(field, v ? 1 : 0); }
  void fixed64(std::uint32_t field, std::uint64_t v) {
    tag(field, wire::fixed64);
    raw(&v, 8);  // (little-endian hosts: checked above)
  }
  void floating(std::uint32_t field, double v) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, 8);
    fixed64(field, bits);
  }
  void bytes(std::uint32_t field, std::string_view s) {
    tag(field, wire::bytes);
    varint(s.size());
    raw(s.data(), s.size());
  }
  /// Starts a nested message in `field`; `end` closes the innermost one.
  void begin(std::uint32_t field) {
    tag(field, wire::bytes);
    open_.push_back(n_);
    *room(1) = '\0';
    ++n_;
  }
  void end() {
    const std::size_t at = open_.back();
    open_.pop_back();
    const std::size_t len = n_ - at - 1;
    if (len < 0x80) {
      buf_[at] = static_cast<char>(len);
      return;
    }
    const std::size_t n = varint_size(len);
    room(n - 1);
    std::memmove(buf_.get() + at + n, buf_.get() + at + 1, len);
    n_ += n - 1;
    put_varint(buf_.get() + at, len);
  }

  void tag(std::uint32_t field, wire w) {
    varint((static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint64_t>(w));
  }
  void varint(std::uint64_t v) {
    char* p = room(10);
    if (v < 0x80) {
      *p = static_cast<char>(v);
      ++n_;
      return;
    }
    n_ += put_varint(p, v);
  }
  void raw(const void* p, std::size_t n) {
    std::memcpy(room(n), p, n);
    n_ += n;
  }

  [[nodiscard]] std::string_view view() const noexcept { return {buf_.get(), n_}; }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }
  [[nodiscard]] bool nested() const noexcept { return !open_.empty(); }
  void clear() noexcept { n_ = 0; }

 private:
  /// Room for `k` more bytes at the end (the buffer grows by doubling, not cleared).
  char* room(std::size_t k) {
    if (n_ + k > cap_) grow(std::max(cap_ * 2, n_ + k));
    return buf_.get() + n_;
  }
  void grow(std::size_t cap) {
    std::unique_ptr<char[]> b(new char[cap]);  // NOLINT(cppcoreguidelines-avoid-c-arrays)
    if (n_ > 0) std::memcpy(b.get(), buf_.get(), n_);
    buf_ = std::move(b);
    cap_ = cap;
  }
  static std::size_t put_varint(char* p, std::uint64_t v) noexcept {
    std::size_t n = 1;
    while (v >= 0x80) {
      *p++ = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
      ++n;
    }
    *p = static_cast<char>(v);
    return n;
  }

  std::unique_ptr<char[]> buf_;  // NOLINT(cppcoreguidelines-avoid-c-arrays)
  std::size_t n_ = 0, cap_ = 0;
  std::vector<std::size_t> open_;
};

/// One field as decoded: its number and wire type, its value (varints and fixed values) or its
/// bytes (length-delimited), and where it starts in the file.
struct field {
  std::uint32_t number = 0;
  wire type = wire::varint;
  std::uint64_t value = 0;
  std::string_view bytes;
  std::size_t at = 0;

  [[nodiscard]] std::int64_t as_int() const noexcept { return static_cast<std::int64_t>(value); }
  [[nodiscard]] double as_double() const noexcept {
    if (type == wire::fixed32) {
      float f = 0;
      const auto bits = static_cast<std::uint32_t>(value);
      std::memcpy(&f, &bits, 4);
      return f;
    }
    double d = 0;
    std::memcpy(&d, &value, 8);
    return d;
  }
};

/// The fields of one message, in order. `origin`: the offset of the message's first byte in the
/// file, for errors.
class decoder {
 public:
  decoder(std::string_view message, std::size_t origin) noexcept
      : p_(reinterpret_cast<const unsigned char*>(message.data())),
        begin_(p_),
        end_(p_ + message.size()),
        origin_(origin) {}
  /// The next field, or false at the end of the message.
  [[gnu::always_inline]] bool next(field& f) {
    if (p_ == end_) return false;
    f.at = offset();
    std::uint64_t key = *p_;
    if (key < 0x80) {  // a one-byte tag: fields 1 to 15, nearly every tag
      ++p_;
    } else {
      key = varint(f.at);
    }
    const auto type = static_cast<std::uint8_t>(key & 7);
    const std::uint64_t number = key >> 3;
    if (number == 0 || number > 0x1fffffff) fail("a field number 0 or out of range", f.at);
    f.number = static_cast<std::uint32_t>(number);
    switch (type) {
      case 0:
        f.type = wire::varint;
        if (p_ != end_ && *p_ < 0x80) {
          f.value = *p_++;
        } else {
          f.value = varint(f.at);
        }
        break;
      case 1:
        f.type = wire::fixed64;
        need(8, f.at);
        std::memcpy(&f.value, p_, 8);
        p_ += 8;
        break;
      case 2: {
        f.type = wire::bytes;
        std::uint64_t len = 0;
        if (p_ != end_ && *p_ < 0x80) {
          len = *p_++;
        } else {
          len = varint(f.at);
        }
        need(len, f.at);
        f.bytes =
            std::string_view(reinterpret_cast<const char*>(p_), static_cast<std::size_t>(len));
        p_ += len;
        break;
      }
      case 5: {
        f.type = wire::fixed32;
        need(4, f.at);
        std::uint32_t v = 0;
        std::memcpy(&v, p_, 4);
        f.value = v;
        p_ += 4;
        break;
      }
      default:
        fail("a wire type protobuf does not have (or a group)", f.at);
    }
    return true;
  }

  /// The offset in the file of the next byte.
  [[nodiscard]] std::size_t offset() const noexcept {
    return origin_ + static_cast<std::size_t>(p_ - begin_);
  }
  /// The offset in the file of a byte of this message's text.
  [[nodiscard]] std::size_t offset_of(const char* p) const noexcept {
    return origin_ + static_cast<std::size_t>(reinterpret_cast<const unsigned char*>(p) - begin_);
  }

 private:
  /// A varint of the field that starts at `at` (errors name the field).
  [[gnu::noinline]] std::uint64_t varint(std::size_t at) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) fail("a varint cut short", at);
      const unsigned char b = *p_++;
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail("a varint longer than ten bytes", at);
  }
  void need(std::uint64_t n, std::size_t at) const {
    if (n > static_cast<std::uint64_t>(end_ - p_)) fail("a field that runs past its message", at);
  }
  [[noreturn, gnu::cold, gnu::noinline]] static void fail(const char* what, std::size_t at) {
    throw input_error(std::string("protobuf: ") + what + " at byte " + std::to_string(at), at);
  }

  const unsigned char* p_;
  const unsigned char* begin_;
  const unsigned char* end_;
  std::size_t origin_;
};

/// The values of a packed repeated varint field (or one unpacked value), each to `f`.
template <class F>
void for_each_varint(const field& fl, std::size_t origin, F&& f) {
  if (fl.type != wire::bytes) {
    f(fl.value);
    return;
  }
  const auto* p = reinterpret_cast<const unsigned char*>(fl.bytes.data());
  const auto* end = p + fl.bytes.size();
  while (p < end) {
    std::uint64_t v = 0;
    int shift = 0;
    while (true) {
      if (p == end || shift >= 70)
        throw input_error("protobuf: a packed varint cut short at byte " + std::to_string(origin),
                          origin);
      const unsigned char b = *p++;
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if ((b & 0x80) == 0) break;
    }
    f(v);
  }
}

/// The values of a packed repeated fixed64/double field (or one unpacked value), each to `f` as
/// its 64 bits.
template <class F>
void for_each_fixed64(const field& fl, std::size_t origin, F&& f) {
  if (fl.type != wire::bytes) {
    f(fl.value);
    return;
  }
  if (fl.bytes.size() % 8 != 0)
    throw input_error("protobuf: a packed fixed64 field of " + std::to_string(fl.bytes.size()) +
                          " bytes at byte " + std::to_string(origin),
                      origin);
  for (std::size_t k = 0; k < fl.bytes.size(); k += 8) {
    std::uint64_t v = 0;
    std::memcpy(&v, fl.bytes.data() + k, 8);
    f(v);
  }
}

}  // namespace detail::pb
TRACEMODEL_END_NAMESPACE
