# SPDX-License-Identifier: Apache-2.0
# Kernel libraries of the CUDA backend (header-only; nothing of theirs is in the repository):
# FlashInfer's batch decode for paged attention (backends/cuda/decode_flashinfer.cu).
#   VG_KERNEL_LIBS=AUTO  use them when their headers are in VG_KERNEL_LIBS_DIR (the default)
#   VG_KERNEL_LIBS=ON    require them
#   VG_KERNEL_LIBS=OFF   vg's own kernels only
# VG_KERNEL_LIBS_DIR (default BUILD/_deps/kernel-libs) is the tree scripts/fetch-kernel-libs.sh
# writes (scripts/dev.sh runs it before configuring): flashinfer/include, cccl/include (CCCL
# newer than the toolkit's, first on that one file's include path) and VERSION.
set(VG_KERNEL_LIBS AUTO CACHE STRING "Kernel libraries of the CUDA backend: AUTO, ON or OFF")
set_property(CACHE VG_KERNEL_LIBS PROPERTY STRINGS AUTO ON OFF)
set(VG_KERNEL_LIBS_DIR "${CMAKE_BINARY_DIR}/_deps/kernel-libs" CACHE PATH
    "Headers of the CUDA backend's kernel libraries (scripts/fetch-kernel-libs.sh)")

# Add the library path to `target` when the headers are there; say in one line what is built.
function(vg_kernel_libs target)
  set(dir "${VG_KERNEL_LIBS_DIR}")
  set(why "")
  if(VG_KERNEL_LIBS STREQUAL "OFF")
    set(why "VG_KERNEL_LIBS=OFF")
  elseif(NOT EXISTS "${dir}/flashinfer/include/flashinfer/attention/decode.cuh")
    set(why "no FlashInfer headers in ${dir}; scripts/fetch-kernel-libs.sh fetches them")
  elseif(NOT EXISTS "${dir}/cccl/include/cuda/std/version")
    set(why "no CCCL headers in ${dir}/cccl/include")
  endif()
  if(why)
    if(VG_KERNEL_LIBS STREQUAL "ON")
      message(FATAL_ERROR "VG_KERNEL_LIBS=ON but ${why}")
    endif()
    message(STATUS "cuda kernels: vg's own (kernel libraries off: ${why})")
    return()
  endif()
  set(version unknown)
  if(EXISTS "${dir}/VERSION")
    file(STRINGS "${dir}/VERSION" version LIMIT_COUNT 1)
  endif()
  set(src "${PROJECT_SOURCE_DIR}/backends/cuda/decode_flashinfer.cu")
  target_sources(${target} PRIVATE "${src}")
  set_source_files_properties("${src}" PROPERTIES
    INCLUDE_DIRECTORIES "${dir}/cccl/include;${dir}/flashinfer/include"
    COMPILE_DEFINITIONS "VG_FLASHINFER_VERSION=\"${version}\""
    COMPILE_OPTIONS "--expt-relaxed-constexpr") # FlashInfer calls std::max in device code
  target_compile_definitions(${target} PRIVATE VG_HAVE_KERNEL_LIBS=1)
  message(STATUS "cuda kernels: vg + FlashInfer ${version} headers")
endfunction()
