// tracemodel/formats — text in XML and HTML (the flame chart, the programs' pages).
#pragma once

#include <string>
#include <string_view>

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// Appends `s` to `out` with `&`, `<`, `>`, `"` and `'` escaped, and control characters (not
/// allowed in XML 1.0 text) but line breaks and tabs made spaces.
inline void append_xml_escaped(std::string& out, std::string_view s) {
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // Control characters are not allowed in XML 1.0 text.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
}

TRACEMODEL_END_NAMESPACE
