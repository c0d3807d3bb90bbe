# StaticLLVM.cmake - link MLIR's static archives without the shared libLLVM.
#
# Used by the shipping build (KILN_STATIC_LLVM=ON), which produces one Python
# extension that needs nothing from LLVM/MLIR at run time. Debian's imported
# MLIR* targets (static archives) list the shared `LLVM` target in their
# INTERFACE_LINK_LIBRARIES; linking both libLLVM.so and the static MLIR
# archives would put two copies of LLVM (and two sets of its global
# registries) in one process. This rewrites, for every imported MLIR* target,
# that `LLVM` entry into the static component libraries named by
# KILN_LLVM_COMPONENT_LIBS (set in the top-level CMakeLists.txt).
#
# Include it after find_package(MLIR) and after KILN_LLVM_COMPONENT_LIBS is
# set; it does nothing in development builds.

if(NOT KILN_STATIC_LLVM)
  return()
endif()
if(NOT KILN_LLVM_COMPONENT_LIBS OR "LLVM" IN_LIST KILN_LLVM_COMPONENT_LIBS)
  message(FATAL_ERROR "StaticLLVM.cmake: KILN_LLVM_COMPONENT_LIBS must name the "
                      "static LLVM component libraries (got '${KILN_LLVM_COMPONENT_LIBS}')")
endif()

# The imported targets are only visible as a list in the directory that ran
# find_package(MLIR); MLIR_EXPORTED_TARGETS names the static MLIR libraries.
get_property(_kiln_imported DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY IMPORTED_TARGETS)
set(_kiln_rewritten 0)
foreach(_kiln_target IN LISTS _kiln_imported)
  if(NOT _kiln_target MATCHES "^MLIR")
    continue()
  endif()
  get_target_property(_kiln_libs ${_kiln_target} INTERFACE_LINK_LIBRARIES)
  if(NOT _kiln_libs OR NOT "LLVM" IN_LIST _kiln_libs)
    continue()
  endif()
  list(TRANSFORM _kiln_libs REPLACE "^LLVM$" "${KILN_LLVM_COMPONENT_LIBS}")
  list(REMOVE_DUPLICATES _kiln_libs)
  set_target_properties(${_kiln_target} PROPERTIES INTERFACE_LINK_LIBRARIES "${_kiln_libs}")
  math(EXPR _kiln_rewritten "${_kiln_rewritten} + 1")
endforeach()
message(STATUS "StaticLLVM: linked ${_kiln_rewritten} MLIR targets against static LLVM components")

# LLVMSupport links zlib and zstd (compressed debug sections, compressed
# offload bundles) through the shared libraries; the shipping build must need
# nothing but glibc, so they are replaced by the static archives. Debian's
# libz.a and libzstd.a are position-independent, as a shared object needs.
find_library(KILN_ZLIB_STATIC NAMES libz.a)
find_library(KILN_ZSTD_STATIC NAMES libzstd.a)
if(NOT KILN_ZLIB_STATIC OR NOT KILN_ZSTD_STATIC)
  message(FATAL_ERROR "StaticLLVM.cmake: the static zlib and zstd archives (libz.a from zlib1g-dev, "
                      "libzstd.a from libzstd-dev) are needed to link LLVM statically; found "
                      "'${KILN_ZLIB_STATIC}' and '${KILN_ZSTD_STATIC}'")
endif()
foreach(_kiln_target IN LISTS _kiln_imported)
  if(NOT _kiln_target MATCHES "^LLVM")
    continue()
  endif()
  get_target_property(_kiln_libs ${_kiln_target} INTERFACE_LINK_LIBRARIES)
  if(NOT _kiln_libs)
    continue()
  endif()
  set(_kiln_static_libs ${_kiln_libs})
  list(TRANSFORM _kiln_static_libs REPLACE "^ZLIB::ZLIB$" "${KILN_ZLIB_STATIC}")
  list(TRANSFORM _kiln_static_libs REPLACE "^zstd::libzstd_(shared|static)$" "${KILN_ZSTD_STATIC}")
  if(NOT _kiln_static_libs STREQUAL _kiln_libs)
    set_target_properties(${_kiln_target} PROPERTIES INTERFACE_LINK_LIBRARIES "${_kiln_static_libs}")
    message(STATUS "StaticLLVM: ${_kiln_target} links zlib and zstd statically")
  endif()
endforeach()
