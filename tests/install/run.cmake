# ctest driver: install the build tree into DEST, build the consumer against it, run it.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGN}\n${out}\n${err}")
  endif()
  message("${out}")
endfunction()
file(REMOVE_RECURSE ${DEST})
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${DEST})
run(${CMAKE_COMMAND} -S ${SRC} -B ${DEST}/consumer-build -DCMAKE_PREFIX_PATH=${DEST}
    "-DCMAKE_C_FLAGS=${FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${FLAGS}")
run(${CMAKE_COMMAND} --build ${DEST}/consumer-build)
# prepend: the plugins' own dependencies may be found through the caller's library path
run(${CMAKE_COMMAND} -E env VG_BACKEND=kunlun_stub "LD_LIBRARY_PATH=${DEST}/lib:$ENV{LD_LIBRARY_PATH}"
    ${DEST}/consumer-build/consumer)
file(REMOVE_RECURSE ${DEST})
