# cmake -DCOMPILER=... -DDOC=<page.md> -DSECTION="## A client" -DINCLUDE=... [-DMPI_INCLUDE="a;b"]
#       -DOUT=... -P doc_example.cmake
# A page's example (the first ```cpp block after the line SECTION) compiles as it is, with
# -Wall -Wextra -Werror, against the build's headers: a page cannot show code that has
# stopped compiling. Compiled, not linked: it needs a cluster to run. MPI's include
# directories are given only to an example that includes <taskwire/mpi.hpp>: every other
# public header builds without them.
foreach(var COMPILER DOC SECTION INCLUDE OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "doc_example.cmake: -D${var}=... is missing")
  endif()
endforeach()
file(READ "${DOC}" text)
string(FIND "${text}" "\n${SECTION}\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${DOC} has no '${SECTION}' section")
endif()
string(SUBSTRING "${text}" ${at} -1 text)
string(FIND "${text}" "```cpp\n" begin)
if(begin EQUAL -1)
  message(FATAL_ERROR "no ```cpp block in ${DOC}'s '${SECTION}'")
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
  message(FATAL_ERROR "${DOC}'s example under '${SECTION}' (${OUT}) does not compile:\n${out}${err}")
endif()
string(REGEX MATCHALL "\n" newlines "${example}")
list(LENGTH newlines nlines)
message(STATUS "${DOC}'s example under '${SECTION}' compiles (${nlines} lines)")
