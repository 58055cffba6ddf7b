# The layer check can fail: a copy of the headers in which algo/ includes hta/ (and so names it)
# and model/ names JSON must be rejected, with every reason printed.
#   cmake -DINCLUDE_DIR=<repo>/include -DWORK_DIR=<scratch> -P breaks.cmake
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK_DIR})
file(COPY ${INCLUDE_DIR}/tracemodel DESTINATION ${WORK_DIR})
set(victim ${WORK_DIR}/tracemodel/algo/idle_time.hpp)
file(READ ${victim} text)
string(REPLACE "#pragma once" "#pragma once\n#include \"tracemodel/hta/frame.hpp\"" text "${text}")
file(WRITE ${victim} "${text}")
# ... and the model names a format.
file(APPEND ${WORK_DIR}/tracemodel/model/types.hpp "// written back as JSON\n")
execute_process(COMMAND ${CMAKE_COMMAND} -DINCLUDE_DIR=${WORK_DIR} -P
                        ${CMAKE_CURRENT_LIST_DIR}/check.cmake
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(status EQUAL 0)
  message(FATAL_ERROR "the layer check accepted algo/ including hta/")
endif()
foreach(want "algo/idle_time.hpp (algo) includes tracemodel/hta/frame.hpp (hta)"
             "algo/idle_time.hpp (algo) names HTA" "model/types.hpp (model) names JSON")
  string(FIND "${out}${err}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the layer check did not say: ${want}\n${out}${err}")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
message("layers: algo/ including hta/ and model/ naming JSON are rejected")
