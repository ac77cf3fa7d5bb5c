# pld_warnings(target...): the warning flags of every target pld builds (library, tests,
# tutorials, tools), in one place. With PLD_WERROR=ON (the ci preset, which the test command uses)
# every warning is an error.
option(PLD_WERROR "Treat compiler warnings as errors" OFF)
set(PLD_WARNING_FLAGS -Wall -Wextra -Wno-unused-parameter)
if(PLD_WERROR)
  list(APPEND PLD_WARNING_FLAGS -Werror)
endif()
function(pld_warnings)
  foreach(target IN LISTS ARGN)
    target_compile_options(${target} PRIVATE ${PLD_WARNING_FLAGS})
  endforeach()
endfunction()
