# SPDX-License-Identifier: Apache-2.0
# ctest: only the ABI tests may include vg/vg_backend.h (test_abi.c, test_loader.c and the test
# plugins under plugins/); every other test reaches a backend through vg_device.h, so what the
# conformance, runner, vision-encoder and thread tests exercise is what applications call.
#   cmake -DDIR=<tests source dir> -P check_backend_header.cmake
cmake_minimum_required(VERSION 3.25)
file(GLOB sources ${DIR}/*.c ${DIR}/*.h)
set(allowed test_abi.c test_loader.c)
set(offenders "")
foreach(f ${sources})
  get_filename_component(name ${f} NAME)
  if(name IN_LIST allowed)
    continue()
  endif()
  file(STRINGS ${f} hits REGEX "#[ \t]*include[ \t]*[<\"](vg/)?vg_backend\\.h[>\"]")
  if(hits)
    list(APPEND offenders ${name})
  endif()
endforeach()
list(LENGTH sources n)
if(n LESS 5)
  message(FATAL_ERROR "found only ${n} sources under ${DIR}: wrong directory?")
endif()
if(offenders)
  message(FATAL_ERROR "these tests include vg_backend.h but are not ABI tests: ${offenders}")
endif()
message("checked ${n} test sources: vg_backend.h only in ${allowed} and plugins/")
