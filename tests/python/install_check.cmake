# install.python: `cmake --install` into a fresh prefix, then run a one-rank pld.run from the
# installed package directory (PACKAGE_DIR under the prefix) with nothing of the build tree on the path.
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix RESULT_VARIABLE rc
                OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
set(script [=[
import numpy as np, pld
def kernel(out):
    out[...] = 7
out = np.zeros((1, 4), np.float32)
pld.run(pld.DistributedConfig(device_ids=[0]), lambda h, o: h.dispatch(0, kernel, o[0]), out)
assert (out == 7).all(), out
print("python: OK", pld.__file__)
]=])
execute_process(COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${WORK_DIR}/prefix/${PACKAGE_DIR} ${PYTHON} -c "${script}"
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(rc)
  message(FATAL_ERROR "the installed package failed: ${rc}")
endif()
if(NOT out MATCHES "${WORK_DIR}/prefix/")
  message(FATAL_ERROR "pld was not imported from the install prefix")
endif()
