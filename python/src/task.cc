// pld.TaskGraph: the per-rank task model (include/pld/task.hpp) for Python kernels. Task bodies
// are Python callables run by the graph's threads; each takes the GIL while it runs, and run()
// releases it so that the threads can take turns. defer_wait (pld.system.defer_wait) registers
// conditions for the task running on the calling thread, exactly as in C++.
#include "bindings.h"

#include <pld/error.hpp>
#include <pld/task.hpp>

#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pld::python {

namespace {

/// A Python object that may be released on any thread: it takes the GIL to drop its reference.
struct SharedCallable {
  py::object fn;
  explicit SharedCallable(py::object f) : fn(std::move(f)) {}
  SharedCallable(const SharedCallable&) = delete;
  SharedCallable& operator=(const SharedCallable&) = delete;
  ~SharedCallable() {
    py::gil_scoped_acquire gil;
    fn = py::object();
  }
};

std::vector<pld::TaskId> task_ids(const py::handle& deps) {
  std::vector<pld::TaskId> ids;
  for (const py::handle& d : deps) {
    if (!py::isinstance<pld::TaskId>(d))
      throw pld::UsageError(
          fmt::format("TaskGraph.add: dependency {} is not a TaskId; pass the ids that add() "
                      "returned, e.g. g.add('use', fn, [recv])",
                      py::repr(d).cast<std::string>()));
    ids.push_back(d.cast<pld::TaskId>());
  }
  return ids;
}

pld::TaskId task_add(pld::TaskGraph& g, std::string name, const py::object& body, const py::object& deps) {
  if (!PyCallable_Check(body.ptr()))
    throw pld::UsageError(
        fmt::format("TaskGraph.add('{}'): body {} is not callable; pass a function taking no "
                    "arguments (e.g. a lambda or functools.partial)",
                    name, py::repr(body).cast<std::string>()));
  auto held = std::make_shared<SharedCallable>(body);
  return g.add(
      std::move(name),
      [held] {
        py::gil_scoped_acquire gil;
        held->fn();
      },
      task_ids(deps));
}

void defer_wait(py::handle signal, py::handle offsets, std::int32_t expected, WaitCmp cmp) {
  const Window& w = window_of(signal, "defer_wait", "signal");
  if (w.dtype != DType::INT32)
    throw UsageError(
        fmt::format("defer_wait: signal is a {} window; signals are INT32 windows, e.g. "
                    "h.alloc_window_buffer((n, 1), pld.DType.INT32, 'sig')",
                    dtype_name(w.dtype)));
  detail::defer_wait(w.desc(), dims_of(offsets, "defer_wait", "offsets"), expected, cmp);
}

}  // namespace

void bind_task(py::module_& m) {
  m.def_submodule("_system").def("defer_wait", &defer_wait, py::arg("signal"), py::arg("offsets"), py::arg("expected"),
                                 py::arg("cmp") = WaitCmp::Ge, R"doc(
Inside a task of a running pld.TaskGraph: registers "signal[offsets] cmp expected" on this rank's
copy of the INT32 window ``signal`` and returns at once. The task's TaskId completes (and its
dependants start) only when every condition it registered holds at one poll. WaitCmp.Ge (the
default) treats the cell as a monotonic counter: ``expected`` must be >= 0. Do no communication in
the waiter task after registering. Outside a task it raises pld.UsageError (use pld.system.wait).
)doc");
  py::class_<pld::TaskId>(m, "TaskId", "Identifies a task of a TaskGraph (its position, from 0).")
      .def_readonly("value", &pld::TaskId::value, "The task's position in its graph, from 0.")
      .def("__eq__", [](const pld::TaskId& a, const pld::TaskId& b) { return a == b; })
      .def("__hash__", [](const pld::TaskId& a) { return py::hash(py::int_(a.value)); })
      .def("__repr__", [](const pld::TaskId& a) { return fmt::format("TaskId({})", a.value); });

  py::class_<pld::TaskGraph>(m, "TaskGraph", R"doc(
Named tasks with dependencies, run by the calling rank on ``threads`` threads (the model's
core_num), with deferred completion through ``pld.system.defer_wait``::

    g = pld.TaskGraph(2, "step")
    send = g.add("send", lambda: (pld.tensor.put(v, peer, x),
                                  pld.system.notify(sig, peer, (me, 0), 1, pld.NotifyOp.AtomicAdd)))
    recv = g.add("await", lambda: pld.system.defer_wait(sig, (peer, 0), 1))   # returns at once
    g.add("use", lambda: consume(v), [recv])     # starts only when sig[peer, 0] >= 1
    g.run()                                      # returns when every task completed

A waiter task registers its conditions with ``defer_wait`` and returns; its TaskId completes only
when every condition holds (the wait deadline applies from registration). Use it inside a kernel:
a graph with several threads keeps them in the process that runs it, so run one in the host
process only with threads=1 (ranks forked from the host later would not have those threads).
Each task body takes the GIL while it runs, so Python tasks overlap only where the pld calls they
make release it; a task that blocks in ``pld.system.wait`` holds up the others — use a waiter
task with ``defer_wait`` instead. With swimlanes on (``DistributedConfig(swimlane=True)`` or
PLD_SWIMLANE=1) every task's timing and dependency edges are recorded.
)doc")
      .def(py::init<int, std::string>(), py::arg("threads") = 1, py::arg("name") = "tasks",
           "Creates an empty graph: ``threads`` in [1, 64] threads; ``name`` labels the scope in swimlanes.")
      .def("add", &task_add, py::arg("name"), py::arg("body"), py::arg("deps") = py::tuple(),
           R"doc(
Adds a task named ``name`` running ``body()`` (a callable without arguments) once every task in
``deps`` (TaskIds returned by earlier add() calls) has completed. Returns its TaskId.
)doc")
      .def("run", &pld::TaskGraph::run, py::call_guard<py::gil_scoped_release>(), R"doc(
Runs every task and returns when all completed. The first task that raises makes run() raise that
exception after the running tasks finish; tasks not started by then are skipped. A graph runs once.
)doc")
      .def("__len__", &pld::TaskGraph::size, "Number of tasks added so far.")
      .def("size", &pld::TaskGraph::size, "Number of tasks added so far.");

  m.attr("kMaxDeferConditions") = pld::kMaxDeferConditions;
  m.attr("kMaxDeferredTasks") = pld::kMaxDeferredTasks;
  m.attr("kMaxTaskThreads") = pld::kMaxTaskThreads;
}

}  // namespace pld::python
