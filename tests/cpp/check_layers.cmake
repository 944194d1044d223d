# Dependencies point one way (DESIGN.md): a folder includes nothing from the folders above it.
#   core/    the registry, dispatcher and primitives: nothing above core
#   sbp/     layouts, the cost model, signature selection: core only
#   boxing/  runs its steps with core primitives: core and sbp, no op front ends
# (ops/ knows SBP only as the signatures it declares: sbp/signature.h.)
# Run as a test: cmake -DROOT=<source dir> -P check_layers.cmake
set(above_core "ops|sbp|boxing|global|graph|oneflowlike|python")
set(above_sbp "ops|boxing|global|graph|oneflowlike|python")
set(above_boxing "ops|global|graph|oneflowlike|python")
set(violations "")
set(checked 0)
foreach(folder core sbp boxing)
  file(GLOB_RECURSE sources "${ROOT}/${folder}/*.h" "${ROOT}/${folder}/*.cpp"
       "${ROOT}/${folder}/*.cu")
  list(LENGTH sources n)
  math(EXPR checked "${checked} + ${n}")
  foreach(f ${sources})
    file(STRINGS "${f}" lines REGEX "^#include \"(${above_${folder}})/")
    foreach(line ${lines})
      file(RELATIVE_PATH rel "${ROOT}" "${f}")
      list(APPEND violations "${rel}: ${line}")
    endforeach()
  endforeach()
endforeach()
if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "includes of folders above the includer's:\n  ${text}")
endif()
message(STATUS "core/, sbp/, boxing/: ${checked} files include nothing above their folder")
