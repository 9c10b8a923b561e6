include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS taskwire EXPORT taskwireTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(dir runtime comm scheduler worker client graph)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/taskwire
    FILES_MATCHING PATTERN "*.hpp")
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/taskwire.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/taskwire)

set(cfgdir ${CMAKE_INSTALL_LIBDIR}/cmake/taskwire)
install(EXPORT taskwireTargets NAMESPACE taskwire:: DESTINATION ${cfgdir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/taskwireConfig.cmake.in
  ${PROJECT_BINARY_DIR}/taskwireConfig.cmake INSTALL_DESTINATION ${cfgdir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/taskwireConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/taskwireConfig.cmake ${PROJECT_BINARY_DIR}/taskwireConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/TaskwireDependencies.cmake
  ${PROJECT_SOURCE_DIR}/cmake/TaskwireSanitizers.cmake DESTINATION ${cfgdir})
