# The examples of README.md and docs/*.md are programs that the tests build and run, so the docs
# cannot drift from the library. A code block opened with
#   ```cpp example        is compiled as a program of its own, linked with tracemodel, and run
#                         (it must exit 0);
#   ```cpp example-cupti  the same, where the CUPTI adapter is built;
#   ```sh example         runs in the repository root with the `tracemodel` program on PATH;
#   ```cpp example-command is a file of tools/commands/: the tests build the program with it
#                         added and run it, in the repository root, with the arguments of the
#                         block's `// test: ARGS` line; the run must exit 0 and print what the
#                         `// expect: REGEX` line (if any) says.
# Other code blocks are illustrations and are not run.
set(_tm_doc_pages ${PROJECT_SOURCE_DIR}/README.md)
file(GLOB _tm_doc_guides ${PROJECT_SOURCE_DIR}/docs/*.md)
list(APPEND _tm_doc_pages ${_tm_doc_guides})
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_tm_doc_pages})
set(_tm_doc_dir ${CMAKE_CURRENT_BINARY_DIR}/doc_examples)
file(MAKE_DIRECTORY ${_tm_doc_dir})

# The blocks of `text` opened by "```<tag>\n", as files <dir>/<name>_<k>.<ext>; their paths in
# `out`. (The text is searched as one string: code has ';' on every line, which CMake lists
# would cut.)
function(tracemodel_doc_blocks text tag name ext out)
  set(found)
  set(open "```${tag}\n")
  string(LENGTH "${open}" open_length)
  set(k 0)
  while(TRUE)
    string(FIND "${text}" "${open}" at)
    if(at EQUAL -1)
      break()
    endif()
    math(EXPR from "${at} + ${open_length}")
    string(SUBSTRING "${text}" ${from} -1 text)
    string(FIND "${text}" "\n```" end)
    if(end EQUAL -1)
      message(FATAL_ERROR "${name}: a ```${tag} block without its end")
    endif()
    string(SUBSTRING "${text}" 0 ${end} block)
    math(EXPR k "${k} + 1")
    set(path ${_tm_doc_dir}/${name}_${k}.${ext})
    file(CONFIGURE OUTPUT ${path} CONTENT "${block}\n" @ONLY)
    list(APPEND found ${path})
  endwhile()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

foreach(page IN LISTS _tm_doc_pages)
  get_filename_component(name ${page} NAME_WE)
  string(MAKE_C_IDENTIFIER ${name} name)
  file(READ ${page} text)
  tracemodel_doc_blocks("${text}" "cpp example" ${name} cpp programs)
  if(TARGET tracemodel_cupti)
    tracemodel_doc_blocks("${text}" "cpp example-cupti" ${name}_cupti cpp cupti_programs)
    list(APPEND programs ${cupti_programs})
  endif()
  foreach(source IN LISTS programs)
    get_filename_component(target ${source} NAME_WE)
    add_executable(doc_${target} ${source})
    target_link_libraries(doc_${target} PRIVATE tracemodel_own tracemodel_dev_flags)
    if(target MATCHES "_cupti_")
      target_link_libraries(doc_${target} PRIVATE tracemodel::cupti)
    endif()
    add_test(NAME docs.${target} COMMAND doc_${target} WORKING_DIRECTORY ${_tm_doc_dir})
    set_tests_properties(docs.${target} PROPERTIES LABELS "docs")
  endforeach()
  if(TARGET tracemodel_cli_parts)
    tracemodel_doc_blocks("${text}" "cpp example-command" ${name}_command cpp commands)
    foreach(source IN LISTS commands)
      get_filename_component(target ${source} NAME_WE)
      file(READ ${source} code)
      string(REGEX MATCH "// test: ([^\n]*)" _ "${code}")
      if(NOT CMAKE_MATCH_1)
        message(FATAL_ERROR "${source}: a ```cpp example-command block without its // test: line")
      endif()
      separate_arguments(run_args UNIX_COMMAND "${CMAKE_MATCH_1}")
      string(REGEX MATCH "// expect: ([^\n]*)" _ "${code}")
      set(expect "${CMAKE_MATCH_1}")
      add_executable(doc_${target} ${source})
      # Its includes are a command file's ("../input.hpp"): found from tools/commands/.
      target_include_directories(doc_${target} PRIVATE ${PROJECT_SOURCE_DIR}/tools/commands)
      target_link_libraries(doc_${target} PRIVATE tracemodel_cli_parts)
      # A failed run says so in the output: a test with an expected output ignores the status.
      add_test(NAME docs.${target}
               COMMAND bash -c "\"$@\" || echo 'the command failed'" _ $<TARGET_FILE:doc_${target}>
                       ${run_args}
               WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
      set_tests_properties(docs.${target} PROPERTIES LABELS "docs"
                                                     FAIL_REGULAR_EXPRESSION "the command failed")
      if(expect)
        set_tests_properties(docs.${target} PROPERTIES PASS_REGULAR_EXPRESSION "${expect}")
      endif()
    endforeach()
  endif()
  if(TARGET tracemodel_cli)
    tracemodel_doc_blocks("${text}" "sh example" ${name}_sh sh scripts)
    foreach(script IN LISTS scripts)
      get_filename_component(target ${script} NAME_WE)
      add_test(NAME docs.${target}
               COMMAND ${CMAKE_COMMAND} -E env "PATH=$<TARGET_FILE_DIR:tracemodel_cli>:$ENV{PATH}"
                       bash -euo pipefail ${script}
               WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
      set_tests_properties(docs.${target} PROPERTIES LABELS "docs")
    endforeach()
  endif()
endforeach()
