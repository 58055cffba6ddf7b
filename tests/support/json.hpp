// Test support: read a (possibly gzip-compressed) JSON file into a simdjson DOM.
#pragma once

#include <simdjson.h>
#include <zlib.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace tmtest {

inline std::string data_path(const std::string& rel) {
  return std::string(TRACEMODEL_TEST_DATA_DIR) + "/" + rel;
}

/// The bytes of a file, decompressed when it is gzip.
inline std::string read_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw std::runtime_error("cannot open " + path);
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  gzclose(f);
  if (n < 0) throw std::runtime_error("cannot read " + path);
  return out;
}

/// A parsed document that owns its parser.
struct json_doc {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  explicit json_doc(const std::string& path) {
    const std::string text = read_file(path);
    root = parser.parse(text);  // copies into the parser's padded buffer
  }
};

}  // namespace tmtest
