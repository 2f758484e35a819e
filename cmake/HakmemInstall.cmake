# Install rules, pkg-config file and CMake package for hakmem.
# Included at the end of the top-level CMakeLists.txt.
#
#   cmake --install build --prefix /usr/local      (or: make install PREFIX=...)
#
# installs
#   lib/libhakmem.so.X.Y.Z  + libhakmem.so.X (SONAME) + libhakmem.so   shared library
#   lib/libhakmem.so.X.Y.Z.debug                                       its debug info
#   lib/libhakmem.a                                                    static library
#   lib/libhakmem-secure.so (+ .debug)                                 hardened build, if built
#   lib/libhakmem-valgrind.so                                          memcheck build, if built
#   include/hakmem.h (every include/*.h)
#   lib/pkgconfig/hakmem.pc                                            pkg-config
#   lib/cmake/hakmem/hakmem{Config,ConfigVersion,Targets*}.cmake       find_package(hakmem)
#   bin/hakmem                                                         launcher (tools/hakmem)
#   bin/hakmem-report                                                  stats timeline viewer, if present
#   share/doc/hakmem/                                                  README, LICENSE, CONTRIBUTING
#   share/doc/hakmem/docs/                                             docs/*.md and their images
#   share/doc/hakmem/{examples,bench/results,docs/history,...}         what those pages link to
#   share/man/man1/hakmem.1                                            man hakmem (docs/hakmem.1)
#
# Debug info: the libraries are compiled with -g (code generation is the same
# with or without it); at install time the shared library's DWARF is moved
# into a separate file beside it (objcopy --only-keep-debug, then
# --strip-debug --add-gnu-debuglink), which gdb finds by itself. The static
# library keeps its -g. HAKMEM_SPLIT_DEBUGINFO=OFF installs the shared
# library with its debug info inside.
#
# Targets: hakmem::hakmem (shared) and hakmem::hakmem-static, both from the
# installed package and, as aliases, from a parent project that pulls hakmem
# in with add_subdirectory()/FetchContent. The build tree also exports its
# targets: -Dhakmem_DIR=/path/to/hakmem/build works without installing.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(CMAKE_SOURCE_DIR STREQUAL PROJECT_SOURCE_DIR)
  set(_hk_top_level ON)
else()
  set(_hk_top_level OFF)
endif()
option(HAKMEM_INSTALL "generate install rules for hakmem" ${_hk_top_level})
option(HAKMEM_DEBUGINFO "compile the libraries with -g" ON)
option(HAKMEM_SPLIT_DEBUGINFO
       "install the shared library's debug info as a separate .debug file" ON)

set(_hk_targets)
foreach(_t hakmem hakmem-static)
  if(TARGET ${_t})
    list(APPEND _hk_targets ${_t})
  endif()
endforeach()

foreach(_t IN LISTS _hk_targets)
  # Same names inside and outside the build.
  if(NOT TARGET hakmem::${_t})
    add_library(hakmem::${_t} ALIAS ${_t})
  endif()

  # The top-level file gives the targets an absolute include directory in the
  # source tree; an exported target may only carry that inside the build.
  get_target_property(_incs ${_t} INTERFACE_INCLUDE_DIRECTORIES)
  set(_new_incs)
  if(_incs)
    foreach(_d IN LISTS _incs)
      if(_d MATCHES "^\\$<" OR NOT IS_ABSOLUTE "${_d}")
        list(APPEND _new_incs "${_d}")
      else()
        list(APPEND _new_incs "$<BUILD_INTERFACE:${_d}>")
      endif()
    endforeach()
  endif()
  list(APPEND _new_incs "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  set_target_properties(${_t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_new_incs}")

  # Debug info whatever the build type (-g does not change the code gcc emits).
  if(HAKMEM_DEBUGINFO)
    target_compile_options(${_t} PRIVATE -g)
  endif()
endforeach()

