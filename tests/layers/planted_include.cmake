# cmake -DCHECK=.../check_layers.cmake -DWORK=<scratch dir> -P planted_include.cmake
# The layer check must fail on an include that runs up: a scratch tree with every path of
# cmake/layers.txt (empty) and one runtime/ header that includes a scheduler/ one must be
# refused, naming the file and line; the same tree without the plant must pass.
get_filename_component(table_dir "${CHECK}" DIRECTORY)
include("${table_dir}/TaskwireLayerTable.cmake")
taskwire_read_layers("${table_dir}/layers.txt")
file(REMOVE_RECURSE "${WORK}")
foreach(layer IN LISTS TASKWIRE_LAYER_NAMES)
  foreach(p IN LISTS TASKWIRE_LAYER_${layer}_PATHS)
    if(p MATCHES "\\.[ch]pp$")
      file(WRITE "${WORK}/${p}" "#pragma once\n")
    else()
      file(MAKE_DIRECTORY "${WORK}/${p}")
    endif()
  endforeach()
endforeach()
file(WRITE "${WORK}/scheduler/state.hpp" "#pragma once\n#include <taskwire/runtime/clean.hpp>\n")
file(WRITE "${WORK}/runtime/clean.hpp" "#pragma once\n#include <vector>\n")

execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${WORK} -P ${CHECK}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the check refused a tree whose includes all run down:\n${out}")
endif()

file(WRITE "${WORK}/runtime/planted.hpp" "#pragma once\n#include <taskwire/scheduler/state.hpp>\n")
execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${WORK} -P ${CHECK}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0 OR NOT out MATCHES "NOT ALLOWED runtime/planted.hpp:2: includes scheduler/state.hpp")
  message(FATAL_ERROR "the check did not refuse runtime/ including scheduler/ (exit ${rc}):\n${out}")
endif()
message("the planted upward include was refused:\n${out}")
