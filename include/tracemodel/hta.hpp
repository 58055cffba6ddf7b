// tracemodel — Holistic Trace Analysis's rules (a layer above algo/ and formats/: hta/), all of
// them: its loader and frame, its device-time analyses, its trace diff, its critical path and
// its tie rule, each in HTA's own units (docs/hta-rules.md).
#pragma once

#include "tracemodel/hta/critical_path.hpp"
#include "tracemodel/hta/device_time.hpp"
#include "tracemodel/hta/frame.hpp"
#include "tracemodel/hta/idle_time.hpp"
#include "tracemodel/hta/kernel_breakdown.hpp"
#include "tracemodel/hta/kernel_class.hpp"
#include "tracemodel/hta/launch_stats.hpp"
#include "tracemodel/hta/numpy.hpp"
#include "tracemodel/hta/queue_length.hpp"
#include "tracemodel/hta/read.hpp"
#include "tracemodel/hta/report.hpp"
#include "tracemodel/hta/trace_diff.hpp"
#include "tracemodel/hta/tree.hpp"
