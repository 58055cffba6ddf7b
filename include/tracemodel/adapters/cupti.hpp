// tracemodel/adapters/cupti.hpp — the optional CUPTI adapter (needs CUPTI: link
// tracemodel::cupti, from find_package(tracemodel COMPONENTS cupti)).
#pragma once

#include "tracemodel/adapters/cupti/adapter.hpp"
#include "tracemodel/adapters/cupti/buffers.hpp"
#include "tracemodel/adapters/cupti/decode.hpp"
#include "tracemodel/adapters/cupti/registry.hpp"
