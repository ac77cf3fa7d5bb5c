# pld's SHMEM primitives benchmark (pld-bench-shmem) and its OpenSHMEM smoke.
# shmem_pld.cpp is the pld side of the comparison, shmem_oshmem.c the Open MPI OSHMEM side (C,
# built with oshcc, not by CMake: see its header). Both print the same rows; timing claims live in
# their output, never in tests: the smokes run --quick and only require the checks to pass.
add_executable(pld-bench-shmem shmem_pld.cpp)
target_include_directories(pld-bench-shmem PRIVATE ${PROJECT_SOURCE_DIR}/tools/pld-bench)  # rules.hpp
target_link_libraries(pld-bench-shmem PRIVATE pld::pld CLI11::CLI11 nlohmann_json::nlohmann_json)
pld_warnings(pld-bench-shmem)
# Kernels are plain functions of the executable; exporting them lets pld name them in reports.
set_target_properties(pld-bench-shmem PROPERTIES ENABLE_EXPORTS ON)
add_test(NAME bench.peers.shmem.smoke COMMAND pld-bench-shmem --quick -g 2)
set_tests_properties(bench.peers.shmem.smoke PROPERTIES LABELS bench TIMEOUT 120)

# The OSHMEM side, compiled and run by the test itself when oshcc and oshrun are installed.
find_program(PLD_OSHCC oshcc)
find_program(PLD_OSHRUN oshrun)
if(PLD_OSHCC AND PLD_OSHRUN)
  add_test(NAME bench.peers.shmem.oshmem.smoke
           COMMAND sh -c "'${PLD_OSHCC}' -O3 '${CMAKE_CURRENT_SOURCE_DIR}/shmem_oshmem.c' -o shmem_oshmem && \
'${PLD_OSHRUN}' --allow-run-as-root -n 2 --mca memory ^patcher ./shmem_oshmem --quick"
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(bench.peers.shmem.oshmem.smoke PROPERTIES LABELS bench TIMEOUT 120)
endif()
