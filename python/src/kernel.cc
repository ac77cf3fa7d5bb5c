// Python kernels: the kernel table, recording a dispatch of a Python function, and the trampoline
// that runs it in the rank (identification contract: kernel.h). Also pld.get_comm_ctx, rank and
// nranks.
#include "kernel.h"

#include "errors.h"
#include "host.h"
#include "stdio_streams.h"

#include <pld/comm_domain.hpp>
#include <pld/detail/host.hpp>
#include <pld/detail/kernel.hpp>
#include <pld/error.hpp>

#include <fmt/format.h>

#include <unordered_map>
#include <vector>

namespace pld::python {

namespace {

constexpr std::uint32_t kFrameMagic = 0x504b3031;  // "PK01"

struct KernelEntry {
  py::object fn;
  std::string name;                 // "module:qualname"
  std::vector<std::byte> header{};  // the start of its dispatch frames: magic, id, name
};

// Never destroyed: the table outlives the interpreter's last dispatch, and the ranks exit
// without running destructors.
std::vector<KernelEntry>& kernel_table() {
  static auto* table = new std::vector<KernelEntry>();
  return *table;
}
// Ids by name: a callable equal to a registered one with the same name (a bound method made anew
// by each `obj.method`) reuses its id, so the table grows with distinct kernels only.
std::unordered_multimap<std::string, std::uint64_t>& kernel_ids() {
  static auto* ids = new std::unordered_multimap<std::string, std::uint64_t>();
  return *ids;
}

// Ids by identity: the table holds a reference to every registered function, so its address stays
// its own; a dispatch of a known function skips building the name.
std::unordered_map<const PyObject*, std::uint64_t>& kernel_ids_by_object() {
  static auto* ids = new std::unordered_map<const PyObject*, std::uint64_t>();
  return *ids;
}

std::string attr_or(py::handle fn, const char* attr, const char* fallback) {
  py::object v = py::getattr(fn, attr, py::none());
  return v.is_none() ? fallback : py::str(v).cast<std::string>();
}

/// "module.qualname" for messages.
std::string display_name(const std::string& name) {
  std::string s = name;
  if (const auto colon = s.find(':'); colon != std::string::npos) s[colon] = '.';
  return s;
}

[[noreturn]] void unknown_kernel(const std::string& name, const std::string& why) {
  throw UsageError(
      fmt::format("dispatch: kernel {} is not known in the rank process ({}); define kernels at module "
                  "level, and for a DistributedWorker before it starts",
                  display_name(name), why));
}

// Kernels a rank process found by name (registered in the host after it forked), by id: the
// import path runs once per kernel, not once per dispatch.
std::unordered_map<std::uint64_t, KernelEntry>& resolved_kernels() {
  static auto* cache = new std::unordered_map<std::uint64_t, KernelEntry>();
  return *cache;
}

py::object import_kernel(const std::string& name);

py::object resolve_kernel(std::uint64_t id, const std::string& name) {
  auto& table = kernel_table();
  if (id < table.size() && table[id].name == name) return table[id].fn;
  auto& cache = resolved_kernels();
  if (auto it = cache.find(id); it != cache.end() && it->second.name == name) return it->second.fn;
  py::object fn = import_kernel(name);
  cache[id] = KernelEntry{fn, name};
  return fn;
}

py::object import_kernel(const std::string& name) {
  const auto colon = name.find(':');
  const std::string module = name.substr(0, colon);
  const std::string qualname = name.substr(colon + 1);
  if (qualname.find('<') != std::string::npos) unknown_kernel(name, "a lambda or nested function has no import path");
  try {
    py::object obj = py::module_::import("importlib").attr("import_module")(module);
    std::size_t at = 0;
    for (std::size_t dot; (dot = qualname.find('.', at)) != std::string::npos; at = dot + 1)
      obj = obj.attr(qualname.substr(at, dot - at).c_str());
    return obj.attr(qualname.substr(at).c_str());
  } catch (py::error_already_set& e) {
    unknown_kernel(name, e.what());
  }
}

}  // namespace

namespace {

/// Turns a Python kernel's exception into the C++ exception the runtime reports: a wait deadline
/// and an abort keep their classes (the host's hang report depends on them), anything else is a
/// UsageError carrying the kernel's name, the exception and the rank's traceback.
[[noreturn]] void rethrow_kernel_error(py::error_already_set& e, const std::string& name) {
  if (e.matches(error_class(ErrorKind::WaitTimeout))) throw WaitTimeoutError(py::str(e.value()).cast<std::string>());
  if (e.matches(error_class(ErrorKind::Aborted))) throw AbortedError(py::str(e.value()).cast<std::string>());
  std::string trace;
  try {
    py::object lines = py::module_::import("traceback").attr("format_exception")(e.type(), e.value(), e.trace());
    trace = py::str("").attr("join")(lines).cast<std::string>();
  } catch (py::error_already_set&) {
    trace = std::string(kTracebackMarker) + "\n  (unavailable)\n";
  }
  const std::string type = attr_or(e.type(), "__qualname__", "Exception");
  const std::string module = attr_or(e.type(), "__module__", "builtins");
  throw UsageError(fmt::format("{}{}' raised {}{}: {}\n{}", kKernelMarker, display_name(name),
                               module == "builtins" ? "" : module + ".", type, py::str(e.value()).cast<std::string>(),
                               trace));
}

/// Holds the GIL for the kernel: the rank process released it after fork (run.cc), the mpi
/// backend runs kernels on the host thread with the GIL released by pld.run.
struct GilHold {
  PyGILState_STATE state = PyGILState_Ensure();
  ~GilHold() { PyGILState_Release(state); }
};

/// A forked rank's thread (rank_forked), and whether it holds the GIL between kernels.
PyThreadState* g_rank_thread = nullptr;
bool g_rank_holds_gil = false;

bool only_python_thread(PyThreadState* me) {
  const PyThreadState* head = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(me));
  return head == me && PyThreadState_Next(me) == nullptr;
}

/// Around a kernel in a forked rank: takes the GIL when the rank does not hold it, and keeps it
/// for the next kernel while the rank's thread is the interpreter's only one (no other thread can
/// want it), so a loop of dispatches does not take and drop it per kernel. A kernel that leaves
/// another thread running (threading.Thread) makes the rank drop it, as every kernel did before.
/// Elsewhere (the mpi backend's kernels run on the host thread) it does nothing.
struct RankGil {
  RankGil() {
    if (g_rank_thread && !g_rank_holds_gil) {
      PyEval_RestoreThread(g_rank_thread);
      g_rank_holds_gil = true;
    }
  }
  ~RankGil() {
    if (g_rank_holds_gil && !only_python_thread(g_rank_thread)) {
      PyEval_SaveThread();
      g_rank_holds_gil = false;
    }
  }
};

/// The frame that called the running kernel (in a rank: the host's, inherited at fork), where
/// the race detector's notes stop, and the pld package's directory, whose frames they skip. Both
/// are set by python_kernel and read by python_frames under the GIL.
PyFrameObject* g_kernel_caller = nullptr;
std::string g_package_dir;

/// The race detector's note of an access made from Python: the kernel's innermost frames outside
/// the pld package, outermost first, as a traceback lists them.
bool python_frames(std::string* note) {
  GilHold gil;
  const std::string& package = g_package_dir;
  std::vector<std::string> frames;
  PyFrameObject* f = PyEval_GetFrame();
  Py_XINCREF(f);
  while (f && f != g_kernel_caller && frames.size() < 3) {
    PyCodeObject* code = PyFrame_GetCode(f);
    const py::handle c(reinterpret_cast<PyObject*>(code));
    const std::string file = py::str(c.attr("co_filename")).cast<std::string>();
    if (file.rfind(package, 0) != 0)
      frames.push_back(fmt::format("File \"{}\", line {}, in {}", file, PyFrame_GetLineNumber(f),
                                   py::str(c.attr("co_name")).cast<std::string>()));
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  note->clear();
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) *note += (note->empty() ? "" : "\n") + *it;
  return !note->empty();
}

/// The race detector's view of a Python kernel: its name in reports and its frames as notes.
void race_python_kernel(const std::string& name) {
  detail::race_kernel_name(display_name(name).c_str());
  detail::race_note_source(&python_frames);
  g_kernel_caller = PyEval_GetFrame();
  if (g_package_dir.empty()) {
    const std::string file = py::module_::import("pld").attr("__file__").cast<std::string>();
    g_package_dir = file.substr(0, file.rfind('/') + 1);
  }
}

void python_kernel(void (*)(), detail::ArgReader& reader) {
  const RankGil rank_gil;
  GilHold gil;
  if (reader.value<std::uint32_t>() != kFrameMagic) throw UsageError("dispatch: not a Python kernel frame (internal)");
  const auto id = reader.value<std::uint64_t>();
  const std::string name = read_string(reader);
  if (detail::race_checking()) [[unlikely]]
    race_python_kernel(name);
  try {
    const py::object fn = resolve_kernel(id, name);
    const py::tuple args = decode_args(reader);
    const py::object done = py::reinterpret_steal<py::object>(PyObject_Call(fn.ptr(), args.ptr(), nullptr));
    if (!done) throw py::error_already_set();
    flush_kernel_stdio();
  } catch (py::error_already_set& e) {
    flush_stdio();
    rethrow_kernel_error(e, name);
  }
}

}  // namespace

