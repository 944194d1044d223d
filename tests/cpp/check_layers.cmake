# Dependencies point one way (DESIGN.md): a folder includes nothing from the folders above it.
#   core/    the registry, dispatcher and primitives: nothing above core
#   sbp/     layouts, the cost model, signature selection: core only
#   boxing/  runs its steps with core primitives: core and sbp, no op front ends
#   ops/     core, sbp (the signatures it declares): not the executor of global tensors, graphs
#   global/  the eager executor of global ops: not graph mode, the public API or the bindings
#   graph/   graph mode and the planner: not the public API or the bindings
# Run as a test: cmake -DROOT=<source dir> -P check_layers.cmake
set(above_core "ops|sbp|boxing|global|graph|oneflowlike|python")
set(above_sbp "ops|boxing|global|graph|oneflowlike|python")
set(above_boxing "ops|global|graph|oneflowlike|python")
set(above_ops "global|graph|oneflowlike|python")
set(above_global "graph|oneflowlike|python")
set(above_graph "oneflowlike|python")
set(violations "")
set(checked 0)
foreach(folder core sbp boxing ops global graph)
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
message(STATUS "core/, sbp/, boxing/, ops/, global/, graph/: ${checked} files include nothing "
               "above their folder")
