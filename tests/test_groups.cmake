# Included by ctest (through CTestTestfile.cmake, idforge_test_groups in CMakeLists.txt):
# lists the tests of the program `bin` and adds one ctest test per group, each running its
# group in one process with --gtest_filter. A group is a suite's tests with the same
# parameter (AllStores/StoreContractTest.*/postgres), or a suite's tests when it has none:
# tests that would start the same servers (integration/services.h starts each shared
# server once per process) share them, and no test pays a process start of its own.
# Variables set by the caller: bin, label, cost_per_test, long_suites and serial_suites
# (lists).
# Named after the program: two programs may share a label.
get_filename_component(program "${bin}" NAME)
if(NOT EXISTS "${bin}")
  # Not built: one test that fails and says so, rather than no tests at all.
  add_test("${program}.not_built" "${bin}")
  set_tests_properties("${program}.not_built" PROPERTIES LABELS "${label}")
  return()
endif()
execute_process(COMMAND "${bin}" --gtest_list_tests OUTPUT_VARIABLE listing
                RESULT_VARIABLE listed TIMEOUT 60)
if(NOT listed EQUAL 0)
  add_test("${program}.cannot_list" "${bin}" --gtest_list_tests)
  set_tests_properties("${program}.cannot_list" PROPERTIES LABELS "${label}")
  return()
endif()

# Lines: "Suite." or "Prefix/Suite.  # TypeParam = ..." opens a suite; "  Name" or
# "  Name/param  # GetParam() = ..." is a test of it. Disabled tests are left to gtest,
# which skips them (a group of disabled tests only is not added).
string(REPLACE "\n" ";" lines "${listing}")
set(groups "")
set(suite "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #]+)\\.")
    set(suite "${CMAKE_MATCH_1}")
  elseif(suite AND line MATCHES "^  ([^ #]+)")
    set(test "${CMAKE_MATCH_1}")
    if(test MATCHES "^DISABLED_" OR suite MATCHES "^DISABLED_")
      continue()
    endif()
    if(test MATCHES "/([^/]+)$")
      set(group "${suite}.*/${CMAKE_MATCH_1}")
    else()
      set(group "${suite}.*")
    endif()
    # Keyed by the program too: the include files of all programs share one scope.
    string(MAKE_C_IDENTIFIER "${program}_${group}" key)
    if(NOT DEFINED count_${key})
      list(APPEND groups "${group}")
      set(count_${key} 0)
    endif()
    math(EXPR count_${key} "${count_${key}} + 1")
  endif()
endforeach()

# ctest starts the dearest tests first; on a clean clone it has no times of its own yet,
# so a group's cost is its number of tests times the program's cost_per_test, and 20 times
# that for the suites named in long_suites (tests of many seconds each).
foreach(group IN LISTS groups)
  string(MAKE_C_IDENTIFIER "${program}_${group}" key)
  math(EXPR cost "${count_${key}} * ${cost_per_test}")
  string(REGEX REPLACE "\\..*" "" suite "${group}")
  list(FIND long_suites "${suite}" long) # not if(IN_LIST): ctest reads this with old policies
  if(long GREATER -1)
    math(EXPR cost "${cost} * 20")
  endif()
  # Two programs with a suite of one name (the include files share one scope): the later
  # group is named after its program too, so neither replaces the other.
  set(name "${group}")
  list(FIND idforge_test_group_names "${name}" seen)
  if(seen GREATER -1)
    set(name "${group} (${program})")
  endif()
  list(APPEND idforge_test_group_names "${name}")
  add_test("${name}" "${bin}" "--gtest_filter=${group}" --gtest_brief=1)
  set_tests_properties("${name}" PROPERTIES LABELS "${label}" COST ${cost})
  list(FIND serial_suites "${suite}" serial)
  if(serial GREATER -1)
    set_tests_properties("${name}" PROPERTIES RUN_SERIAL TRUE)
  endif()
endforeach()
