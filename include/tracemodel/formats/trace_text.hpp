// tracemodel/formats — a trace file's text in memory: the loading every reader shares.
//
//   tracemodel::trace_text text = tracemodel::load_trace_text("trace.json.gz");
//
// Any readable path (a regular file, a pipe: `<(zcat trace.json.gz)`, `/dev/stdin`), gzip or
// not. A regular file's size is known first (one read, no growing), and a large one is read by
// two threads (each half) when the thread options allow two. The text lives in uninitialized
// huge-page memory from tracemodel's memory resource, followed by `text_padding` bytes that a
// parser may read past the end (simdjson's padding), and its pages can be handed back to the
// operating system as a reader goes (`trace_text::release_before`). `stream_trace_text` opens a
// text that is read from its file (or inflated) only as the parser asks for it.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "tracemodel/config.hpp"
#include "tracemodel/detail/assert.hpp"
#include "tracemodel/detail/big_allocator.hpp"
#include "tracemodel/threads.hpp"

#if TRACEMODEL_BIG_ALLOC_MMAP
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

TRACEMODEL_BEGIN_NAMESPACE

/// Bytes after a trace's text that a parser may read (simdjson's padding; the readers check it).
inline constexpr std::size_t text_padding = 64;

class trace_text;
trace_text stream_trace_text(const std::string& path, std::size_t step,
                             const thread_options& threads = {},
                             std::size_t whole_from = static_cast<std::size_t>(-1));

