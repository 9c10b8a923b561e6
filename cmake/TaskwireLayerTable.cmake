# taskwire_read_layers(TABLE): reads cmake/layers.txt for the build (TaskwireLayers.cmake) and
# for the include check (check_layers.cmake). Sets TASKWIRE_LAYER_NAMES (bottom to top) and,
# per layer, TASKWIRE_LAYER_<name>_KIND, _PATHS and _DEPENDS (lists).
macro(taskwire_read_layers table)
  set(TASKWIRE_LAYER_NAMES "")
  file(STRINGS "${table}" _tw_rows REGEX "^[a-z]")
  foreach(_tw_row IN LISTS _tw_rows)
    string(REGEX REPLACE "[ \t]+" ";" _tw_cells "${_tw_row}")
    list(GET _tw_cells 0 _tw_name)
    list(GET _tw_cells 1 TASKWIRE_LAYER_${_tw_name}_KIND)
    list(GET _tw_cells 2 _tw_paths)
    list(GET _tw_cells 3 _tw_deps)
    string(REPLACE "," ";" TASKWIRE_LAYER_${_tw_name}_PATHS "${_tw_paths}")
    if(_tw_deps STREQUAL "-")
      set(_tw_deps "")
    endif()
    string(REPLACE "," ";" TASKWIRE_LAYER_${_tw_name}_DEPENDS "${_tw_deps}")
    list(APPEND TASKWIRE_LAYER_NAMES ${_tw_name})
  endforeach()
endmacro()

