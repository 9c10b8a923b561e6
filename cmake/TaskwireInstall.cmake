# What `cmake --install` and `cpack -G DEB` put in a prefix: the library, the programs (which
# find the library through their RPATH, wherever the prefix is), the public headers, the CMake
# package (with taskwire_add_plugin) and taskwire.pc for pkg-config.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
include(TaskwirePublicHeaders)

install(TARGETS taskwire EXPORT taskwireTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The programs' RPATH is relative to where they are ($ORIGIN), so an installed tree works from
# any prefix (--prefix, DESTDIR, dpkg -x into a scratch root) without LD_LIBRARY_PATH.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(_tw_rpath "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH _tw_bin_to_lib "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix/${CMAKE_INSTALL_LIBDIR}")
  set(_tw_rpath "$ORIGIN/${_tw_bin_to_lib}")
endif()
foreach(program taskwire-scheduler taskwire-worker taskwire-mpi taskwire-jobqueue taskwire-bench taskwire-taskbench)
  if(TARGET ${program})
    set_target_properties(${program} PROPERTIES INSTALL_RPATH "${_tw_rpath}")
    install(TARGETS ${program} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

foreach(header ${TASKWIRE_PUBLIC_HEADERS})
  get_filename_component(header_dir "${header}" DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header}
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/taskwire/${header_dir})
endforeach()

set(cfgdir ${CMAKE_INSTALL_LIBDIR}/cmake/taskwire)
install(EXPORT taskwireTargets NAMESPACE taskwire:: DESTINATION ${cfgdir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/taskwireConfig.cmake.in
  ${PROJECT_BINARY_DIR}/taskwireConfig.cmake INSTALL_DESTINATION ${cfgdir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/taskwireConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/taskwireConfig.cmake ${PROJECT_BINARY_DIR}/taskwireConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/TaskwireDependencies.cmake
  ${PROJECT_SOURCE_DIR}/cmake/TaskwireSanitizers.cmake
  ${PROJECT_SOURCE_DIR}/cmake/TaskwirePlugin.cmake DESTINATION ${cfgdir})

include(TaskwirePkgConfig)
include(TaskwirePackage)
