// pld.DistributedConfig and pld._run (pld.run's core: python/pld/_run.py moves numpy arrays in
// and out of shared memory around it), the interpreter's fork hooks for rank processes, and the
// launcher queries (launcher_world_size, is_output_rank, gather).
#include "host.h"
#include "kernel.h"
#include "stdio_streams.h"

#include <pld/detail/host.hpp>
#include <pld/error.hpp>
#include <pld/host.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace pld::python {

namespace {

// The shm backend forks rank processes from whichever thread starts them (pld.run's caller, or a
// DistributedWorker's executor thread), usually with the GIL released. The hooks take the GIL and
// fork the interpreter as os.fork does; the child then releases the GIL again, and each Python
// kernel takes it for its run. A caller that waits for another thread to start ranks (a
// DistributedWorker's constructor, a recovering run) releases the GIL while it waits.
PyGILState_STATE g_fork_gil;

void fork_prepare() {
  g_fork_gil = PyGILState_Ensure();
  flush_stdio();  // a buffered line must not be printed by the host and again by the rank
  PyOS_BeforeFork();
}

void fork_parent() {
  PyOS_AfterFork_Parent();
  PyGILState_Release(g_fork_gil);
}

void fork_child() {
  PyOS_AfterFork_Child();
  line_buffer_rank_stdio();
  rank_forked(PyEval_SaveThread());
}

void rank_exit() {
  const PyGILState_STATE gil = PyGILState_Ensure();
  flush_stdio();
  PyGILState_Release(gil);
}

void run(const DistributedConfig& config, py::object orchestrator) {
  if (!PyCallable_Check(orchestrator.ptr()))
    throw UsageError(fmt::format("pld.run: orchestrator {} is not callable; pass a function orchestrator(h, *tensors)",
                                 py::repr(orchestrator).cast<std::string>()));
  auto alive = std::make_shared<bool>(true);
  struct EndCall {
    CallAlive alive;
    ~EndCall() { *alive = false; }
  } end_call{alive};
  py::gil_scoped_release release;
  detail::run(config, [&](Host& h) {
    py::gil_scoped_acquire gil;
    orchestrator(PyHost{&h, alive});
  });
}

DistributedConfig make_config(const std::vector<int>& device_ids, BackendKind backend, std::uint64_t heap_bytes,
                              double wait_timeout, bool swimlane, const std::string& dfx_dir, RaceCheck race_check) {
  DistributedConfig c{device_ids, backend, heap_bytes, wait_timeout, swimlane, dfx_dir, race_check};
  c.validate();
  return c;
}

}  // namespace

void bind_run(py::module_& m) {
  detail::set_rank_fork_hooks({&fork_prepare, &fork_parent, &fork_child, &rank_exit});
  py::class_<DistributedConfig>(m, "DistributedConfig",
                                "How a distributed program is laid out: rank r runs on device_ids[r].")
      .def(py::init(&make_config), py::arg("device_ids"), py::kw_only(), py::arg("backend") = BackendKind::Auto,
           py::arg("heap_bytes") = 0, py::arg("wait_timeout") = 0.0, py::arg("swimlane") = false,
           py::arg("dfx_dir") = "", py::arg("race_check") = RaceCheck::Setting,
           "device_ids: one per rank (distinct, >= 0); heap_bytes: window heap per rank (0 = PLD_HEAP_BYTES); "
           "wait_timeout: seconds (0 = PLD_WAIT_TIMEOUT); swimlane: record traces; dfx_dir: where they go; "
           "race_check: the race detector (RaceCheck.Setting: PLD_DEBUG decides).")
      .def_readwrite("device_ids", &DistributedConfig::device_ids)
      .def_readwrite("backend", &DistributedConfig::backend)
      .def_readwrite("heap_bytes", &DistributedConfig::heap_bytes)
      .def_readwrite("wait_timeout", &DistributedConfig::wait_timeout)
      .def_readwrite("swimlane", &DistributedConfig::swimlane)
      .def_readwrite("dfx_dir", &DistributedConfig::dfx_dir)
      .def_readwrite("race_check", &DistributedConfig::race_check)
      .def("validate", &DistributedConfig::validate)
      .def("world_size", &DistributedConfig::world_size)
      .def("__repr__", [](const DistributedConfig& c) {
        return fmt::format("pld.DistributedConfig(device_ids=[{}])", fmt::join(c.device_ids, ", "));
      });
  m.def("_run", &run, py::arg("config"), py::arg("orchestrator"));
  m.def("launcher_world_size", &launcher_world_size,
        "The number of processes mpirun started, or 0 when not started by an MPI launcher.");
  m.def("is_output_rank", &is_output_rank,
        "True in exactly one process (the program on shm, MPI rank 0 under mpirun).");
  m.def(
      "gather",
      [](const HostTensor& t, int root) {
        without_gil([&] { detail::gather_slices(t.data(), t.bytes(), t.shape.size() ? t.shape[0] : 0, root); });
      },
      py::arg("t"), py::arg("root") = -1,
      "Under mpirun with PLD_MPI_HOST_SYNC=none: collects slice t[r] from process r into root (-1: every process).");
}

}  // namespace pld::python
