# The `cupti` component of the tracemodel package: find_package(tracemodel COMPONENTS cupti).
include(CMakeFindDependencyMacro)
find_dependency(CUDAToolkit)
if(NOT TARGET tracemodel::cupti)
  include("${CMAKE_CURRENT_LIST_DIR}/tracemodel-cupti-targets.cmake")
endif()
