# The shared libraries' link script: the linker's own default, with the
# functions of cmake/hot_text.ld placed first in .text (that file says why)
# and the unwind tables in a segment apart from the read-only data.
# Valgrind names only the functions of the section called .text, so the list
# goes inside it, not into a section of its own. Made at configure time from
# the linker's default for these very options (-shared, the HK_SO_LINK
# ones); any other linker, or a default without the expected .text
# statement, gets no script: the library is the same, its code in source
# order.
#   hk_hot_text_script(<link options> <out var>): the option to add, or "";
#   HK_HOT_TEXT_DEPENDS: the files a relink follows
function(hk_hot_text_script opts out)
  set(${out} "" PARENT_SCOPE)
  set(HK_HOT_TEXT_DEPENDS "" PARENT_SCOPE)
  set(dir ${CMAKE_BINARY_DIR}/hot_text)
  file(MAKE_DIRECTORY ${dir})
  file(WRITE ${dir}/empty.c "int hk_hot_text_probe;\n")
  execute_process(
    COMMAND ${CMAKE_C_COMPILER} -shared -fPIC ${opts} -Wl,--verbose
            -o ${dir}/probe.so ${dir}/empty.c
    OUTPUT_VARIABLE verbose ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(STATUS "hot text: the linker's default script not read; code left in source order")
    return()
  endif()
  # GNU ld prints its script between two rules of 50 '='
  string(REPEAT "=" 50 rule)
  string(FIND "${verbose}" "${rule}" first)
  string(FIND "${verbose}" "${rule}" last REVERSE)
  if(first EQUAL -1 OR last LESS_EQUAL first)
    message(STATUS "hot text: no default script printed (not GNU ld?); code left in source order")
    return()
  endif()
  string(LENGTH "${rule}" rule_len)
  math(EXPR from "${first} + ${rule_len}")
  math(EXPR len "${last} - ${from}")
  string(SUBSTRING "${verbose}" ${from} ${len} script)
  set(anchor "  .text           :\n  {\n")
  string(FIND "${script}" "${anchor}" at)
  if(at EQUAL -1)
    message(STATUS "hot text: no .text statement as expected; code left in source order")
    return()
  endif()
  string(REPLACE "${anchor}"
         "${anchor}    INCLUDE \"${CMAKE_CURRENT_SOURCE_DIR}/cmake/hot_text.ld\"\n"
         script "${script}")
  # The unwind tables, read only when a stack is walked, get a segment of
  # their own: a gap of two pages ends the read-only data's segment, and
  # fault-around, which stops at a mapping's end, then no longer maps them
  # with the tables every program reads (without the anchor: left as is).
  set(ro_end "  .rodata1        : { *(.rodata1) }\n")
  string(FIND "${script}" "${ro_end}" at)
  if(NOT at EQUAL -1)
    string(REPLACE "${ro_end}"
           "${ro_end}  . = . + 2 * CONSTANT (MAXPAGESIZE);\n" script "${script}")
  endif()
  # .fini, which DT_FINI runs at every exit, goes beside .init instead of
  # after all of .text: there it is a window of its own (12 pages here)
  # that every program maps as it exits, after its peak or at it
  # (test_lib_pages checks where the load and exit code lies)
  set(init_stmt "  .init           :\n  {\n    KEEP (*(SORT_NONE(.init)))\n  }\n")
  set(fini_stmt "  .fini           :\n  {\n    KEEP (*(SORT_NONE(.fini)))\n  }\n")
  string(FIND "${script}" "${init_stmt}" init_at)
  string(FIND "${script}" "${fini_stmt}" fini_at)
  if(NOT init_at EQUAL -1 AND NOT fini_at EQUAL -1)
    string(REPLACE "${fini_stmt}" "" script "${script}")
    string(REPLACE "${init_stmt}" "${init_stmt}${fini_stmt}" script "${script}")
  endif()
  file(WRITE ${dir}/libhakmem.ld "${script}")
  set(${out} "-Wl,-T,${dir}/libhakmem.ld" PARENT_SCOPE)
  set(HK_HOT_TEXT_DEPENDS ${dir}/libhakmem.ld ${CMAKE_CURRENT_SOURCE_DIR}/cmake/hot_text.ld PARENT_SCOPE)
endfunction()
