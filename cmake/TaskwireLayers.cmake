# One OBJECT library per layer of cmake/layers.txt (taskwire_runtime, taskwire_comm_core, ...),
# all linked into libtaskwire. A layer's sources see, under <taskwire/...>, the headers of its
# own paths and of the layers it may include (transitively, through PUBLIC links), and no
# others: each layer gets an include tree of its own in the build directory holding links to
# its paths only, so an #include of a layer above does not compile. The folders' CMakeLists
# add their sources with target_sources(taskwire_LAYER ...).

# Third-party usage requirements every layer shares (those of libtaskwire).
add_library(taskwire_layer_deps INTERFACE)
target_link_libraries(taskwire_layer_deps INTERFACE
  Boost::headers Boost::serialization Boost::program_options fmt::fmt spdlog::spdlog
  MPI::MPI_C Threads::Threads OpenSSL::SSL OpenSSL::Crypto nlohmann_json::nlohmann_json)
target_compile_definitions(taskwire_layer_deps INTERFACE SPDLOG_FMT_EXTERNAL)
target_compile_features(taskwire_layer_deps INTERFACE cxx_std_20)

include(TaskwireLayerTable)
taskwire_read_layers("${CMAKE_CURRENT_LIST_DIR}/layers.txt")
foreach(layer IN LISTS TASKWIRE_LAYER_NAMES)
  if(NOT TASKWIRE_LAYER_${layer}_KIND STREQUAL "library")
    continue()
  endif()
  set(target taskwire_${layer})
  set(tree "${PROJECT_BINARY_DIR}/layers/${layer}")
  file(REMOVE_RECURSE "${tree}")
  foreach(path IN LISTS TASKWIRE_LAYER_${layer}_PATHS)
    get_filename_component(parent "${tree}/taskwire/${path}" DIRECTORY)
    file(MAKE_DIRECTORY "${parent}")
    file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${path}" "${tree}/taskwire/${path}" SYMBOLIC)
  endforeach()
  add_library(${target} OBJECT)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${tree}>")
  target_link_libraries(${target} PUBLIC taskwire_layer_deps)
  foreach(dep IN LISTS TASKWIRE_LAYER_${layer}_DEPENDS)
    target_link_libraries(${target} PUBLIC taskwire_${dep})
  endforeach()
  target_link_libraries(taskwire PRIVATE ${target})
endforeach()
