# Installs the build tree into a private prefix, then configures, builds and runs a separate
# project that finds tracemodel with find_package(tracemodel CONFIG REQUIRED). (No build type: no
# optimisation, no debug information, the quickest build; what is proven is finding and linking.)
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
                        -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
                        -DCMAKE_BUILD_TYPE= -DWITH_CUPTI=${WITH_CUPTI}
                        -DWITH_READER=${WITH_READER} -DWITH_LIBTORCH=${WITH_LIBTORCH}
                        "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}"
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the consumer failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the consumer failed: ${rc}")
endif()
set(programs consumer)
if(WITH_READER)
  list(APPEND programs consumer_reader)
endif()
if(WITH_CUPTI)
  list(APPEND programs consumer_cupti)
endif()
if(WITH_LIBTORCH)
  list(APPEND programs consumer_libtorch)
endif()
foreach(program IN LISTS programs)
  execute_process(COMMAND ${WORK_DIR}/build/${program} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  message(STATUS "${out}")
  if(rc)
    message(FATAL_ERROR "${program} failed: ${rc}")
  endif()
endforeach()
