# taskwire_sanitizer_build(OUT): OUT is TRUE when the C++ flags of this build (all configs'
# and the current build type's) ask for a sanitizer that replaces malloc, so programs must
# keep the system allocator. Used by the build (TaskwireDependencies.cmake) and by the
# installed package's config file for the projects that consume it.
function(taskwire_sanitizer_build out)
  string(TOUPPER "${CMAKE_BUILD_TYPE}" config)
  if("${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${config}}" MATCHES "-fsanitize=[^ ]*(address|thread|memory|leak)")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()
