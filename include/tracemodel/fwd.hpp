// tracemodel — forward declarations of the main types.
#pragma once

#include "tracemodel/config.hpp"

TRACEMODEL_BEGIN_NAMESPACE
enum class event_kind : unsigned char;
template <auto Kind>
struct extra_fields;
template <auto... Kinds>
struct schema;
template <class Schema>
struct basic_event;
template <class Schema>
class basic_event_table;
class string_table;
struct record_features;
struct op_info;
struct op_handle;
TRACEMODEL_END_NAMESPACE