/// The text of a trace file (decompressed if it was gzip) followed by `text_padding` bytes, in
/// uninitialized huge-page memory: a 1 GB file costs no memset and ~500 page faults instead of
/// 250,000. Move-only; the reader parses it in place.
class trace_text {
 public:
  trace_text() = default;
  explicit trace_text(std::size_t capacity) { reserve(capacity); }
  trace_text(trace_text&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        cap_(std::exchange(o.cap_, 0)),
        released_(std::exchange(o.released_, 0)),
        file_(std::exchange(o.file_, -1)),
        loaded_(std::exchange(o.loaded_, 0)),
        step_(std::exchange(o.step_, 0)),
        path_(std::move(o.path_)),
        gzip_(std::move(o.gzip_)) {}
  trace_text& operator=(trace_text o) noexcept {
    std::swap(p_, o.p_);
    std::swap(size_, o.size_);
    std::swap(cap_, o.cap_);
    std::swap(released_, o.released_);
    std::swap(file_, o.file_);
    std::swap(loaded_, o.loaded_);
    std::swap(step_, o.step_);
    std::swap(path_, o.path_);
    std::swap(gzip_, o.gzip_);
    return *this;
  }
  ~trace_text() {
    if (p_ != nullptr) detail::big_deallocate_released(p_, cap_, released_);
    close_file();
  }

  [[nodiscard]] char* data() noexcept { return p_; }
  [[nodiscard]] const char* data() const noexcept { return p_; }
  /// Bytes of text (the padding after them is not counted).
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::string_view view() const noexcept { return {p_, size_}; }
  /// The text and the padding, as the reader takes them.
  [[nodiscard]] std::span<char> padded() noexcept { return {p_, size_ + text_padding}; }

  /// Room for `n` bytes of text and the padding; keeps the text.
  void reserve(std::size_t n) {
    const std::size_t want = n + text_padding;
    if (want <= cap_) return;
    char* q = static_cast<char*>(detail::big_allocate(want));
    if (size_ > 0) std::memcpy(q, p_, size_);
    if (p_ != nullptr) detail::big_deallocate_released(p_, cap_, released_);
    p_ = q;
    cap_ = want;
    released_ = 0;
  }
  /// Twice the room (and 64 KiB more), keeping the first `used` bytes: for a text filled as
  /// it is read.
  void grow(std::size_t used) {
    set_size(used);
    reserve(capacity() * 2 + 65536);
  }
  /// Room for text up to `capacity()`, before the padding.
  [[nodiscard]] std::size_t capacity() const noexcept {
    return cap_ == 0 ? 0 : cap_ - text_padding;
  }
  /// Sets the text length (within capacity) and writes the padding after it.
  void set_size(std::size_t n) noexcept {
    size_ = n;
    std::memset(p_ + n, ' ', text_padding);
  }
  /// Gives the memory of the text before `offset` back to the operating system, in whole huge
  /// pages (where the text is mapped memory: Linux, texts of 2 MB and more); those bytes read
  /// as zeros afterwards. The reader calls it on a text it owns as it goes, so that reading a
  /// file holds about the table and what is left of the text, not both whole.
  void release_before(std::size_t offset) noexcept {
    if (offset > released_) released_ = detail::big_release(p_, released_, offset, cap_);
  }
  /// Bytes at the front released so far.
  [[nodiscard]] std::size_t released() const noexcept { return released_; }

  // ---- a text read as it is parsed (stream_trace_text)
  /// Whether every byte of the text is in place: false while a streamed text's file is still
  /// being read.
  [[nodiscard]] bool complete() const noexcept { return file_ < 0; }
  /// The bytes in place, from the front: `size()` once complete. After them, while the text is
  /// not complete, lies a fence of `text_padding` bytes that ends every string, value and
  /// nesting of up to 31 levels (a quote and closing brackets, twice), so that a parser reading
  /// past the bytes in place stops soon; what it read there is not the file's.
  [[nodiscard]] std::size_t loaded() const noexcept { return file_ < 0 ? size_ : loaded_; }
  /// Reads (or inflates) a streamed text's file on, through at least byte `end` (the text's end
  /// at most), in whole reading steps; once the end is reached the file is closed and the
  /// padding written. Throws input_error when the file cannot be read, its size changed since
  /// it was opened or its gzip stream is cut short or corrupt, and text_size_mismatch when a
  /// gzip file's text is not the size its trailer gave. Nothing to do on a complete text.
  void load_through(std::size_t end);
  /// Reads the rest of a streamed text's file.
  void load_all() { load_through(size_); }
  /// A streamed text's reading step (0 for a text read whole).
  [[nodiscard]] std::size_t step() const noexcept { return step_; }

 private:
  friend trace_text stream_trace_text(const std::string& path, std::size_t step,
                                      const thread_options& threads, std::size_t whole_from);
  struct gzip_stream;
  struct gzip_deleter {
    void operator()(gzip_stream* g) const noexcept;
  };
  void close_file() noexcept;
  void fence() noexcept;
  void inflate_through(std::size_t to);
  void check_gzip_end();

  char* p_ = nullptr;
  std::size_t size_ = 0;
  std::size_t cap_ = 0;
  std::size_t released_ = 0;
  int file_ = -1;           ///< a streamed text's file, until it is read to its end
  std::size_t loaded_ = 0;  ///< a streamed text's bytes in place
  std::size_t step_ = 0;    ///< a streamed text's reading step
  std::string path_;        ///< a streamed text's file name (for errors)
  std::unique_ptr<gzip_stream, gzip_deleter> gzip_;  ///< a streamed gzip file's inflater
};

/// Thrown by a streamed gzip text whose size (the gzip trailer's: the last member's, modulo
/// 2^32) turns out not to be the text's (several members, 4 GiB or more): read the file whole
/// instead (`read_chrome_trace_file` does).
struct text_size_mismatch {};

namespace detail {
inline input_error gzip_truncated(const std::string& path, std::size_t at, std::size_t out) {
  return input_error(path + ": truncated gzip stream (compressed byte " + std::to_string(at) +
                         ", " + std::to_string(out) + " bytes decompressed)",
                     out);
}
inline input_error gzip_corrupt(const std::string& path, std::size_t at, const char* msg,
                                std::size_t out) {
  return input_error(path + ": corrupt gzip stream at compressed byte " + std::to_string(at) +
                         ": " + (msg != nullptr ? msg : "corrupt data"),
                     out);
}
}  // namespace detail

namespace detail {
/// Reads from `fill(p, room)` (bytes read, 0 at the end) into `text` after its first `got`
/// bytes until the end, growing it when full.
template <class Fill>
void read_until_end(trace_text& text, Fill fill, std::size_t got = 0) {
  for (;;) {
    if (text.capacity() == got) text.grow(got);
    const std::size_t r = fill(text.data() + got, text.capacity() - got);
    if (r == 0) break;
    got += r;
  }
  text.set_size(got);
}

#if TRACEMODEL_BIG_ALLOC_MMAP
/// Files of at least this size are read by two threads (see read_whole_file).
inline constexpr std::size_t parallel_load_bytes = std::size_t{8} << 20;

/// Reads bytes [from, to) of `fd` into `p + from`, stopping early at the end of the file:
/// the bytes read, or -1 on an error.
inline std::ptrdiff_t read_range(int fd, char* p, std::size_t from, std::size_t to) {
  std::size_t at = from;
  while (at < to) {
    const ssize_t r = ::pread(fd, p + at, std::min<std::size_t>(to - at, std::size_t{1} << 30),
                              static_cast<off_t>(at));
    if (r > 0) {
      at += static_cast<std::size_t>(r);
    } else if (r == 0) {
      break;
    } else if (errno != EINTR) {
      return -1;
    }
  }
  return static_cast<std::ptrdiff_t>(at - from);
}

/// Reads the first `size` bytes of `fd` into `p`, the back half on a second thread: copying
/// from the page cache, and the page faults of the fresh text, take two cores instead of one.
/// Returns how many bytes from the front are in
/// place: `size`, or fewer if the file got shorter meanwhile, or 0 if no thread could be had.
inline std::size_t read_two_halves(int fd, char* p, std::size_t size, const std::string& path,
                                   const thread_options& threads) {
  const std::size_t half = (size / 2) & ~std::size_t{4095};
  std::ptrdiff_t back = 0;
  worker other;
  try {
    other = worker(threads, [&] { back = read_range(fd, p, half, size); });
  } catch (const std::system_error&) {
    return 0;
  }
  const std::ptrdiff_t front = read_range(fd, p, 0, half);
  other.join();
  if (front < 0 || back < 0) throw input_error("cannot read " + path);
  const auto f = static_cast<std::size_t>(front);
  return f < half ? f : half + static_cast<std::size_t>(back);
}
#endif

/// A file's whole text. The size of a regular file is known first (one read, no growing); a
/// pipe or a terminal is read until its end. A regular file of parallel_load_bytes or more is
/// read by two threads when `threads` allows two.
inline trace_text read_whole_file(const std::string& path, const thread_options& threads) {
#if TRACEMODEL_BIG_ALLOC_MMAP
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw input_error("cannot open " + path);
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_fd{fd};
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  // One byte more than a regular file's size, so that the end is seen without growing.
  const auto size = regular ? static_cast<std::size_t>(st.st_size) : 0;
  trace_text text(regular ? size + 1 : std::size_t{1} << 16);
  // The halves, then whatever is left (all of it when not read in halves; what the file grew
  // by; after a shortened file's end, nothing) one read at a time from where they stopped.
  std::size_t got = 0;
  if (size >= parallel_load_bytes && thread_budget(threads) > 1) {
    got = read_two_halves(fd, text.data(), size, path, threads);
    if (got > 0 && ::lseek(fd, static_cast<off_t>(got), SEEK_SET) < 0)
      throw input_error("cannot read " + path);
  }
  read_until_end(
      text,
      [&](char* p, std::size_t room) {
        for (;;) {
          const ssize_t r = ::read(fd, p, std::min<std::size_t>(room, std::size_t{1} << 30));
          if (r >= 0) return static_cast<std::size_t>(r);
          if (errno != EINTR) throw input_error("cannot read " + path);
        }
      },
      got);
  return text;
#else
  (void)threads;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw input_error("cannot open " + path);
  struct closer {
    std::FILE* f;
    ~closer() { std::fclose(f); }
  } close_file{f};
  trace_text text(std::size_t{1} << 16);
  read_until_end(text, [&](char* p, std::size_t room) {
    const std::size_t r = std::fread(p, 1, room, f);
    if (r == 0 && std::ferror(f) != 0) throw input_error("cannot read " + path);
    return r;
  });
  return text;
#endif
}
}  // namespace detail

/// The text of a trace file, decompressed if it is gzip. Any readable path: a regular file, a
/// pipe (`<(zcat trace.json.gz)`, `/dev/stdin`). A large regular file is read by two threads
/// (each half of it) when `threads` allows two.
inline trace_text load_trace_text(const std::string& path, const thread_options& threads = {}) {
  trace_text raw = detail::read_whole_file(path, threads);
  const std::size_t n = raw.size();
  const bool gzip = n >= 2 && static_cast<unsigned char>(raw.data()[0]) == 0x1f &&
                    static_cast<unsigned char>(raw.data()[1]) == 0x8b;
  if (!gzip) return raw;
  // The gzip trailer holds the uncompressed size modulo 2^32: a good first guess.
  std::size_t guess = n * 4;
  if (n >= 18) {
    const auto* t = reinterpret_cast<const unsigned char*>(raw.data() + n - 4);
    const std::size_t isize = std::size_t{t[0]} | std::size_t{t[1]} << 8 | std::size_t{t[2]} << 16 |
                              std::size_t{t[3]} << 24;
    if (isize > 0) guess = isize;
  }
  trace_text text(guess);
  std::size_t out = 0;
  std::size_t in = 0;
  while (in < n) {  // one or more gzip members
    z_stream z{};
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw input_error("cannot initialize zlib");
    z.next_in = reinterpret_cast<Bytef*>(raw.data() + in);
    z.avail_in = static_cast<uInt>(std::min<std::size_t>(n - in, 1u << 30));
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      if (text.capacity() - out < 65536) text.grow(out);
      z.next_out = reinterpret_cast<Bytef*>(text.data() + out);
      const std::size_t room = text.capacity() - out;
      z.avail_out = static_cast<uInt>(std::min<std::size_t>(room, 1u << 30));
      const uInt before_out = z.avail_out;
      rc = inflate(&z, Z_NO_FLUSH);
      out += before_out - z.avail_out;
      if (rc == Z_STREAM_END) break;
      if (rc == Z_BUF_ERROR && z.avail_in == 0) {
        const std::size_t at = in + z.total_in;
        inflateEnd(&z);
        throw detail::gzip_truncated(path, at, out);
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        const input_error e = detail::gzip_corrupt(path, in + z.total_in, z.msg, out);
        inflateEnd(&z);
        throw e;
      }
    }
    in += z.total_in;
    inflateEnd(&z);
    while (in < n && raw.data()[in] == '\0') ++in;  // padding after a member
  }
  text.set_size(out);
  return text;
}

