# taskwire_add_plugin(NAME SOURCES...): a shared library of TASKWIRE_REGISTERed functions, for
#   taskwire-worker ... --preload /path/to/libNAME.so     (or taskwire-mpi --preload)
# Defined by find_package(taskwire) and in taskwire's own tree. The library is SHARED, not a
# MODULE, so that a client can link it as well: a client submits a function by its address,
# so it must link the same functions, either their sources or this library
# (target_link_libraries(app PRIVATE NAME)).
function(taskwire_add_plugin name)
  if(NOT ARGN)
    message(FATAL_ERROR "taskwire_add_plugin(${name}): no sources; "
      "usage: taskwire_add_plugin(NAME file.cpp ...)")
  endif()
  add_library(${name} SHARED ${ARGN})
  target_link_libraries(${name} PUBLIC taskwire::taskwire)
endfunction()
