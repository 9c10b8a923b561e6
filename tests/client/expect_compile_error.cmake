# cmake -DCOMPILER=... -DSOURCE=... -DINCLUDE=... -DEXPECT="a;b" -P expect_compile_error.cmake
# Compiles SOURCE (syntax only) and fails unless the compiler rejects it with exactly one
# error whose text contains every string of EXPECT: the static_assert of runtime/serialize.hpp,
# not a cascade of Boost.Serialization errors after it.
execute_process(
  COMMAND ${COMPILER} -std=c++20 -fsyntax-only -I${INCLUDE} -DSPDLOG_FMT_EXTERNAL ${SOURCE}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(text "${out}${err}")
if(status EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but must not: an unsendable type was accepted")
endif()
string(REGEX MATCHALL "error:" errors "${text}")
list(LENGTH errors nerrors)
if(NOT nerrors EQUAL 1)
  message(FATAL_ERROR "expected one error, got ${nerrors}:\n${text}")
endif()
foreach(want IN LISTS EXPECT)
  string(FIND "${text}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the error does not say '${want}':\n${text}")
  endif()
endforeach()
message(STATUS "rejected as expected:\n${text}")
