# Fails when the shared library LIB defines symbols of libstdc++ itself (std::locale, the
# standard streams' initialiser): a second copy of the C++ runtime beside the shared one.
#   cmake -DLIB=path/to/liboneflowlike.so -P check_runtime_copy.cmake
find_program(NM nm REQUIRED)
execute_process(COMMAND ${NM} -D --defined-only ${LIB} OUTPUT_VARIABLE symbols
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm could not read ${LIB}")
endif()
# std::locale::classic(), std::ios_base::Init::Init(), std::locale::id::_M_id() const
string(REGEX MATCHALL "_ZNSt6locale7classicEv|_ZNSt8ios_base4InitC[12]Ev|_ZNKSt6locale2id5_M_idEv"
       found "${symbols}")
if(found)
  list(REMOVE_DUPLICATES found)
  message(FATAL_ERROR "${LIB} defines libstdc++'s own symbols (${found}): it carries a copy of "
                      "the C++ runtime; link libstdc++ as a shared library")
endif()
message(STATUS "${LIB}: no copy of the C++ runtime")
