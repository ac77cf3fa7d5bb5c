// pld.DistributedWorker's engine (pld._pld._Worker, wrapped by python/pld/worker.py): the rank
// processes are forked once and kept across calls of Python orchestrators. Each call records its
// orchestrator on the calling thread (with the GIL), then executes it on the ranks (without it).
#include "worker.h"

#include "errors.h"
#include "fast_call.h"
#include "host.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace pld::python {

namespace {

/// Programs one worker may hold. WorkerCore tells programs apart by a function pointer; a Python
/// program gets the pointer of its position.
constexpr int kMaxPrograms = 64;

template <int I>
void program_slot() {
  static volatile int mark = I;  // a distinct body per slot: no two slots fold into one address
  (void)mark;
}
template <int... I>
constexpr std::array<void (*)(), sizeof...(I)> program_slots(std::integer_sequence<int, I...>) {
  return {&program_slot<I>...};
}
constexpr auto kProgramSlots = program_slots(std::make_integer_sequence<int, kMaxPrograms>{});

double timeout_of(const py::object& timeout) {
  return timeout.is_none() ? std::numeric_limits<double>::infinity() : timeout.cast<double>();
}

/// The pld.Host of a recording. The last one is reused when nothing but this cache holds it (a
/// user who kept `h` keeps a dead handle; the next call gets a new one), so a loop of calls
/// makes no Python object for it. Called with the GIL.
py::object host_object(Host& host, const CallAlive& alive) {
  static auto* cache = new py::object();  // never destroyed: it would outlive the interpreter
  if (*cache && Py_REFCNT(cache->ptr()) == 1) {
    PyHost* h = exact_instance<PyHost>(*cache);  // the cache holds exactly a pld.Host
    h->host = &host;
    h->alive = alive;
  } else {
    *cache = py::cast(PyHost{&host, alive});
  }
  return *cache;
}

/// Calls `program(h, *args)` with a pld.Host valid for this recording only.
void call_orchestrator(Host& host, const py::object& program, const py::tuple& args) {
  const CallAlive alive = std::make_shared<bool>(true);
  struct Expire {
    const CallAlive& alive;
    ~Expire() { *alive = false; }
  } expire{alive};
  // The call's tuple built directly (pybind11's `program(h, *args)` collects into a list first).
  const auto n = static_cast<Py_ssize_t>(args.size());
  const py::tuple call(n + 1);
  PyTuple_SET_ITEM(call.ptr(), 0, host_object(host, alive).release().ptr());
  for (Py_ssize_t i = 0; i < n; ++i) PyTuple_SET_ITEM(call.ptr(), i + 1, py::object(args[i]).release().ptr());
  const py::object done = py::reinterpret_steal<py::object>(PyObject_Call(program.ptr(), call.ptr(), nullptr));
  if (!done) throw py::error_already_set();
}

/// The recording step of one call: the Python orchestrator runs with the GIL on the thread that
/// records (the caller's), receiving a pld.Host.
std::function<void(Host&)> recorder(const py::object& program, const py::tuple& args) {
  return [&program, &args](Host& host) {
    py::gil_scoped_acquire gil;
    call_orchestrator(host, program, args);
  };
}

/// A submitted call: pld.RunHandle.
struct Handle {
  std::shared_ptr<detail::CallState> state;
};

}  // namespace

Worker::Worker(const DistributedConfig& config, const py::list& programs, const WorkerOptions& options)
    : world_size_(config.world_size()) {
  const char* api = "DistributedWorker";
  if (programs.empty())
    throw UsageError(fmt::format("{}: no programs; pass an orchestrator function or a list of them", api));
  if (programs.size() > static_cast<std::size_t>(kMaxPrograms))
    throw UsageError(fmt::format("{}: {} programs, more than the {} one worker holds; use several workers", api,
                                 programs.size(), kMaxPrograms));
  std::vector<void (*)()> slots;
  for (const py::handle& p : programs) {
    if (!PyCallable_Check(p.ptr()))
      throw UsageError(fmt::format("{}: program {} is not callable; pass functions program(h, *args)", api,
                                   py::repr(p).cast<std::string>()));
    slots.push_back(kProgramSlots[programs_.size()]);
    programs_.push_back(py::reinterpret_borrow<py::object>(p));
  }
  config.validate();
  py::gil_scoped_release release;  // the executor thread forks the ranks (fork hooks take the GIL)
  core_ = std::make_unique<detail::WorkerCore>(config, options, std::move(slots));
}

