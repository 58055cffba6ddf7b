// tracemodel — the event model: kinds, payloads, events, the event table.
#pragma once

#include "tracemodel/model/event.hpp"
#include "tracemodel/model/fields.hpp"
#include "tracemodel/model/schema.hpp"
#include "tracemodel/model/strings.hpp"
#include "tracemodel/model/table.hpp"
#include "tracemodel/model/types.hpp"