void rank_forked(PyThreadState* thread) {
  g_rank_thread = thread;
  g_rank_holds_gil = false;
}

std::uint64_t register_kernel(py::handle fn) {
  auto& by_object = kernel_ids_by_object();
  if (const auto known = by_object.find(fn.ptr()); known != by_object.end()) return known->second;
  if (!PyCallable_Check(fn.ptr()))
    throw UsageError(fmt::format("Host.dispatch: kernel {} is not callable; pass a Python function",
                                 py::repr(fn).cast<std::string>()));
  auto& table = kernel_table();
  const std::string name = attr_or(fn, "__module__", "__main__") + ":" + attr_or(fn, "__qualname__", "<unnamed>");
  auto& ids = kernel_ids();
  for (auto [it, end] = ids.equal_range(name); it != end; ++it)
    if (table[it->second].fn.is(fn) || table[it->second].fn.equal(fn)) return it->second;
  detail::ArgWriter frame;
  frame.value(kFrameMagic);
  frame.value(static_cast<std::uint64_t>(table.size()));
  frame.value(static_cast<std::uint32_t>(name.size()));
  write_bytes(frame, name.data(), name.size());
  table.push_back({py::reinterpret_borrow<py::object>(fn), name, std::move(frame.bytes())});
  ids.emplace(name, table.size() - 1);
  by_object.emplace(fn.ptr(), table.size() - 1);
  return table.size() - 1;
}

