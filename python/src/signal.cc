// pld.system: notify / wait, the signal reads and multi-cell waits, quiet / fence, and the
// atomics on window cells (int32, int64, uint32, uint64). Calls that may block release the GIL; a
// wait whose condition already holds, and notify and the atomics on shared memory, keep it (a
// release and re-acquire of the GIL costs more than the call itself).
#include "bindings.h"
#include "fast_call.h"

#include <pld/atomic.hpp>
#include <pld/error.hpp>
#include <pld/nbi.hpp>
#include <pld/signal.hpp>

#include <fmt/format.h>

#include <limits>
#include <vector>

namespace pld::python {

namespace {

const detail::WindowDesc signal_of(py::handle signal, const char* api) {
  return window_of(signal, api, "signal").desc();
}

std::vector<Dims> cells_of(py::handle cells, const char* api) {
  if (!py::isinstance<py::list>(cells) && !py::isinstance<py::tuple>(cells))
    throw UsageError(fmt::format("{}: cells {} is not a list of offsets; pass e.g. [(0, 0), (1, 0)]", api,
                                 py::repr(cells).cast<std::string>()));
  std::vector<Dims> out;
  for (py::handle c : cells) out.push_back(dims_of(c, api, "cell"));
  return out;
}

/// Runs one multi-cell wait; `expected` is an int (every cell) or a list (one per cell).
std::size_t wait_cells(detail::CellWait which, const char* api, py::handle signal, py::handle cells,
                       py::handle expected, py::handle cmp_in, std::vector<std::size_t>* satisfied) {
  const WaitCmp cmp = enum_of<WaitCmp>(cmp_in, api, "cmp");
  const detail::WindowDesc s = signal_of(signal, api);
  const std::vector<Dims> c = cells_of(cells, api);
  const bool per_cell = !PyIndex_Check(expected.ptr());
  std::vector<std::int32_t> values;
  if (per_cell)
    for (py::handle v : expected) values.push_back(v.cast<std::int32_t>());
  else
    values.push_back(expected.cast<std::int32_t>());
  return without_gil([&] { return detail::wait_cells(which, s, c, values, per_cell, cmp, satisfied); });
}

// ----- atomics -------------------------------------------------------------------------------

/// The bits of `value` for a cell of `dtype`; UsageError when it does not fit.
std::uint64_t amo_operand(const char* api, DType dtype, py::handle value) {
  if (!PyIndex_Check(value.ptr()) || py::isinstance<py::bool_>(value))
    throw UsageError(fmt::format("{}: value {} is not an integer; atomics take int values", api,
                                 py::repr(value).cast<std::string>()));
  const py::int_ v = py::reinterpret_steal<py::int_>(PyNumber_Index(value.ptr()));
  auto fits = [&](auto tag) {
    using T = decltype(tag);
    const py::int_ lo(std::numeric_limits<T>::min()), hi(std::numeric_limits<T>::max());
    if (v < lo || v > hi)
      throw UsageError(fmt::format("{}: value {} does not fit a {} cell; pass a value in [{}, {}]", api,
                                   py::repr(py::handle(v)).cast<std::string>(), dtype_name(dtype),
                                   std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
    return detail::amo_bits(v.cast<T>());
  };
  switch (dtype) {
    case DType::INT32: return fits(std::int32_t{});
    case DType::INT64: return fits(std::int64_t{});
    case DType::UINT32: return fits(std::uint32_t{});
    case DType::UINT64: return fits(std::uint64_t{});
    default: return 0;  // the runtime refuses the dtype with its own message
  }
}

py::int_ amo_result(DType dtype, std::uint64_t bits) {
  switch (dtype) {
    case DType::INT32: return py::int_(detail::amo_value<std::int32_t>(bits));
    case DType::INT64: return py::int_(detail::amo_value<std::int64_t>(bits));
    case DType::UINT32: return py::int_(detail::amo_value<std::uint32_t>(bits));
    default: return py::int_(bits);
  }
}

py::int_ amo(const char* api, detail::AmoOp op, py::handle t, int peer, py::handle offsets, py::handle operand,
             py::handle compare) {
  const detail::WindowDesc cell = window_of(t, api, "t").desc();
  const Dims off = dims_of(offsets, api, "offsets");
  const std::uint64_t a = operand.is_none() ? 0 : amo_operand(api, cell.dtype, operand);
  const std::uint64_t c = compare.is_none() ? 0 : amo_operand(api, cell.dtype, compare);
  const detail::AmoCall call{api, cell.state, &cell.ref, &cell.shape, &off, peer, cell.dtype, op};
  return amo_result(cell.dtype, quick_or_without_gil([&] { return detail::atomic(call, a, c); }));
}

void bind_atomics(py::module_& s) {
  using detail::AmoOp;
  struct Def {
    const char* name;
    AmoOp op;
    int operands;  // 0: none, 1: value, 2: expected and desired
    bool fetch;
    const char* doc;
  };
  static const Def defs[] = {
      {"atomic_fetch", AmoOp::Fetch, 0, true, "The cell's value, read atomically."},
      {"atomic_fetch_add", AmoOp::Add, 1, true, "Adds value; returns the old value."},
      {"atomic_fetch_inc", AmoOp::Add, -1, true, "Adds 1; returns the old value."},
      {"atomic_swap", AmoOp::Swap, 1, true, "Stores value; returns the old value."},
      {"atomic_compare_swap", AmoOp::CompareSwap, 2, true,
       "Stores desired if the cell holds expected; returns the old value."},
      {"atomic_fetch_and", AmoOp::And, 1, true, "Bitwise and; returns the old value."},
      {"atomic_fetch_or", AmoOp::Or, 1, true, "Bitwise or; returns the old value."},
      {"atomic_fetch_xor", AmoOp::Xor, 1, true, "Bitwise xor; returns the old value."},
      {"atomic_set", AmoOp::Set, 1, false, "Stores value."},
      {"atomic_add", AmoOp::Add, 1, false, "Adds value."},
      {"atomic_inc", AmoOp::Add, -1, false, "Adds 1."},
      {"atomic_and", AmoOp::And, 1, false, "Bitwise and."},
      {"atomic_or", AmoOp::Or, 1, false, "Bitwise or."},
      {"atomic_xor", AmoOp::Xor, 1, false, "Bitwise xor."},
  };
  for (const Def& d : defs) {
    const std::string doc = std::string(d.doc) + " On rank peer's cell t[offsets] (int32/int64/uint32/uint64).";
    auto ret = [fetch = d.fetch](py::int_ v) -> py::object { return fetch ? py::object(v) : py::none(); };
    if (d.operands == 2)
      s.def(
          d.name,
          [d, ret](py::handle t, int peer, py::handle off, py::handle expected, py::handle desired) {
            return ret(amo(d.name, d.op, t, peer, off, desired, expected));
          },
          py::arg("t"), py::arg("peer"), py::arg("offsets"), py::arg("expected"), py::arg("desired"), doc.c_str());
    else if (d.operands == 1)
      s.def(
          d.name,
          [d, ret](py::handle t, int peer, py::handle off, py::handle value) {
            return ret(amo(d.name, d.op, t, peer, off, value, py::none()));
          },
          py::arg("t"), py::arg("peer"), py::arg("offsets"), py::arg("value"), doc.c_str());
    else
      s.def(
          d.name,
          [d, ret](py::handle t, int peer, py::handle off) {
            return ret(
                amo(d.name, d.op, t, peer, off, d.operands < 0 ? py::int_(1) : py::object(py::none()), py::none()));
          },
          py::arg("t"), py::arg("peer"), py::arg("offsets"), doc.c_str());
  }
}

// ----- notify, wait and the single-cell reads: fast entry points (fast_call.h) ------------------

constexpr FastSignature kNotify{"notify", {"signal", "peer", "offsets", "value", "op"}, 5, 5, 5};
py::object notify(const CallArgs& a) {
  const NotifyOp op = a.enum_or(4, NotifyOp::Set);
  const detail::WindowDesc sig = signal_of(a[0], "notify");
  const Dims off = dims_of(a[2], "notify", "offsets");
  const int peer = a.integer(1), value = a.integer(3);
  quick_or_without_gil([&] { detail::notify(sig, peer, off, value, op); });
  return py::none();
}

constexpr FastSignature kWait{"wait", {"signal", "offsets", "expected", "cmp"}, 4, 4, 4};
py::object wait(const CallArgs& a) {
  const WaitCmp cmp = a.enum_or(3, WaitCmp::Eq);
  const detail::WindowDesc sig = signal_of(a[0], "wait");
  const Dims off = dims_of(a[1], "wait", "offsets");
  const int expected = a.integer(2);
  // A condition that holds already returns at once: wait (its checks and records included) keeps
  // the GIL then. Bad input fails in wait, under wait's name.
  bool ready = false;
  try {
    ready = detail::signal_test(sig, off, expected, cmp);
  } catch (const Error&) {
  }
  if (ready)
    detail::wait(sig, off, expected, cmp);
  else
    without_gil([&] { detail::wait(sig, off, expected, cmp); });
  return py::none();
}

constexpr FastSignature kSignalFetch{"signal_fetch", {"signal", "offsets"}, 2, 2, 2};
py::object signal_fetch(const CallArgs& a) {
  return py::int_(detail::signal_fetch(signal_of(a[0], "signal_fetch"), dims_of(a[1], "signal_fetch", "offsets")));
}

constexpr FastSignature kTest{"test", {"signal", "offsets", "expected", "cmp"}, 4, 4, 4};
py::object test(const CallArgs& a) {
  const WaitCmp cmp = a.enum_or(3, WaitCmp::Eq);
  const bool holds = detail::signal_test(signal_of(a[0], "test"), dims_of(a[1], "test", "offsets"), a.integer(2), cmp);
  return py::bool_(holds);
}

PyMethodDef g_signal_calls[] = {
    fast_method<kNotify, notify>("notify(signal, peer, offsets, value, op)\n--\n\nOn rank peer's copy of signal at "
                                 "offsets: Set stores value, AtomicAdd adds it. A release."),
    fast_method<kWait, wait>("wait(signal, offsets, expected, cmp)\n--\n\nBlocks until the local signal[offsets] "
                             "compares cmp against expected. An acquire; fails at the deadline."),
    fast_method<kSignalFetch, signal_fetch>(
        "signal_fetch(signal, offsets)\n--\n\nThe local cell's value (an acquire)."),
    fast_method<kTest, test>("test(signal, offsets, expected, cmp)\n--\n\nWhether the local cell compares cmp "
                             "against expected now; never blocks."),
};

}  // namespace

void bind_signal(py::module_& m) {
  auto s = m.def_submodule("_system", "pld.system's C++ half");
  add_fast_functions(s, g_signal_calls, std::size(g_signal_calls));
  s.def(
      "wait_until_any",
      [](py::handle signal, py::handle cells, py::handle expected, py::handle cmp) {
        return wait_cells(detail::CellWait::Any, "wait_until_any", signal, cells, expected, cmp, nullptr);
      },
      py::arg("signal"), py::arg("cells"), py::arg("expected"), py::arg("cmp"),
      "Blocks until one of cells is satisfied; returns its index (fair).");
  s.def(
      "wait_until_all",
      [](py::handle signal, py::handle cells, py::handle expected, py::handle cmp) {
        wait_cells(detail::CellWait::All, "wait_until_all", signal, cells, expected, cmp, nullptr);
      },
      py::arg("signal"), py::arg("cells"), py::arg("expected"), py::arg("cmp"),
      "Blocks until every cell has been satisfied at some poll.");
  s.def(
      "wait_until_some",
      [](py::handle signal, py::handle cells, py::handle expected, py::handle cmp) {
        std::vector<std::size_t> out;
        wait_cells(detail::CellWait::Some, "wait_until_some", signal, cells, expected, cmp, &out);
        return out;
      },
      py::arg("signal"), py::arg("cells"), py::arg("expected"), py::arg("cmp"),
      "Blocks until at least one cell is satisfied; returns every satisfied index, ascending.");
  s.def(
      "quiet", [] { without_gil([] { detail::quiet(); }); }, "Completes every outstanding transfer of this rank.");
  s.def(
      "fence", [] { detail::fence(); }, "Orders this rank's earlier puts to each peer before its later ones.");
  bind_atomics(s);
}

}  // namespace pld::python