# libhakmem.a is joined from these objects (CMakeLists.txt): -g here.
if(TARGET hakmem-objects AND HAKMEM_DEBUGINFO)
  target_compile_options(hakmem-objects PRIVATE -g)
endif()

# Debug info for the hardened build too (not exported: it is for preloading).
if(TARGET hakmem-secure AND HAKMEM_DEBUGINFO)
  target_compile_options(hakmem-secure PRIVATE -g)
endif()

if(NOT HAKMEM_INSTALL)
  return()
endif()

set(HAKMEM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hakmem)
set(HAKMEM_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# ---- libraries and header --------------------------------------------------------
install(TARGETS ${_hk_targets}
  EXPORT hakmemTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
          NAMELINK_COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
# every public header (include/ holds only those)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
        FILES_MATCHING PATTERN "*.h")

# ---- the hardened build, when it was built (`make secure`) --------------------------
# Not in the CMake package: it is a library to preload, not to link.
if(TARGET hakmem-secure)
  install(FILES $<TARGET_FILE:hakmem-secure> OPTIONAL
          DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
endif()
# ---- the valgrind build, when it was built (`make valgrind`; docs/VALGRIND.md) ------
if(TARGET hakmem-valgrind)
  install(FILES $<TARGET_FILE:hakmem-valgrind> OPTIONAL
          DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
endif()

# ---- separate debug info for the shared libraries ----------------------------------
# _hk_split_debuginfo(TARGET REQUIRED|OPTIONAL): after the library is
# installed, move its DWARF into <file>.debug beside it, with a debuglink.
function(_hk_split_debuginfo tgt mode)
  # The real file name (libhakmem.so.X.Y.Z) is only known at generate
  # time; hand it to the install script through a generated file.
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/hakmem-install-debuginfo-${tgt}.cmake
       CONTENT "set(_hk_lib_name \"$<TARGET_FILE_NAME:${tgt}>\")\n")
  install(CODE "
    include(\"${PROJECT_BINARY_DIR}/hakmem-install-debuginfo-${tgt}.cmake\")
    set(_hk_libdir \"${CMAKE_INSTALL_LIBDIR}\")
    if(NOT IS_ABSOLUTE \"\${_hk_libdir}\")
      set(_hk_libdir \"\${CMAKE_INSTALL_PREFIX}/\${_hk_libdir}\")
    endif()
    set(_hk_lib \"\$ENV{DESTDIR}\${_hk_libdir}/\${_hk_lib_name}\")
    set(_hk_dbg \"\${_hk_lib}.debug\")
    set(_hk_go TRUE)
    if(\"${mode}\" STREQUAL \"OPTIONAL\" AND NOT EXISTS \"\${_hk_lib}\")
      set(_hk_go FALSE)
    endif()
    if(_hk_go)
      execute_process(COMMAND \"${CMAKE_READELF}\" -S --wide \"\${_hk_lib}\"
                      OUTPUT_VARIABLE _hk_sections RESULT_VARIABLE _hk_rc)
      if(NOT _hk_rc EQUAL 0)
        message(FATAL_ERROR \"hakmem: cannot read \${_hk_lib}\")
      endif()
      if(_hk_sections MATCHES \"[.]debug_info\")
        message(STATUS \"Installing: \${_hk_dbg} (debug info split off \${_hk_lib_name})\")
        execute_process(COMMAND \"${CMAKE_OBJCOPY}\" --only-keep-debug \"\${_hk_lib}\" \"\${_hk_dbg}\"
                        RESULT_VARIABLE _hk_rc)
        if(_hk_rc EQUAL 0)
          execute_process(COMMAND \"${CMAKE_OBJCOPY}\" --strip-debug --remove-section=.gnu_debuglink
                                  \"--add-gnu-debuglink=\${_hk_dbg}\" \"\${_hk_lib}\"
                          RESULT_VARIABLE _hk_rc)
        endif()
        if(NOT _hk_rc EQUAL 0)
          message(FATAL_ERROR \"hakmem: splitting the debug info of \${_hk_lib} failed\")
        endif()
        file(CHMOD \"\${_hk_dbg}\" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
      elseif(CMAKE_INSTALL_DO_STRIP)
        message(STATUS \"hakmem: \${_hk_lib_name} installed stripped (--strip): no .debug file\")
      elseif(NOT EXISTS \"\${_hk_dbg}\")
        message(WARNING \"hakmem: \${_hk_lib} has no debug info (stripped?); no .debug file installed\")
      endif()
      if(EXISTS \"\${_hk_dbg}\")
        list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${_hk_libdir}/\${_hk_lib_name}.debug\")
      endif()
    endif()
  " COMPONENT runtime)
endfunction()

if(HAKMEM_DEBUGINFO AND HAKMEM_SPLIT_DEBUGINFO)
  if(NOT CMAKE_OBJCOPY)
    find_program(CMAKE_OBJCOPY objcopy)
  endif()
  if(NOT CMAKE_READELF)
    find_program(CMAKE_READELF readelf)
  endif()
  if(CMAKE_OBJCOPY AND CMAKE_READELF)
    if(TARGET hakmem)
      _hk_split_debuginfo(hakmem REQUIRED)
    endif()
    if(TARGET hakmem-secure)
      _hk_split_debuginfo(hakmem-secure OPTIONAL)
    endif()
  else()
    message(STATUS "hakmem: objcopy/readelf not found; the shared library is installed with its debug info inside")
  endif()
endif()

# ---- pkg-config --------------------------------------------------------------------
# Written at install time, so that `cmake --install --prefix P` gets prefix=P.
set(_hk_pc_template [=[
prefix=%HK_PREFIX%
exec_prefix=${prefix}
libdir=%HK_LIBDIR%
includedir=%HK_INCLUDEDIR%

Name: hakmem
Description: general-purpose malloc replacement (link -lhakmem, or LD_PRELOAD libhakmem.so)
Version: @PROJECT_VERSION@
Libs: -L${libdir} -lhakmem
Libs.private: -lpthread
Cflags: -I${includedir}
]=])
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/hakmem.pc.in CONTENT "${_hk_pc_template}" @ONLY)
install(CODE "
  set(HK_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(HK_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(HK_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  foreach(_hk_v HK_LIBDIR HK_INCLUDEDIR)
    if(NOT IS_ABSOLUTE \"\${\${_hk_v}}\")
      set(\${_hk_v} \"\\\${prefix}/\${\${_hk_v}}\")
    endif()
  endforeach()
  file(READ \"${PROJECT_BINARY_DIR}/hakmem.pc.in\" _hk_pc)
  foreach(_hk_v HK_PREFIX HK_LIBDIR HK_INCLUDEDIR)
    string(REPLACE \"%\${_hk_v}%\" \"\${\${_hk_v}}\" _hk_pc \"\${_hk_pc}\")
  endforeach()
  file(WRITE \"${PROJECT_BINARY_DIR}/pkgconfig-install/hakmem.pc\" \"\${_hk_pc}\")
  set(_hk_pcdir \"${HAKMEM_PKGCONFIG_DIR}\")
  if(NOT IS_ABSOLUTE \"\${_hk_pcdir}\")
    set(_hk_pcdir \"\${CMAKE_INSTALL_PREFIX}/\${_hk_pcdir}\")
  endif()
  file(INSTALL DESTINATION \"\${_hk_pcdir}\" TYPE FILE
       FILES \"${PROJECT_BINARY_DIR}/pkgconfig-install/hakmem.pc\")
" COMPONENT dev)

# ---- CMake package ---------------------------------------------------------------
set(_hk_config_template [=[
# hakmem CMake package: find_package(hakmem) gives
#   hakmem::hakmem         the shared library (libhakmem.so)
#   hakmem::hakmem-static  the static library (libhakmem.a)
# Linking either replaces the program's malloc family with hakmem's.
include("${CMAKE_CURRENT_LIST_DIR}/hakmemTargets.cmake")
foreach(_hk_comp IN LISTS hakmem_FIND_COMPONENTS)
  if(_hk_comp STREQUAL "shared" AND TARGET hakmem::hakmem)
    set(hakmem_shared_FOUND TRUE)
  elseif(_hk_comp STREQUAL "static" AND TARGET hakmem::hakmem-static)
    set(hakmem_static_FOUND TRUE)
  else()
    set(hakmem_${_hk_comp}_FOUND FALSE)
    if(hakmem_FIND_REQUIRED_${_hk_comp})
      set(hakmem_FOUND FALSE)
      set(hakmem_NOT_FOUND_MESSAGE "hakmem: component ${_hk_comp} not available")
    endif()
  endif()
endforeach()
unset(_hk_comp)
]=])
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/hakmemConfig.cmake CONTENT "${_hk_config_template}" @ONLY)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hakmemConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(EXPORT hakmemTargets NAMESPACE hakmem::
        DESTINATION ${HAKMEM_CMAKE_DIR} COMPONENT dev)
install(FILES ${PROJECT_BINARY_DIR}/hakmemConfig.cmake
              ${PROJECT_BINARY_DIR}/hakmemConfigVersion.cmake
        DESTINATION ${HAKMEM_CMAKE_DIR} COMPONENT dev)
# the build tree as a package too (hakmem_DIR=<build dir>)
export(EXPORT hakmemTargets NAMESPACE hakmem::
       FILE ${PROJECT_BINARY_DIR}/hakmemTargets.cmake)

# ---- launcher ----------------------------------------------------------------------
if(EXISTS ${PROJECT_SOURCE_DIR}/tools/hakmem)
  # The installed launcher finds the library at <bindir>/<this>/libhakmem.so.
  set(_hk_bindir ${CMAKE_INSTALL_BINDIR})
  set(_hk_libdir ${CMAKE_INSTALL_LIBDIR})
  if(NOT IS_ABSOLUTE "${_hk_bindir}")
    set(_hk_bindir "/PREFIX/${_hk_bindir}")
  endif()
  if(NOT IS_ABSOLUTE "${_hk_libdir}")
    set(_hk_libdir "/PREFIX/${_hk_libdir}")
  endif()
  if(_hk_bindir MATCHES "^/PREFIX/" AND _hk_libdir MATCHES "^/PREFIX/")
    file(RELATIVE_PATH HAKMEM_LAUNCHER_LIBDIR "${_hk_bindir}" "${_hk_libdir}")
  else()
    set(HAKMEM_LAUNCHER_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  endif()
  if(HAKMEM_LAUNCHER_LIBDIR STREQUAL "")
    set(HAKMEM_LAUNCHER_LIBDIR ".")
  endif()
  set(HAKMEM_LAUNCHER_VERSION ${PROJECT_VERSION})
  configure_file(${PROJECT_SOURCE_DIR}/tools/hakmem ${PROJECT_BINARY_DIR}/launcher/hakmem @ONLY)
  install(PROGRAMS ${PROJECT_BINARY_DIR}/launcher/hakmem
          DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()
# the statistics timeline viewer (python3), when the tree has it
if(EXISTS ${PROJECT_SOURCE_DIR}/tools/hakmem-report)
  install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/hakmem-report
          DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()

# ---- documentation -----------------------------------------------------------------
# README, LICENSE (and CHANGELOG) at the top, docs/ beside them as in the
# source tree with the images they show, so that the links between them
# (README -> docs/ENV_VARS.md, docs/bench-latest.svg) work in the installed
# copy too.
file(GLOB _hk_docs_top ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE
     ${PROJECT_SOURCE_DIR}/CHANGELOG.md ${PROJECT_SOURCE_DIR}/CONTRIBUTING.md)
file(GLOB _hk_docs ${PROJECT_SOURCE_DIR}/docs/*.md ${PROJECT_SOURCE_DIR}/docs/*.png
     ${PROJECT_SOURCE_DIR}/docs/*.svg)
if(_hk_docs_top)
  install(FILES ${_hk_docs_top} DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc)
endif()
if(_hk_docs)
  install(FILES ${_hk_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT doc)
endif()

# Every other file or folder of the source tree those pages link to (the
# examples/, the bench/results/ files that figures cite, docs/history/), at
# the same place relative to them, so that no link of the installed copy is
# dead; a linked page's own links are followed too. Read at configure time:
# editing a page configures again. (tests/system/ecosystem.sh install checks every
# link of every installed page.)
set(_hk_doc_todo)
foreach(_f ${_hk_docs_top} ${_hk_docs})
  if(_f MATCHES "[.]md$")
    file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR} ${_f})
    list(APPEND _hk_doc_todo ${_rel})
  endif()
endforeach()
set(_hk_doc_seen ${_hk_doc_todo})
set(_hk_doc_linked)
while(_hk_doc_todo)
  list(GET _hk_doc_todo 0 _page)
  list(REMOVE_AT _hk_doc_todo 0)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${_page})
  file(READ ${PROJECT_SOURCE_DIR}/${_page} _text)
  # "](target" (a link or an image), without the bracket: a "]" in a list
  # element would join it to the next
  string(REPLACE "](" "\n<hk-link>" _text "${_text}")
  string(REGEX MATCHALL "<hk-link>[^)# \t\n;]+" _links "${_text}")
  get_filename_component(_dir ${PROJECT_SOURCE_DIR}/${_page} DIRECTORY)
  foreach(_l ${_links})
    string(SUBSTRING "${_l}" 9 -1 _t)
    if(_t MATCHES "^[a-z]+:")
      continue()
    endif()
    get_filename_component(_abs ${_dir}/${_t} ABSOLUTE)
    file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR} ${_abs})
    if(_rel MATCHES "^[.][.]/" OR NOT EXISTS ${_abs} OR _rel IN_LIST _hk_doc_seen)
      continue()
    endif()
    list(APPEND _hk_doc_seen ${_rel})
    # installed above already: README, LICENSE, CHANGELOG, CONTRIBUTING, docs/*
    if(_rel MATCHES "^(README[.]md|LICENSE|CHANGELOG[.]md|CONTRIBUTING[.]md|docs/[^/]+)$")
      continue()
    endif()
    list(APPEND _hk_doc_linked ${_rel})
    if(_rel MATCHES "[.]md$" AND NOT IS_DIRECTORY ${_abs})
      list(APPEND _hk_doc_todo ${_rel})
    endif()
  endforeach()
endwhile()
foreach(_rel ${_hk_doc_linked})
  set(_inside FALSE)  # in a folder installed whole
  foreach(_o ${_hk_doc_linked})
    if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${_o} AND _rel MATCHES "^${_o}/")
      set(_inside TRUE)
    endif()
  endforeach()
  if(_inside)
    continue()
  elseif(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${_rel})
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${_rel}/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/${_rel}
            COMPONENT doc PATTERN target EXCLUDE PATTERN "build*" EXCLUDE)
  else()
    get_filename_component(_d ${_rel} DIRECTORY)
    install(FILES ${PROJECT_SOURCE_DIR}/${_rel} DESTINATION ${CMAKE_INSTALL_DOCDIR}/${_d} COMPONENT doc)
  endif()
endforeach()

# ---- man page: `man hakmem` (the launcher, the knobs, the control API) --------------
if(EXISTS ${PROJECT_SOURCE_DIR}/docs/hakmem.1)
  install(FILES ${PROJECT_SOURCE_DIR}/docs/hakmem.1
          DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT doc)
endif()