void record_python_dispatch(Host& host, int rank, py::handle kernel, PyObject* const* args, std::size_t n) {
  const std::vector<std::byte>& header = kernel_table()[register_kernel(kernel)].header;
  detail::ArgWriter writer;
  writer.bytes().reserve(header.size() + 32 + 16 * n);  // the header and a few scalars: one allocation
  writer.bytes().assign(header.begin(), header.end());
  encode_args(writer, args, n);
  detail::record_encoded_dispatch(host, rank, &python_kernel, reinterpret_cast<void (*)()>(&python_kernel), writer);
}

void bind_kernel(py::module_& m) {
  py::class_<CommCtx>(m, "CommCtx", "A rank's view of a window's comm domain (pld.get_comm_ctx(dt)).")
      .def("rank", &CommCtx::rank, "Domain-local rank of the calling process.")
      .def("nranks", &CommCtx::nranks, "Number of ranks in the domain.")
      .def("world_rank", &CommCtx::world_rank, py::arg("peer"), "World rank of domain-local rank peer.");
  m.def(
      "get_comm_ctx",
      [](py::handle dt) { return detail::comm_ctx("get_comm_ctx", window_of(dt, "get_comm_ctx", "dt").state); },
      py::arg("dt"), "The comm context of the domain dt's window belongs to (inside a kernel).");
  m.def(
      "rank", [](const CommCtx& ctx) { return ctx.rank(); }, py::arg("ctx"), "Domain-local rank of the caller.");
  m.def(
      "nranks", [](const CommCtx& ctx) { return ctx.nranks(); }, py::arg("ctx"), "Number of ranks in the domain.");
  m.def(
      "register_kernel", [](py::handle fn) { return register_kernel(fn); }, py::arg("fn"),
      "Registers fn in this process's kernel table before rank processes fork (a DistributedWorker does this for "
      "its programs' kernels); returns its id.");
}

}  // namespace pld::python
