// tracemodel — umbrella header: model, storage, collect and algo. Formats (fmt, simdjson) and
// adapters (CUPTI) are included explicitly by those who want them.
#pragma once

#include "tracemodel/collect.hpp"
#include "tracemodel/model.hpp"
#include "tracemodel/storage/append_only_list.hpp"
#include "tracemodel/storage/block_pool.hpp"
#include "tracemodel/storage/id_source.hpp"
#include "tracemodel/version.hpp"
