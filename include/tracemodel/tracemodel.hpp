// tracemodel — the umbrella header: everything that needs no optional dependency (the model,
// storage, recording, the algorithms, the trace formats, the testing helpers, threads and
// memory). The adapters (CUPTI, libtorch) are included by those who have them.
//
// A runtime that only records includes the lighter `tracemodel/collect.hpp` (no Hana, range-v3,
// simdjson or fmt on its hot path); this one brings them all.
#pragma once

#include "tracemodel/algo/analyze.hpp"
#include "tracemodel/algo/comm_comp_overlap.hpp"
#include "tracemodel/algo/concepts.hpp"
#include "tracemodel/algo/device_time.hpp"
#include "tracemodel/algo/hta_frame.hpp"
#include "tracemodel/algo/et_link.hpp"
#include "tracemodel/algo/flows.hpp"
#include "tracemodel/algo/fwd_bwd.hpp"
#include "tracemodel/algo/kernel_type_breakdown.hpp"
#include "tracemodel/algo/key_averages.hpp"
#include "tracemodel/algo/patterns.hpp"
#include "tracemodel/algo/pytorch_patterns.hpp"
#include "tracemodel/algo/temporal_breakdown.hpp"
#include "tracemodel/algo/tensor_ids.hpp"
#include "tracemodel/algo/tree.hpp"
#include "tracemodel/algo/walk.hpp"
#include "tracemodel/collect.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/formats/chrome_trace_reader.hpp"
#include "tracemodel/formats/chrome_trace_writer.hpp"
#include "tracemodel/formats/device_properties.hpp"
#include "tracemodel/formats/execution_trace.hpp"
#include "tracemodel/formats/execution_trace_writer.hpp"
#include "tracemodel/formats/flame_svg.hpp"
#include "tracemodel/formats/json_output.hpp"
#include "tracemodel/formats/ranks.hpp"
#include "tracemodel/memory.hpp"
#include "tracemodel/model.hpp"
#include "tracemodel/storage/append_only_list.hpp"
#include "tracemodel/storage/block_pool.hpp"
#include "tracemodel/storage/id_source.hpp"
#include "tracemodel/testing/builder.hpp"
#include "tracemodel/testing/dump.hpp"
#include "tracemodel/testing/reference_tree.hpp"
#include "tracemodel/threads.hpp"
#include "tracemodel/version.hpp"
