# The `reader` component of the tracemodel package: find_package(tracemodel COMPONENTS reader)
# gives tracemodel::reader, the Chrome-trace reader compiled once (see
# formats/chrome_trace/parse.hpp). Link it for the whole program.
if(NOT TARGET tracemodel::reader)
  include("${CMAKE_CURRENT_LIST_DIR}/tracemodel-reader-targets.cmake")
endif()