inline void trace_text::close_file() noexcept {
#if TRACEMODEL_BIG_ALLOC_MMAP
  if (file_ >= 0) ::close(file_);
#endif
  file_ = -1;
}

struct trace_text::gzip_stream {
  z_stream z{};
  std::unique_ptr<unsigned char[]> in = std::make_unique<unsigned char[]>(in_size);
  std::size_t read = 0;  ///< compressed bytes read from the file
  bool ended = false;    ///< the (first) member ended
  static constexpr std::size_t in_size = std::size_t{256} << 10;
};
inline void trace_text::gzip_deleter::operator()(gzip_stream* g) const noexcept {
  inflateEnd(&g->z);
  delete g;
}

inline void trace_text::fence() noexcept {
  for (std::size_t i = 0; i < text_padding; ++i)
    p_[loaded_ + i] = i % (text_padding / 2) == 0 ? '"' : '}';
}

inline void trace_text::load_through(std::size_t end) {
#if TRACEMODEL_BIG_ALLOC_MMAP
  if (file_ < 0 || (end <= loaded_ && loaded_ < size_)) return;
  // Whole steps from the front.
  const std::size_t to = std::min(size_, (std::min(end, size_) + step_ - 1) / step_ * step_);
  if (gzip_) {
    inflate_through(to);
  } else {
    const std::ptrdiff_t r = detail::read_range(file_, p_, loaded_, to);
    if (r < 0) throw input_error("cannot read " + path_, loaded_);
    loaded_ += static_cast<std::size_t>(r);
    if (loaded_ < to)
      throw input_error(path_ + ": the file got shorter while it was read (" +
                            std::to_string(size_) + " bytes when opened)",
                        loaded_);
  }
  if (loaded_ < size_) {
    fence();
    return;
  }
  if (gzip_) {
    check_gzip_end();
  } else {
    char extra = 0;
    ssize_t more = 0;
    while ((more = ::pread(file_, &extra, 1, static_cast<off_t>(size_))) < 0 && errno == EINTR) {
    }
    if (more != 0)
      throw input_error(path_ + ": the file grew while it was read (" + std::to_string(size_) +
                            " bytes when opened)",
                        size_);
  }
  gzip_.reset();
  close_file();
  set_size(size_);
#else
  (void)end;
#endif
}

