# taskwire.pc: Cflags and Libs that compile and link a client. The public headers include
# Boost (Asio, Serialization: its archives need libboost_serialization), fmt and mpi.h (mpi.hpp), and
# the CMake target passes spdlog's definitions (SPDLOG_FMT_EXTERNAL...), so fmt, spdlog and
# mpich are Requires (Debian ships their .pc files; Boost has none, hence the -l here).
# The prefix is only known at install time (`cmake --install --prefix P`, cpack's staging),
# so the file is configured then.
set(TW_PC_EXTRA_CFLAGS "")
if(Boost_INCLUDE_DIRS AND NOT Boost_INCLUDE_DIRS STREQUAL "/usr/include")
  set(TW_PC_EXTRA_CFLAGS " -I${Boost_INCLUDE_DIRS}")
endif()
set(TW_PC_BOOST_LIBS "-lboost_serialization")
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
    set(TW_PC_${kind} "${CMAKE_INSTALL_${kind}}")
  else()
    set(TW_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()
set(TW_PC_PREFIX "@TW_PC_PREFIX@")  # left for the install step
configure_file(${PROJECT_SOURCE_DIR}/cmake/taskwire.pc.in ${PROJECT_BINARY_DIR}/taskwire.pc.in @ONLY)
# Configured per destination (two installs at once, say cmake --install and cpack, must not
# share the file).
install(CODE "
  set(TW_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  string(MD5 _tw_pc_key \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}\")
  set(_tw_pc \"${PROJECT_BINARY_DIR}/pkgconfig/\${_tw_pc_key}/taskwire.pc\")
  configure_file(\"${PROJECT_BINARY_DIR}/taskwire.pc.in\" \"\${_tw_pc}\" @ONLY)
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\"
    TYPE FILE FILES \"\${_tw_pc}\")")
