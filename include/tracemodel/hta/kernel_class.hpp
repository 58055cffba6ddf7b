// tracemodel/hta — HTA's classes of kernels, by name alone (docs/hta-rules.md, "Kernel
// classes").
#pragma once

#include <string_view>

#include "tracemodel/algo/kernel_class.hpp"
#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace hta {

/// HTA's class of a kernel's name: its regular expressions, in its order.
[[nodiscard]] inline kernel_class kernel_class_of(std::string_view n) noexcept {
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

}  // namespace hta
TRACEMODEL_END_NAMESPACE
