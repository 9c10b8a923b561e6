# Runs an MPI job and checks how it ends: cmake -DMPIEXEC=... -DNP=2 -DEXE=... -DMODE=...
#   [-DLAUNCH_FLAGS=-disable-auto-cleanup] -DEXPECT_RC=zero|nonzero -DMAX_SECONDS=s
#   [-DMATCH=regex] [-DIF=regex -DTHEN=regex] -P run_expect.cmake
# IF/THEN: when the output matches IF it must also match THEN (for outcomes that depend on a
# race with the launcher, e.g. whether hydra or the runtime ends the job first).
string(TIMESTAMP t0 "%s")
execute_process(COMMAND ${MPIEXEC} ${LAUNCH_FLAGS} -n ${NP} ${EXE} ${MODE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT ${MAX_SECONDS})
string(TIMESTAMP t1 "%s")
math(EXPR took "${t1} - ${t0}")
message("--- output (exit '${rc}', ${took} s):\n${out}\n--- stderr:\n${err}")
if(rc MATCHES "timeout|Process terminated due to timeout")
  message(FATAL_ERROR "the job hung: still running after ${MAX_SECONDS} s")
endif()
if(EXPECT_RC STREQUAL "zero" AND NOT rc STREQUAL "0")
  message(FATAL_ERROR "expected exit status 0, got '${rc}'")
endif()
if(EXPECT_RC STREQUAL "nonzero" AND rc STREQUAL "0")
  message(FATAL_ERROR "expected a non-zero exit status")
endif()
if(DEFINED MATCH AND NOT "${out}${err}" MATCHES "${MATCH}")
  message(FATAL_ERROR "output does not match '${MATCH}'")
endif()
if(DEFINED IF AND "${out}${err}" MATCHES "${IF}" AND NOT "${out}${err}" MATCHES "${THEN}")
  message(FATAL_ERROR "output matches '${IF}' but not '${THEN}'")
endif()
