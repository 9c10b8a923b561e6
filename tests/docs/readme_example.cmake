# cmake -DCOMPILER=... -DREADME=... -DINCLUDE=... -DMPI_INCLUDE="a;b" -DOUT=... -P readme_example.cmake
# The README's client example (the first ```cpp block after "## A client") compiles as it is,
# with -Wall -Wextra -Werror, against the build's headers: the front page cannot show code
# that has stopped compiling. Compiled, not linked: it needs a cluster to run.
file(READ "${README}" text)
string(FIND "${text}" "\n## A client\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README} has no '## A client' section")
endif()
string(SUBSTRING "${text}" ${at} -1 text)
string(FIND "${text}" "```cpp\n" begin)
if(begin EQUAL -1)
  message(FATAL_ERROR "no ```cpp block in the README's '## A client'")
endif()
math(EXPR begin "${begin} + 7")
string(SUBSTRING "${text}" ${begin} -1 text)
string(FIND "${text}" "\n```" end)
math(EXPR end "${end} + 1")
string(SUBSTRING "${text}" 0 ${end} example)
file(WRITE "${OUT}" "${example}")
set(includes -I${INCLUDE})
foreach(dir IN LISTS MPI_INCLUDE)
  list(APPEND includes -isystem ${dir})
endforeach()
execute_process(
  COMMAND ${COMPILER} -std=c++20 -Wall -Wextra -Werror -c -o "${OUT}.o" ${includes}
    -DSPDLOG_FMT_EXTERNAL "${OUT}"
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the README's client example (${OUT}) does not compile:\n${out}${err}")
endif()
string(REGEX MATCHALL "\n" newlines "${example}")
list(LENGTH newlines nlines)
message(STATUS "the README's client example compiles (${nlines} lines)")
