# SPDX-License-Identifier: Apache-2.0
# Tests of the installed package and of the scripts, included from tests/CMakeLists.txt
# (install.find_package is registered there).

# A pkg-config consumer: cc consumer.c $(pkg-config --cflags --libs vg), run without
# LD_LIBRARY_PATH.
set(_vg_pc_flags "")
if(VG_SANITIZE) # a sanitized libvg needs a sanitized program around it
  list(JOIN VG_SANITIZE "," _vg_pc_san)
  set(_vg_pc_flags "-fsanitize=${_vg_pc_san}")
endif()
add_test(NAME install.pkg_config COMMAND ${CMAKE_COMMAND} -DMODE=pkg_config -DBUILD=${PROJECT_BINARY_DIR}
         "-DFLAGS=${_vg_pc_flags}" -DCC=${CMAKE_C_COMPILER} -DPKG_CONFIG=${PKG_CONFIG_EXECUTABLE}
         -DDEST=${CMAKE_CURRENT_BINARY_DIR}/install-prefix-pc -DSRC=${CMAKE_CURRENT_LIST_DIR}
         -P ${CMAKE_CURRENT_LIST_DIR}/run.cmake)
set_tests_properties(install.pkg_config PROPERTIES PASS_REGULAR_EXPRESSION "consumer: backend kunlun_stub")

# The vendor template (backends/kunlun_stub) built out of tree against the installed SDK, then
# the conformance suites on it, as a vendor would do (docs/adding-a-backend.md).
if(TARGET vg_kunlun_stub)
  add_test(NAME install.template COMMAND ${CMAKE_COMMAND} -DMODE=template -DBUILD=${PROJECT_BINARY_DIR}
           "-DFLAGS=${_vg_pc_flags}" -DCC=${CMAKE_C_COMPILER} -DPKG_CONFIG=${PKG_CONFIG_EXECUTABLE}
           -DDEST=${CMAKE_CURRENT_BINARY_DIR}/install-prefix-template
           -DTEMPLATE=${PROJECT_SOURCE_DIR}/backends/kunlun_stub
           "-DCONFORMANCE=$<TARGET_FILE:test_conformance>;$<TARGET_FILE:conformance_random>"
           -P ${CMAKE_CURRENT_LIST_DIR}/run.cmake)
  set_tests_properties(install.template PROPERTIES
    PASS_REGULAR_EXPRESSION "template: out-of-tree plugin passed the conformance suites"
    ENVIRONMENT "VG_BACKEND_PATH=")
endif()

# scripts/dev.sh and scripts/spdx.sh (what each case checks: dev_sh_test.sh's header).
find_program(VG_BASH bash)
find_program(VG_GIT git)
if(VG_BASH)
  foreach(_case backends summary quiet progress run_scope main_job build_dir spdx spdx_tree)
    if(_case MATCHES "^spdx" AND NOT VG_GIT)
      continue()
    endif()
    add_test(NAME scripts.${_case} COMMAND ${VG_BASH} ${CMAKE_CURRENT_LIST_DIR}/dev_sh_test.sh
             ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/scripts-${_case} ${_case})
    set_tests_properties(scripts.${_case} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
endif()
