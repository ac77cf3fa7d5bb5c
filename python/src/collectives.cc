// The collectives inside kernels: pld.tensor.barrier / allreduce / broadcast / allgather /
// reduce_scatter / all_to_all / all_to_all_v (the composite path: the loop is the runtime's C++,
// only the call crosses into Python, with the GIL released). Options are keyword-only arguments:
// op=, mode=, root=, core_num=, reproducible=. They are fast entry points (fast_call.h): a kernel
// calls them in its loops.
#include "fast_call.h"
#include "host.h"

#include <pld/collectives.hpp>
#include <pld/error.hpp>

#include <fmt/format.h>

#include <optional>

namespace pld::python {

namespace {

const Window& signal_window(py::handle signal, const char* api) {
  const Window& s = window_of(signal, api, "signal");
  if (s.dtype != DType::INT32)
    throw UsageError(fmt::format("{}: signal has dtype {}; a signal is an INT32 window ([nranks] or [nranks, k])", api,
                                 dtype_name(s.dtype)));
  return s;
}

/// A collective's local operand: a rank-local array, or this rank's copy of a window.
struct Input {
  detail::LocalDesc local;
  std::optional<detail::WindowDesc> window;
  const detail::WindowDesc* window_ptr() const { return window ? &*window : nullptr; }
};

Input input_of(py::handle value, const char* api, const char* what) {
  Input in{local_of(value, api, what), std::nullopt};
  if (is_window(value)) in.window = value.cast<const Window&>().desc();
  return in;
}

// ----- the kernel-side collectives: fast entry points (fast_call.h) ------------------------------

constexpr FastSignature kBarrier{"barrier", {"signal"}, 1, 1, 1};
py::object barrier(const CallArgs& a) {
  const Window& s = signal_window(a[0], "barrier");
  without_gil([&] { detail::coll_barrier(s.desc()); });
  return py::reinterpret_borrow<py::object>(a[0]);
}

constexpr FastSignature kAllreduce{
    "allreduce", {"target", "signal", "op", "mode", "core_num", "reproducible"}, 6, 2, 2};
py::object allreduce(const CallArgs& a) {
  const Window& tg = window_of(a[0], "allreduce", "target");
  const Window& s = signal_window(a[1], "allreduce");
  const AllreduceOptions o{a.enum_or(2, ReduceOp::Sum), a.enum_or(3, AllreduceMode::Auto), a.int_or(4, 1),
                           a.bool_or(5, false)};
  without_gil([&] { detail::coll_allreduce(tg.desc(), s.desc(), o); });
  return py::reinterpret_borrow<py::object>(a[0]);
}

constexpr FastSignature kBroadcast{"broadcast", {"target", "signal", "root", "core_num"}, 4, 2, 2};
py::object broadcast(const CallArgs& a) {
  const Window& tg = window_of(a[0], "broadcast", "target");
  const Window& s = signal_window(a[1], "broadcast");
  const int root = a.int_or(2, 0), core_num = a.int_or(3, 1);
  without_gil([&] { detail::coll_broadcast(tg.desc(), s.desc(), root, core_num); });
  return py::reinterpret_borrow<py::object>(a[0]);
}

// allgather(local, target, signal) and all_to_all(input, target, signal): a rank-local operand (or
// this rank's window copy) into a [P, SIZE] target.
template <const FastSignature& Sig, auto Coll>
py::object local_into_rows(const CallArgs& a) {
  const Input in = input_of(a[0], Sig.api, Sig.names[0]);
  const Window& tg = window_of(a[1], Sig.api, "target");
  const Window& s = signal_window(a[2], Sig.api);
  const int core_num = a.int_or(3, 1);
  without_gil([&] { Coll(in.local, in.window_ptr(), tg.desc(), s.desc(), core_num); });
  return py::reinterpret_borrow<py::object>(a[1]);
}

constexpr FastSignature kAllgather{"allgather", {"local", "target", "signal", "core_num"}, 4, 3, 3};
constexpr FastSignature kAllToAll{"all_to_all", {"input", "target", "signal", "core_num"}, 4, 3, 3};

constexpr FastSignature kReduceScatter{"reduce_scatter", {"target", "signal", "op", "core_num"}, 4, 2, 2};
py::object reduce_scatter(const CallArgs& a) {
  const Window& tg = window_of(a[0], "reduce_scatter", "target");
  const Window& s = signal_window(a[1], "reduce_scatter");
  const ReduceOp op = a.enum_or(2, ReduceOp::Sum);
  const int core_num = a.int_or(3, 1);
  without_gil([&] { detail::coll_reduce_scatter(tg.desc(), s.desc(), op, core_num); });
  return py::reinterpret_borrow<py::object>(a[0]);
}

constexpr FastSignature kAllToAllV{
    "all_to_all_v", {"input", "target", "signal", "send_counts", "recv_counts", "core_num"}, 6, 5, 5};
py::object all_to_all_v(const CallArgs& a) {
  detail::check_core_num_option("all_to_all_v", a.int_or(5, 1));
  const Input in = input_of(a[0], "all_to_all_v", "input");
  const Window& tg = window_of(a[1], "all_to_all_v", "target");
  const Window& s = signal_window(a[2], "all_to_all_v");
  const detail::LocalDesc sc = local_of(a[3], "all_to_all_v", "send_counts");
  const detail::WindowDesc rc = window_of(a[4], "all_to_all_v", "recv_counts").desc();
  without_gil([&] { detail::coll_all_to_all_v(in.local, in.window_ptr(), tg.desc(), s.desc(), sc, rc); });
  return py::reinterpret_borrow<py::object>(a[1]);
}

PyMethodDef g_kernel_collectives[] = {
    fast_method<kBarrier, barrier>(
        "barrier(signal)\n--\n\nEvery rank of the signal's domain waits until all have arrived; returns signal."),
    fast_method<kAllreduce, allreduce>(
        "allreduce(target, signal, *, op=pld.ReduceOp.Sum, mode=pld.AllreduceMode.Auto, core_num=1, reproducible=False)"
        "\n\nIn place: every rank's target becomes op over every rank's target; returns target."),
    fast_method<kBroadcast, broadcast>("broadcast(target, signal, *, root=0, core_num=1)\n--\n\nEvery rank's "
                                       "target becomes rank root's; returns target."),
    fast_method<kAllgather, local_into_rows<kAllgather, &detail::coll_allgather>>(
        "allgather(local, target, signal, *, core_num=1)\n--\n\ntarget is [P, SIZE]; row s of every rank's target "
        "becomes rank s's local; returns target."),
    fast_method<kReduceScatter, reduce_scatter>(
        "reduce_scatter(target, signal, *, op=pld.ReduceOp.Sum, core_num=1)\n\ntarget is [P, SIZE]; row r of rank "
        "r's target becomes op over ranks of their row r; returns target."),
    fast_method<kAllToAll, local_into_rows<kAllToAll, &detail::coll_all_to_all>>(
        "all_to_all(input, target, signal, *, core_num=1)\n--\n\ninput and target are [P, SIZE]; row s of rank r's "
        "target becomes row r of rank s's input; returns target."),
    fast_method<kAllToAllV, all_to_all_v>(
        "all_to_all_v(input, target, signal, send_counts, recv_counts, *, core_num=1)\n--\n\nVariable all_to_all: "
        "send_counts [P] rows to each peer, recv_counts (a window) receives the counts."),
};

}  // namespace

void bind_collectives(py::module_& m) {
  auto t = py::reinterpret_borrow<py::module_>(m.attr("_tensor"));
  add_fast_functions(t, g_kernel_collectives, std::size(g_kernel_collectives));
}

}  // namespace pld::python