Worker::~Worker() {
  if (PyGILState_Check()) {
    py::gil_scoped_release release;
    core_.reset();
  } else {
    core_.reset();
  }
}

detail::WorkerCore& Worker::core() {
  if (!core_) throw UsageError("DistributedWorker: the worker is closed; create a new one");
  return *core_;
}

int Worker::program_index(const char* api, const py::handle& program) const {
  for (std::size_t i = 0; i < programs_.size(); ++i)
    if (programs_[i].is(program)) return static_cast<int>(i);
  throw UsageError(
      fmt::format("{}: program {} was not registered when the worker was created; pass it in DistributedWorker(config, "
                  "[programs...])",
                  api, py::repr(program).cast<std::string>()));
}

void Worker::prune_finished() {
  std::erase_if(pending_, [](const auto& p) { return detail::call_done(*p.first); });
}

void Worker::keep_alive(std::shared_ptr<detail::CallState> state, py::object args) {
  prune_finished();
  pending_.emplace_back(std::move(state), std::move(args));
}

void Worker::close() {
  if (core_) {
    py::gil_scoped_release release;
    core_->close();
  }
  pending_.clear();
}

namespace {

Handle worker_submit(Worker& w, const py::object& program, const py::tuple& call_args) {
  const int slot = w.program_index("DistributedWorker.submit", program);
  detail::WorkerCore& core = w.core();
  std::shared_ptr<detail::CallState> state;
  {
    py::gil_scoped_release release;  // submit may wait for a call in flight
    state = core.submit(kProgramSlots[static_cast<std::size_t>(slot)], recorder(program, call_args));
  }
  w.keep_alive(state, call_args);
  return Handle{std::move(state)};
}

void worker_run(Worker& w, const py::object& program, const py::tuple& call_args) {
  const int slot = w.program_index("DistributedWorker.run", program);
  detail::WorkerCore& core = w.core();
  py::gil_scoped_release release;
  core.run(kProgramSlots[static_cast<std::size_t>(slot)], recorder(program, call_args));
}

/// _Worker.run(program, args), against the C API (METH_FASTCALL): DistributedWorker's per-call
/// entry, where pybind11's dispatcher cost a tenth of an empty call.
PyObject* worker_run_entry(PyObject* self, PyObject* const* argv, Py_ssize_t argc) {
  try {
    if (argc != 2 || !PyTuple_Check(argv[1]))
      throw UsageError("_Worker.run: pass run(program, args) with args a tuple (use pld.DistributedWorker)");
    Worker* exact = exact_instance<Worker>(self);
    Worker& w = exact ? *exact : py::handle(self).cast<Worker&>();
    worker_run(w, py::reinterpret_borrow<py::object>(argv[0]), py::reinterpret_borrow<py::tuple>(argv[1]));
    Py_RETURN_NONE;
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyMethodDef g_run_def = {"run", c_function(&worker_run_entry), METH_FASTCALL,
                         "run(program, args)\n--\n\nRuns program(h, *args) and waits for it."};

BenchmarkStats worker_benchmark(Worker& w, const py::object& program, const py::tuple& call_args, int rounds,
                                int warmup) {
  const int slot = w.program_index("DistributedWorker.benchmark", program);
  detail::WorkerCore& core = w.core();
  py::gil_scoped_release release;
  return core.benchmark(kProgramSlots[static_cast<std::size_t>(slot)], recorder(program, call_args), rounds, warmup);
}

void bind_stats(py::module_& m) {
  py::class_<BenchmarkStats::Stat>(m, "BenchmarkStat", "min / median / mean / max of one timing, in microseconds.")
      .def_readonly("min", &BenchmarkStats::Stat::min)
      .def_readonly("median", &BenchmarkStats::Stat::median)
      .def_readonly("mean", &BenchmarkStats::Stat::mean)
      .def_readonly("max", &BenchmarkStats::Stat::max)
      .def("__repr__", [](const BenchmarkStats::Stat& s) {
        return fmt::format("BenchmarkStat(min={:.2f}, median={:.2f}, mean={:.2f}, max={:.2f})", s.min, s.median, s.mean,
                           s.max);
      });
  py::class_<BenchmarkStats>(m, "BenchmarkStats", "Per-dispatch timing of DistributedWorker.benchmark (microseconds).")
      .def_readonly("rounds", &BenchmarkStats::rounds, "Timed calls.")
      .def_readonly("warmup", &BenchmarkStats::warmup, "Untimed calls before them.")
      .def_readonly("total", &BenchmarkStats::total, "Submit to completion, as the caller sees it.")
      .def_readonly("host", &BenchmarkStats::host, "Recording and checking the orchestrator on the calling thread.")
      .def_readonly("ranks", &BenchmarkStats::ranks, "Executing the recorded call on the rank processes.")
      .def_readonly("kernels", &BenchmarkStats::kernels, "The slowest rank's time inside its kernels.")
      .def("__repr__", [](const BenchmarkStats& s) {
        return fmt::format(
            "BenchmarkStats(rounds={}, total median {:.2f} us, host {:.2f}, ranks {:.2f}, kernels {:.2f})", s.rounds,
            s.total.median, s.host.median, s.ranks.median, s.kernels.median);
      });
}

void bind_handle(py::module_& m) {
  py::class_<Handle>(m, "RunHandle", "A call started by DistributedWorker.submit. Copies refer to the same call.")
      .def(
          "done", [](const Handle& h) { return detail::call_done(*h.state); },
          "True once the call has finished (successfully or not). Never blocks.")
      .def(
          "wait",
          [](const Handle& h, const py::object& timeout) {
            const double t = timeout_of(timeout);
            py::gil_scoped_release release;
            if (!detail::call_wait(*h.state, t)) return false;
            detail::call_result(*h.state, 0);
            return true;
          },
          py::arg("timeout") = py::none(),
          "Waits up to ``timeout`` seconds (None = forever). True when the call finished successfully, False "
          "while it still runs; a failed call raises its error (the same one result() raises).")
      .def(
          "result",
          [](const Handle& h, const py::object& timeout) {
            const double t = timeout_of(timeout);
            py::gil_scoped_release release;
            detail::call_result(*h.state, t);
          },
          py::arg("timeout") = py::none(),
          "Waits for the call (at most ``timeout`` seconds; None = forever) and raises its error, e.g. "
          "pld.RankError. Raises pld.Error if it does not finish in time (the call keeps running).");
}

}  // namespace

void bind_worker(py::module_& m) {
  bind_stats(m);
  bind_handle(m);
  py::class_<WorkerOptions>(m, "WorkerOptions", "Options of a DistributedWorker (see pld.DistributedWorker).")
      .def(py::init([](double startup_timeout, bool recovery, bool persistent,
                       std::optional<bool> reset_persistent_windows) {
             return WorkerOptions{startup_timeout, recovery, persistent, reset_persistent_windows};
           }),
           py::arg("startup_timeout") = 0.0, py::arg("recovery") = true, py::arg("persistent") = false,
           py::arg("reset_persistent_windows") = py::none())
      .def_readonly("startup_timeout", &WorkerOptions::startup_timeout)
      .def_readonly("recovery", &WorkerOptions::recovery)
      .def_readonly("persistent", &WorkerOptions::persistent)
      .def_readonly("reset_persistent_windows", &WorkerOptions::reset_persistent_windows);
  py::class_<Worker> worker(m, "_Worker", "The engine of pld.DistributedWorker (use that class).");
  worker
      .def(py::init<const DistributedConfig&, const py::list&, const WorkerOptions&>(), py::arg("config"),
           py::arg("programs"), py::arg("options"))
      .def("submit", &worker_submit, py::arg("program"), py::arg("args"))
      .def("benchmark", &worker_benchmark, py::arg("program"), py::arg("args"), py::arg("rounds"), py::arg("warmup"))
      .def("close", &Worker::close)
      .def("world_size", &Worker::world_size);
  PyObject* run = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(worker.ptr()), &g_run_def);
  if (!run) throw py::error_already_set();
  worker.attr("run") = py::reinterpret_steal<py::object>(run);
  bind_worker_resident(m, worker);
}

}  // namespace pld::python
