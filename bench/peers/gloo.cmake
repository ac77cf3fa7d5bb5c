# C++ Gloo's collectives benchmark (gloo-bench), built when libgloo-dev is installed.
#
# Gloo's CMake config (Debian: /usr/share/cmake/Gloo) defines the imported target `gloo`; without it
# the library and headers are looked up directly. Neither found: no gloo-bench, and a note says why.
find_package(Gloo CONFIG QUIET)
set(pld_gloo_target "")
if(TARGET gloo)
  set(pld_gloo_target gloo)
else()
  find_library(PLD_GLOO_LIBRARY gloo)
  find_path(PLD_GLOO_INCLUDE_DIR gloo/config.h)
  if(PLD_GLOO_LIBRARY AND PLD_GLOO_INCLUDE_DIR)
    add_library(pld_gloo UNKNOWN IMPORTED)
    set_target_properties(pld_gloo PROPERTIES IMPORTED_LOCATION ${PLD_GLOO_LIBRARY}
                                              INTERFACE_INCLUDE_DIRECTORIES ${PLD_GLOO_INCLUDE_DIR})
    set(pld_gloo_target pld_gloo)
  endif()
endif()

if(NOT pld_gloo_target)
  message(STATUS "gloo-bench: not built (Gloo not found; install libgloo-dev: scripts/deps.sh)")
  return()
endif()

add_executable(gloo-bench gloo_bench.cpp)
target_include_directories(gloo-bench PRIVATE ${PROJECT_SOURCE_DIR}/tools/pld-bench)  # rules.hpp
target_link_libraries(gloo-bench PRIVATE ${pld_gloo_target} Threads::Threads CLI11::CLI11
                                         nlohmann_json::nlohmann_json)
pld_warnings(gloo-bench)
add_test(NAME bench.peers.gloo.smoke COMMAND gloo-bench --op all --quick)
set_tests_properties(bench.peers.gloo.smoke PROPERTIES LABELS bench TIMEOUT 300)
