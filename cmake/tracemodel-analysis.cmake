# The `analysis` component of the tracemodel package: find_package(tracemodel COMPONENTS
# analysis) gives tracemodel::analysis, `analyze(t)` with the default policies compiled once
# (see algo/analyze.hpp). Link it for the whole program.
if(NOT TARGET tracemodel::analysis)
  include("${CMAKE_CURRENT_LIST_DIR}/tracemodel-analysis-targets.cmake")
endif()
