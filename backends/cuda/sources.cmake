# SPDX-License-Identifier: Apache-2.0
# The CUDA backend's sources, in two lists, included by backends/cuda/CMakeLists.txt and by
# backends/hip/CMakeLists.txt (the hip backend is these sources compiled through vendor.h):
#   VG_CUDA_PORTABLE_SOURCES  built for both vendors;
#   VG_CUDA_NVIDIA_SOURCES    NVIDIA only: cuBLASLt, vg's skinny and panel GEMMs, the tensor-core attention
#                             kernels (mma.sync, ldmatrix, cp.async, wgmma) and the decode kernels'
#                             measured choice. hip_glue.cu stands in for them.
# A new source goes in one of the two lists; neither backend's CMakeLists names files itself.
set(VG_CUDA_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR})
set(VG_CUDA_PORTABLE_SOURCES
  ${VG_CUDA_SOURCE_DIR}/backend.cu
  ${VG_CUDA_SOURCE_DIR}/device.cu
  ${VG_CUDA_SOURCE_DIR}/stream.cu
  ${VG_CUDA_SOURCE_DIR}/ops.cu
  ${VG_CUDA_SOURCE_DIR}/ops_vit.cu
  ${VG_CUDA_SOURCE_DIR}/ops_lm.cu
  ${VG_CUDA_SOURCE_DIR}/ops_vision.cu
  ${VG_CUDA_SOURCE_DIR}/attention.cu
  ${VG_CUDA_SOURCE_DIR}/gemm_tiled.cu
  ${VG_CUDA_SOURCE_DIR}/ipc.cu
  ${VG_CUDA_SOURCE_DIR}/native.cu
  ${VG_CUDA_SOURCE_DIR}/comm.cu

  ${VG_CUDA_SOURCE_DIR}/graph_loop.cu)
set(VG_CUDA_NVIDIA_SOURCES
  ${VG_CUDA_SOURCE_DIR}/attention_tc.cu
  ${VG_CUDA_SOURCE_DIR}/attention_wg.cu
  ${VG_CUDA_SOURCE_DIR}/decode_tc.cu
  ${VG_CUDA_SOURCE_DIR}/decode_tune.cu
  ${VG_CUDA_SOURCE_DIR}/gemm.cu
  ${VG_CUDA_SOURCE_DIR}/gemm_panel.cu
  ${VG_CUDA_SOURCE_DIR}/gemm_skinny.cu)
