// tracemodel — version. The single source of truth: CMake parses TRACEMODEL_VERSION from here.
#pragma once

// major * 10000 + minor * 100 + patch
#define TRACEMODEL_VERSION 100

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE
inline constexpr int version_major = TRACEMODEL_VERSION / 10000;
inline constexpr int version_minor = TRACEMODEL_VERSION / 100 % 100;
inline constexpr int version_patch = TRACEMODEL_VERSION % 100;
TRACEMODEL_END_NAMESPACE
