// tracemodel/algo — the classes of device work, and kernels' short names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// What a device interval did.
enum class kernel_class : std::uint8_t { computation, communication, memory, other };
inline constexpr std::string_view kernel_class_names[] = {"COMPUTATION", "COMMUNICATION", "MEMORY",
                                                          "OTHER"};
[[nodiscard]] constexpr std::string_view to_string(kernel_class c) noexcept {
  return kernel_class_names[static_cast<int>(c)];
}

/// A kernel's short name: template arguments, argument lists and `->` removed, spaces left at
/// the end trimmed, the last word kept. Names of copies and sets (those that start with
/// `Memcpy`, `Memset` or `dma`, and name no NCCL kernel) and names without `<` or `(` stay as
/// they are.
[[nodiscard]] inline std::string short_kernel_name(std::string_view name) {
  const bool copy_or_set =
      (name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("dma")) &&
      name.find("ncclKernel") == std::string_view::npos;
  if (copy_or_set || name.find_first_of("<(") == std::string_view::npos) return std::string(name);
  std::string kept;
  int depth = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '-' && i + 1 < name.size() && name[i + 1] == '>') {
      ++i;  // `->` goes
      continue;
    }
    if (c == '<' || c == '(') {
      ++depth;
    } else if (c == '>' || c == ')') {
      if (depth > 0) --depth;
    } else if (depth == 0) {
      kept += c;
    }
  }
  while (!kept.empty() && kept.back() == ' ') kept.pop_back();
  const std::size_t space = kept.find_last_of(' ');
  return space == std::string::npos ? kept : kept.substr(space + 1);
}

TRACEMODEL_END_NAMESPACE
