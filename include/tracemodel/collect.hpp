// tracemodel — everything a runtime needs to record (and nothing heavier): record queue,
// encoder, clocks, scoped ops and macros, materialization into an event table.
#pragma once

#include "tracemodel/collect/clock.hpp"
#include "tracemodel/collect/concepts.hpp"
#include "tracemodel/collect/encoder.hpp"
#include "tracemodel/collect/materialize.hpp"
#include "tracemodel/collect/record_queue.hpp"
#include "tracemodel/collect/records.hpp"
#include "tracemodel/collect/scoped.hpp"
#include "tracemodel/config.hpp"
#include "tracemodel/version.hpp"
