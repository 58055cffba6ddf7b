// tracemodel/adapters/cupti — which runtime and driver calls start a host-to-device flow.
//
// Decided by callback id, from a registry generated from the CUPTI headers
// (`cbid_lists.hpp`, scripts/gen_cupti_registry.py): every kind of kernel launch (plain,
// Ex, cooperative, multi-device, per-thread-stream variants), graph launches, memcpy (peer
// copies apart) and memset. Names are never compared, so new launch APIs with a new name but
// a known callback id, Triton's launches through cuLaunchKernel(Ex) and graph launches all link.
#pragma once

#include <cstdint>

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include "tracemodel/adapters/cupti/cbid_lists.hpp"
#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE
namespace cupti {

/// What a call starts on the device.
enum class launch : std::uint8_t { none, kernel_launch, graph_launch, memcpy, memcpy_peer, memset };

/// For a runtime API callback id.
constexpr launch runtime_launch(std::uint32_t cbid) noexcept {
  switch (cbid) {
#define TRACEMODEL_CUPTI_CASE(id, what) \
  case id:                              \
    return launch::what;
    TRACEMODEL_CUPTI_RUNTIME_FLOW_CBIDS(TRACEMODEL_CUPTI_CASE)
#undef TRACEMODEL_CUPTI_CASE
    default:
      return launch::none;
  }
}

/// For a driver API callback id.
constexpr launch driver_launch(std::uint32_t cbid) noexcept {
  switch (cbid) {
#define TRACEMODEL_CUPTI_CASE(id, what) \
  case id:                              \
    return launch::what;
    TRACEMODEL_CUPTI_DRIVER_FLOW_CBIDS(TRACEMODEL_CUPTI_CASE)
#undef TRACEMODEL_CUPTI_CASE
    default:
      return launch::none;
  }
}

}  // namespace cupti
TRACEMODEL_END_NAMESPACE
