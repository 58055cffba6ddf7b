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
list(FILTER files EXCLUDE REGEX "^tests/data/|^tests/docs/citations.cmake$|^build|/node_modules/")
set(problems 0)
foreach(f IN LISTS files)
  file(READ ${SOURCE_DIR}/${f} text)
  # Comments are joined across lines: a citation may wrap.
  string(REGEX REPLACE "\n[ \t]*(//|#)?[ \t]*" " " flat "${text}")
  get_filename_component(dir ${SOURCE_DIR}/${f} DIRECTORY)
  # A page named anywhere (`NAME.md`, with or without a path) is one of the repository's: beside
  # the file, at the root or in docs/.
  string(REGEX MATCHALL "[A-Za-z0-9_./-]*[A-Za-z0-9_-]\\.md" pages "${text}")
  foreach(p IN LISTS pages)
    string(REGEX REPLACE "^[./]*/" "" bare "${p}")
    if(NOT EXISTS ${dir}/${p} AND NOT EXISTS ${SOURCE_DIR}/${bare} AND
       NOT EXISTS ${SOURCE_DIR}/docs/${bare})
      message("${f}: names ${p}, which is not in the repository")
      math(EXPR problems "${problems} + 1")
    endif()
  endforeach()
  # A relative path that climbs (`../x`) stays inside the repository.
  string(REGEX MATCHALL "(\\.\\./)+[A-Za-z0-9_-]+" ups "${text}")
  foreach(u IN LISTS ups)
    get_filename_component(to ${u} ABSOLUTE BASE_DIR ${dir})
    string(FIND "${to}/" "${SOURCE_DIR}/" inside)
    if(NOT inside EQUAL 0)
      message("${f}: names ${u}, which leads out of the repository")
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
