# The include graph of the library's headers follows the layers of docs/design.md: each header
# includes only headers of its own layer and of the layers it may use.
#   cmake -DINCLUDE_DIR=<repo>/include -P check.cmake
# Prints every include that breaks a rule, and fails if there is one.
#
#   base     config.hpp, version.hpp, fwd.hpp, threads.hpp, memory.hpp, detail/   (std, Hana)
#   model    model/, model.hpp                                  base
#   storage  storage/                                           base (not model)
#   collect  collect/, collect.hpp                              base, model, storage
#   algo     algo/ (and algo/detail/)                           base, model (never storage, collect,
#                                                               formats, hta)
#   formats  formats/                                           base, model, algo
#   hta      hta/, hta.hpp                                      base, model, algo, formats
#   testing  testing/                                           base, model, algo
#   adapters adapters/                                          base, model, storage, collect
#   umbrella tracemodel.hpp                                     everything but adapters
cmake_minimum_required(VERSION 3.25)
if(NOT INCLUDE_DIR)
  message(FATAL_ERROR "INCLUDE_DIR is not set")
endif()

function(layer_of path out)
  if(path MATCHES "^tracemodel/(detail/|config\\.hpp|version\\.hpp|fwd\\.hpp|threads\\.hpp|memory\\.hpp)")
    set(${out} base PARENT_SCOPE)
  elseif(path MATCHES "^tracemodel/(model/|model\\.hpp)")
    set(${out} model PARENT_SCOPE)
  elseif(path MATCHES "^tracemodel/storage/")
    set(${out} storage PARENT_SCOPE)
  elseif(path MATCHES "^tracemodel/(collect/|collect\\.hpp)")
    set(${out} collect PARENT_SCOPE)
  elseif(path MATCHES "^tracemodel/algo/")
    set(${out} algo PARENT_SCOPE)
  elseif(path MATCHES "^tracemodel/formats/")
    set(${out} formats PARENT_SCOPE)
  elseif(path MATCHES "^tracemodel/(hta/|hta\\.hpp)")
    set(${out} hta PARENT_SCOPE)
  elseif(path MATCHES "^tracemodel/testing/")
    set(${out} testing PARENT_SCOPE)
  elseif(path MATCHES "^tracemodel/adapters")
    set(${out} adapters PARENT_SCOPE)
  elseif(path STREQUAL "tracemodel/tracemodel.hpp")
    set(${out} umbrella PARENT_SCOPE)
  else()
    set(${out} unknown PARENT_SCOPE)
  endif()
endfunction()

set(allowed_base base)
set(allowed_model base model)
set(allowed_storage base storage)
set(allowed_collect base model storage collect)
set(allowed_algo base model algo)
set(allowed_formats base model algo formats)
set(allowed_hta base model algo formats hta)
set(allowed_testing base model algo testing)
set(allowed_adapters base model storage collect adapters)
set(allowed_umbrella base model storage collect algo formats hta testing)

file(GLOB_RECURSE headers RELATIVE ${INCLUDE_DIR} ${INCLUDE_DIR}/tracemodel/*.hpp)
set(broken 0)
set(checked 0)
foreach(h IN LISTS headers)
  layer_of(${h} from)
  if(from STREQUAL "unknown")
    message("${h}: a header of no layer (add it to tests/layers/check.cmake and docs/design.md)")
    math(EXPR broken "${broken} + 1")
    continue()
  endif()
  file(STRINGS ${INCLUDE_DIR}/${h} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]tracemodel/")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]+)[\">].*" "\\1" target "${line}")
    layer_of(${target} to)
    math(EXPR checked "${checked} + 1")
    if(NOT to IN_LIST allowed_${from})
      message("${h} (${from}) includes ${target} (${to})")
      math(EXPR broken "${broken} + 1")
    endif()
  endforeach()
endforeach()
list(LENGTH headers n)
if(broken GREATER 0)
  message(FATAL_ERROR "${broken} include(s) break the layers")
endif()
message("layers: ${n} headers, ${checked} includes, all within their layers")
