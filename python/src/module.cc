// pld._pld: the extension module behind the `pld` package (python/pld/__init__.py re-exports it).
// Each concept's names are bound by its own file; add a file's bind_<concept> here and its source
// to PLD_PYTHON_SOURCES (python/CMakeLists.txt).
#include "bindings.h"

PYBIND11_MODULE(_pld, m) {
  using namespace pld::python;
  m.doc() = "pld's C++ runtime: symmetric windows, signals and collectives (use the pld package)";
  bind_errors(m);
  bind_types(m);
  bind_host_tensor(m);
  bind_shared_numpy(m);
  bind_window(m);
  bind_host(m);
  bind_run(m);
  bind_kernel(m);
  bind_tile(m);
  bind_signal(m);
  bind_rma(m);
  bind_collectives(m);
  bind_worker(m);
  bind_task(m);
}
