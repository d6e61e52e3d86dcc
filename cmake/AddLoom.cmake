#===- AddLoom.cmake - thin wrappers over AddMLIR --------------------------===#
#
# Loom libraries link MLIR through the monolithic libMLIR.so
# (MLIR_LINK_MLIR_DYLIB=ON); these wrappers keep each CMakeLists short.
#
#===----------------------------------------------------------------------===#

# add_loom_library(name sources... [DEPENDS targets] [LINK_LIBS libs]
#                  [MLIR_LIBS mlir-libs])
function(add_loom_library name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;LINK_LIBS;MLIR_LIBS" ${ARGN})
  add_library(${name} STATIC ${ARG_UNPARSED_ARGUMENTS})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  if(ARG_LINK_LIBS)
    target_link_libraries(${name} PUBLIC ${ARG_LINK_LIBS})
  endif()
  if(ARG_MLIR_LIBS)
    mlir_target_link_libraries(${name} PUBLIC ${ARG_MLIR_LIBS})
    target_link_libraries(${name} PUBLIC LLVM)
  endif()
endfunction()

# add_loom_tool(name sources... [LINK_LIBS libs] [MLIR_LIBS mlir-libs])
function(add_loom_tool name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;LINK_LIBS;MLIR_LIBS" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  if(ARG_LINK_LIBS)
    target_link_libraries(${name} PRIVATE ${ARG_LINK_LIBS})
  endif()
  if(ARG_MLIR_LIBS)
    mlir_target_link_libraries(${name} PRIVATE ${ARG_MLIR_LIBS})
    target_link_libraries(${name} PRIVATE LLVM)
  endif()
  llvm_update_compile_flags(${name})
endfunction()
