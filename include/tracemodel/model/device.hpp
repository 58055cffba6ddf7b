// tracemodel/model — what is known about a device of a trace.
#pragma once

#include <cstdint>
#include <string>

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE

/// A device of a trace (a Kineto trace's `deviceProperties` entry, or what a runtime knows).
struct device_info {
  std::int64_t id = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  bool rocm = false;  ///< an AMD device: its compute capability numbers mean something else
  /// TF32 matrix math: NVIDIA devices of compute capability 8.0 and later.
  [[nodiscard]] bool supports_tf32() const noexcept { return !rocm && compute_major >= 8; }
};

TRACEMODEL_END_NAMESPACE