#if TRACEMODEL_BIG_ALLOC_MMAP
namespace detail {
/// The next compressed bytes of a streamed gzip file into its inflater; false at the file's end.
inline bool refill(z_stream& z, unsigned char* in, std::size_t room, int fd, std::size_t& read,
                   const std::string& path, std::size_t out) {
  ssize_t r = 0;
  while ((r = ::pread(fd, in, room, static_cast<off_t>(read))) < 0 && errno == EINTR) {
  }
  if (r < 0) throw input_error("cannot read " + path, out);
  read += static_cast<std::size_t>(r);
  z.next_in = in;
  z.avail_in = static_cast<uInt>(r);
  return r > 0;
}
}  // namespace detail

/// Inflates the text up to `to`.
inline void trace_text::inflate_through(std::size_t to) {
  gzip_stream& g = *gzip_;
  while (loaded_ < to) {
    if (g.ended) throw text_size_mismatch{};  // the member ended before the trailer's size
    if (g.z.avail_in == 0 &&
        !detail::refill(g.z, g.in.get(), g.in_size, file_, g.read, path_, loaded_))
      throw detail::gzip_truncated(path_, g.z.total_in, loaded_);
    g.z.next_out = reinterpret_cast<Bytef*>(p_ + loaded_);
    g.z.avail_out = static_cast<uInt>(std::min<std::size_t>(to - loaded_, 1u << 30));
    const uInt room = g.z.avail_out;
    const int rc = inflate(&g.z, Z_NO_FLUSH);
    loaded_ += room - g.z.avail_out;
    if (rc == Z_STREAM_END) {
      g.ended = true;
    } else if ((rc != Z_OK && rc != Z_BUF_ERROR) || (rc == Z_BUF_ERROR && g.z.avail_in != 0)) {
      throw detail::gzip_corrupt(path_, g.z.total_in, g.z.msg, loaded_);
    }
  }
}

