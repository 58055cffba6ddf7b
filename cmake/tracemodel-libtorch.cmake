# The `libtorch` component of the tracemodel package: find_package(tracemodel COMPONENTS libtorch).
include(CMakeFindDependencyMacro)
find_dependency(Torch CONFIG)
if(NOT TARGET tracemodel::libtorch)
  include("${CMAKE_CURRENT_LIST_DIR}/tracemodel-libtorch-targets.cmake")
endif()
