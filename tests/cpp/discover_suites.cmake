# Writes OUT, a CTest file with one test per GoogleTest suite of EXE (run in DIR): each suite is
# one process running `EXE --gtest_filter=Suite.*`. Run after each link of the test binary.
# A process per suite rather than per case: loading the library (its CUDA libraries included)
# is most of a small case's time, 415 cases share 67 suites, and a failing suite's output names
# its failing cases.
execute_process(COMMAND ${EXE} --gtest_list_tests OUTPUT_VARIABLE listing RESULT_VARIABLE rc
                TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --gtest_list_tests failed (${rc}): ${listing}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(content "")
foreach(line IN LISTS lines)
  # A suite is a line without indentation, "Suite." (with "  # TypeParam = ..." for typed ones).
  if(line MATCHES "^([A-Za-z0-9_/]+)\\.")
    set(suite "${CMAKE_MATCH_1}")
    string(APPEND content "add_test([=[${suite}]=] [==[${EXE}]==] [=[--gtest_filter=${suite}.*]=])\n"
                          "set_tests_properties([=[${suite}]=] PROPERTIES WORKING_DIRECTORY "
                          "[==[${DIR}]==])\n")
  endif()
endforeach()
file(WRITE ${OUT} "${content}")
