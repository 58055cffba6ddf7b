// tracemodel/algo — the classes of device work, and Holistic Trace Analysis's rule for them and its
// short names.
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

/// HTA's kernel classes, by name alone (hta-analyses.md, section 2).
[[nodiscard]] inline kernel_class hta_kernel_class(std::string_view n) noexcept {
  auto contains = [&](std::string_view s) { return n.find(s) != std::string_view::npos; };
  if (n.starts_with("nccl") || n.starts_with("hip") || n.starts_with("hccl") ||
      contains("ncclKernel"))
    return kernel_class::communication;
  if (n.starts_with("Memcpy") || n.starts_with("hipMemcpy") || n.starts_with("Memset") ||
      n.starts_with("hipMemset") || n.starts_with("dma"))
    return kernel_class::memory;
  // Not computation when any of these matches (anchored at the start unless it begins with .*).
  static constexpr std::string_view starts[] = {"nccl",        "Stream Wait Event",
                                                "runFunction", "hip",
                                                "job_exe",     "packet",
                                                "pe_exe",      "cpum_exe_subgraph",
                                                "hccl",        "collective_subgraph_execution"};
  for (std::string_view s : starts)
    if (n.starts_with(s)) return kernel_class::other;
  if (contains("Memcpy") || contains("Memset") || contains("dma") || contains("Sync"))
    return kernel_class::other;  // (.*Memcpy), (.*Memset), (.*dma), (^.*Sync)
  // (cuda.*LaunchKernel): "cuda" at the start, "LaunchKernel" after it.
  if (n.starts_with("cuda") && n.find("LaunchKernel", 4) != std::string_view::npos)
    return kernel_class::other;
  return kernel_class::computation;
}

/// HTA's `shorten_name` (spaces left at the end by a removed group are trimmed first).
[[nodiscard]] inline std::string shorten_name(std::string_view name) {
  if (hta_kernel_class(name) == kernel_class::memory ||
      name.find_first_of("<(") == std::string_view::npos)
    return std::string(name);
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
