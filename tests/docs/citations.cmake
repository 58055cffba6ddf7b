# The repository cites only itself: every `docs/NAME.md` that a header, test, tool, benchmark,
# example or page names exists, every section cited as `docs/NAME.md, "Section"` (or `and
# "Other"`) is a heading of that page, and nothing names a file outside the repository.
#   cmake -DSOURCE_DIR=<repo> -P citations.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "SOURCE_DIR is not set")
endif()
file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR}
     ${SOURCE_DIR}/include/*.hpp ${SOURCE_DIR}/tests/*.cpp ${SOURCE_DIR}/tests/*.hpp
     ${SOURCE_DIR}/tests/*.cmake ${SOURCE_DIR}/tools/*.cpp ${SOURCE_DIR}/tools/*.hpp
     ${SOURCE_DIR}/bench/*.cpp ${SOURCE_DIR}/bench/*.hpp ${SOURCE_DIR}/examples/*.cpp
     ${SOURCE_DIR}/examples/*.hpp ${SOURCE_DIR}/docs/*.md ${SOURCE_DIR}/README.md
     ${SOURCE_DIR}/CMakeLists.txt ${SOURCE_DIR}/cmake/*.cmake)
list(FILTER files EXCLUDE REGEX "^tests/data/|^tests/docs/citations.cmake$")
set(problems 0)
foreach(f IN LISTS files)
  file(READ ${SOURCE_DIR}/${f} text)
  # Comments are joined across lines: a citation may wrap.
  string(REGEX REPLACE "\n[ \t]*(//|#)?[ \t]*" " " flat "${text}")
  foreach(outside "DESIGN.md" "STYLE.md" "hta-analyses.md" "../shared/")
    string(FIND "${text}" "${outside}" at)
    if(NOT at EQUAL -1)
      message("${f}: names ${outside}, which is not in the repository")
      math(EXPR problems "${problems} + 1")
    endif()
  endforeach()
  string(REGEX MATCHALL "docs/[a-z0-9-]+\\.md(, \"[^\"]+\"( and \"[^\"]+\")?)?" cites "${flat}")
  foreach(c IN LISTS cites)
    string(REGEX MATCH "^docs/[a-z0-9-]+\\.md" page "${c}")
    if(NOT EXISTS ${SOURCE_DIR}/${page})
      message("${f}: cites ${page}, which does not exist")
      math(EXPR problems "${problems} + 1")
      continue()
    endif()
    file(READ ${SOURCE_DIR}/${page} body)
    string(REGEX MATCHALL "\"[^\"]+\"" sections "${c}")
    foreach(sec IN LISTS sections)
      string(REPLACE "\"" "" sec "${sec}")
      string(FIND "${body}" "\n## ${sec}\n" at)
      if(at EQUAL -1)
        message("${f}: cites section \"${sec}\" of ${page}, which has no such heading")
        math(EXPR problems "${problems} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()
if(problems GREATER 0)
  message(FATAL_ERROR "${problems} citation(s) point nowhere")
endif()
list(LENGTH files n)
message("citations: ${n} files, every one points inside the repository")
