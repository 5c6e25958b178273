# SPDX-License-Identifier: Apache-2.0
# ctest driver: install the build tree into DEST, then use it as a consumer would.
#   MODE=find_package (default)  a CMake project with find_package(vg) and vg::vg (SRC); then the
#                                installed vg loads each of PLUGINS (names, '|'-separated: the
#                                other backends built) from the prefix, device or not
#                                and the installed conformance suites (LIBEXECDIR/vg) run on
#                                the installed kunlun_stub (LIBDIR/vg)
#   MODE=pkg_config              CC SRC/consumer.c $(pkg-config --cflags --libs vg), run with
#                                no LD_LIBRARY_PATH: vg.pc must make libvg findable at run time
#   MODE=template                the vendor template (TEMPLATE: backends/kunlun_stub's sources)
#                                built out of tree as libvg_mytemplate.so against the installed
#                                headers alone, as docs/adding-a-backend.md says; then the
#                                conformance suites (CONFORMANCE: their paths) run on it
# The consumers open kunlun_stub and must find it among the installed plugins.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGN}\n${out}\n${err}")
  endif()
  message("${out}")
  set(run_out "${out}" PARENT_SCOPE)
endfunction()
if(NOT MODE)
  set(MODE find_package)
endif()
file(REMOVE_RECURSE ${DEST})
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${DEST})
if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} -S ${SRC} -B ${DEST}/consumer-build -DCMAKE_PREFIX_PATH=${DEST}
      "-DCMAKE_C_FLAGS=${FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${FLAGS}")
  run(${CMAKE_COMMAND} --build ${DEST}/consumer-build)
  # prepend: the plugins' own dependencies may be found through the caller's library path
  run(${CMAKE_COMMAND} -E env VG_BACKEND=kunlun_stub "LD_LIBRARY_PATH=${DEST}/lib:$ENV{LD_LIBRARY_PATH}"
      ${DEST}/consumer-build/consumer)
  set(consumer_out "${run_out}")
  get_filename_component(real_dest ${DEST} REALPATH)
  string(REPLACE "|" ";" PLUGINS "${PLUGINS}")
  foreach(name ${PLUGINS})
    # vg info names the file it loaded; a machine without the device still loads the plugin
    execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=VG_BACKEND_PATH ${DEST}/bin/vg info
                    --backend ${name} OUTPUT_VARIABLE out ERROR_VARIABLE err)
    set(path "")
    if(out MATCHES "backend ${name}: loaded ([^\n]*)")
      set(path "${CMAKE_MATCH_1}")
    endif()
    if(NOT path MATCHES "^${real_dest}/.*/vg/libvg_${name}\\.so$")
      message(FATAL_ERROR "the installed vg did not load the installed ${name} plugin:\n${out}\n${err}")
    endif()
    message("installed plugin found: ${path}")
  endforeach()
  # The conformance suites as installed, on the installed kunlun_stub named by its path, as a
  # vendor runs them on a plugin (docs/adding-a-backend.md): the libvg they load is this prefix's.
  set(stub ${DEST}/${LIBDIR}/vg/libvg_kunlun_stub.so)
  foreach(suite test_conformance conformance_random)
    set(exe ${DEST}/${LIBEXECDIR}/vg/${suite})
    run(${CMAKE_COMMAND} -E env LD_TRACE_LOADED_OBJECTS=1 ${exe})
    if(NOT run_out MATCHES "libvg\\.so[^\n]* => (${DEST}|${real_dest})/")
      message(FATAL_ERROR "the installed ${suite} does not load the installed libvg:\n${run_out}")
    endif()
    run(${CMAKE_COMMAND} -E env --unset=VG_BACKEND_PATH VG_BACKEND=${stub} ${exe})
    message("installed ${suite} passed on ${stub}")
  endforeach()
  message("${consumer_out}")
elseif(MODE STREQUAL "pkg_config")
  file(GLOB_RECURSE pc ${DEST}/*/pkgconfig/vg.pc)
  list(LENGTH pc n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "expected one installed vg.pc under ${DEST}, found: ${pc}")
  endif()
  get_filename_component(pcdir ${pc} DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} ${pcdir})
  run(${PKG_CONFIG} --cflags --libs vg)
  string(STRIP "${run_out}" pc_flags)
  separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
  separate_arguments(extra UNIX_COMMAND "${FLAGS}")
  run(${CC} ${extra} ${SRC}/consumer.c ${pc_flags} -o ${DEST}/consumer-pc)
  # No LD_LIBRARY_PATH: libvg (and libvg_models) must be found through what vg.pc linked in.
  # Only offline-deps.sh's environment (VG_SKIP_DEPS=1) keeps the caller's, which holds libvg's
  # own dependencies (cJSON) and never this prefix.
  set(env_ld --unset=LD_LIBRARY_PATH)
  if("$ENV{VG_SKIP_DEPS}" STREQUAL "1" AND DEFINED ENV{LD_LIBRARY_PATH})
    set(env_ld "LD_LIBRARY_PATH=$ENV{LD_LIBRARY_PATH}")
  endif()
  run(${CMAKE_COMMAND} -E env ${env_ld} VG_BACKEND=kunlun_stub ${DEST}/consumer-pc)
  # the plugin must be the installed one: the libvg that found it came from this prefix
  get_filename_component(real_dest ${DEST} REALPATH)
  string(FIND "${run_out}" " from ${real_dest}/" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the consumer did not load vg from ${real_dest}")
  endif()
elseif(MODE STREQUAL "template")
  # the installed SDK only: no -I into the source tree
  file(GLOB sources ${TEMPLATE}/*.c)
  separate_arguments(extra UNIX_COMMAND "${FLAGS}")
  run(${PKG_CONFIG} --cflags --libs openblas)
  string(STRIP "${run_out}" blas_flags)
  separate_arguments(blas_flags UNIX_COMMAND "${blas_flags}")
  set(plugin ${DEST}/template/libvg_mytemplate.so)
  file(MAKE_DIRECTORY ${DEST}/template)
  run(${CC} -std=c11 -D_POSIX_C_SOURCE=200809L -shared -fPIC -fvisibility=hidden ${extra}
      -I${DEST}/include ${sources} ${blas_flags} -lpthread -lm -o ${plugin})
  run(${CMAKE_COMMAND} -E env VG_BACKEND=${plugin} ${BUILD}/bin/vg info)
  string(FIND "${run_out}" "selected: kunlun_stub" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "vg info did not select the template plugin")
  endif()
  foreach(suite ${CONFORMANCE})
    run(${CMAKE_COMMAND} -E env VG_BACKEND=${plugin} ${suite})
  endforeach()
  message("template: out-of-tree plugin passed the conformance suites")
else()
  message(FATAL_ERROR "MODE=${MODE}: find_package, pkg_config or template")
endif()
file(REMOVE_RECURSE ${DEST})