/// At the trailer's size: the member must end here, and only zeros (padding) follow it; else
/// the file is more than the size said (text_size_mismatch), or cut short.
inline void trace_text::check_gzip_end() {
  gzip_stream& g = *gzip_;
  while (!g.ended) {
    if (g.z.avail_in == 0 &&
        !detail::refill(g.z, g.in.get(), g.in_size, file_, g.read, path_, loaded_))
      throw detail::gzip_truncated(path_, g.z.total_in, loaded_);
    unsigned char extra = 0;
    g.z.next_out = &extra;
    g.z.avail_out = 1;
    const int rc = inflate(&g.z, Z_NO_FLUSH);
    if (g.z.avail_out == 0) throw text_size_mismatch{};
    if (rc == Z_STREAM_END)
      g.ended = true;
    else if (rc != Z_OK && rc != Z_BUF_ERROR)
      throw detail::gzip_corrupt(path_, g.z.total_in, g.z.msg, loaded_);
  }
  do {
    for (; g.z.avail_in > 0; ++g.z.next_in, --g.z.avail_in)
      if (*g.z.next_in != 0) throw text_size_mismatch{};  // another member
  } while (detail::refill(g.z, g.in.get(), g.in_size, file_, g.read, path_, loaded_));
}
#else
inline void trace_text::inflate_through(std::size_t) {}
inline void trace_text::check_gzip_end() {}
#endif

/// The text of a trace file read as it is parsed: a regular file is opened and its text
/// allocated, but read (or inflated, gzip) only as the parser asks (`trace_text::load_through`),
/// `step` bytes at a time; with a reader that releases what it has read (`release_before`), the
/// text then holds a few steps at a time instead of the whole file. Other paths, a `step` of 0,
/// texts of `whole_from` bytes or more and gzip files whose trailer gives no plausible size are
/// read whole first (load_trace_text, with `threads`). The file's size is taken when it is
/// opened: a file that shrinks or grows while it is read is an input_error. A gzip text whose
/// trailer's size proves wrong (several members, 4 GiB or more) throws text_size_mismatch when
/// that is found: read the file whole then.
inline trace_text stream_trace_text(const std::string& path, std::size_t step,
                                    const thread_options& threads, std::size_t whole_from) {
#if TRACEMODEL_BIG_ALLOC_MMAP
  if (step == 0) return load_trace_text(path, threads);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw input_error("cannot open " + path);
  struct closer {
    int fd;
    ~closer() {
      if (fd >= 0) ::close(fd);
    }
  } close_fd{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return load_trace_text(path, threads);
  const auto file_size = static_cast<std::size_t>(st.st_size);
  std::size_t size = file_size;
  unsigned char magic[2] = {0, 0};
  const bool gzip =
      size >= 2 && ::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (gzip) {
    // The text's size from the trailer (of the last member, modulo 2^32): used where it is
    // plausible (deflate neither grows text by more than its framing nor shrinks it 1,100
    // times), checked at the end (text_size_mismatch).
    unsigned char t[4] = {0, 0, 0, 0};
    if (file_size < 18 || ::pread(fd, t, 4, static_cast<off_t>(file_size - 4)) != 4)
      return load_trace_text(path, threads);
    size = std::size_t{t[0]} | std::size_t{t[1]} << 8 | std::size_t{t[2]} << 16 |
           std::size_t{t[3]} << 24;
    if (size + 1024 < file_size || size / 1100 > file_size) return load_trace_text(path, threads);
  }
  if (size >= whole_from) return load_trace_text(path, threads);
  trace_text text(size);
  text.size_ = size;
  text.file_ = std::exchange(close_fd.fd, -1);
  text.step_ = step;
  text.path_ = path;
  if (gzip) {
    text.gzip_.reset(new trace_text::gzip_stream);
    if (inflateInit2(&text.gzip_->z, 16 + MAX_WBITS) != Z_OK)
      throw input_error("cannot initialize zlib");
  }
  text.fence();
  if (size == 0) text.load_all();
  return text;
#else
  (void)step;
  (void)whole_from;
  return load_trace_text(path, threads);
#endif
}

TRACEMODEL_END_NAMESPACE
