// The collectives: pld.tensor.barrier / allreduce / broadcast / allgather / reduce_scatter /
// all_to_all / all_to_all_v inside kernels (the composite path: the loop is the runtime's C++,
// only the call crosses into Python, with the GIL released), and the host builtin forms on
// pld.Host. Options are keyword arguments: op=, mode=, root=, core_num=, reproducible=.
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

void bind_kernel_collectives(py::module_& t) {
  t.def(
      "barrier",
      [](py::handle signal) {
        const Window& s = signal_window(signal, "barrier");
        without_gil([&] { detail::coll_barrier(s.desc()); });
        return signal;
      },
      py::arg("signal"), "Every rank of the signal's domain waits until all have arrived; returns signal.");
  t.def(
      "allreduce",
      [](py::handle target, py::handle signal, py::handle op_in, py::handle mode_in, int core_num, bool reproducible) {
        const AllreduceMode mode = enum_of<AllreduceMode>(mode_in, "allreduce", "mode");
        const ReduceOp op = enum_of<ReduceOp>(op_in, "allreduce", "op");
        const Window& tg = window_of(target, "allreduce", "target");
        const Window& s = signal_window(signal, "allreduce");
        const AllreduceOptions o{op, mode, core_num, reproducible};
        without_gil([&] { detail::coll_allreduce(tg.desc(), s.desc(), o); });
        return target;
      },
      py::arg("target"), py::arg("signal"), py::kw_only(), py::arg("op") = ReduceOp::Sum,
      py::arg("mode") = AllreduceMode::Auto, py::arg("core_num") = 1, py::arg("reproducible") = false,
      "In place: every rank's target becomes op over every rank's target; returns target.");
  t.def(
      "broadcast",
      [](py::handle target, py::handle signal, int root, int core_num) {
        const Window& tg = window_of(target, "broadcast", "target");
        const Window& s = signal_window(signal, "broadcast");
        without_gil([&] { detail::coll_broadcast(tg.desc(), s.desc(), root, core_num); });
        return target;
      },
      py::arg("target"), py::arg("signal"), py::kw_only(), py::arg("root") = 0, py::arg("core_num") = 1,
      "Every rank's target becomes rank root's; returns target.");
}

/// allgather, reduce_scatter, all_to_all and all_to_all_v (the collectives over [P, SIZE] rows).
void bind_kernel_row_collectives(py::module_& t) {
  t.def(
      "allgather",
      [](py::handle local, py::handle target, py::handle signal, int core_num) {
        const Input in = input_of(local, "allgather", "local");
        const Window& tg = window_of(target, "allgather", "target");
        const Window& s = signal_window(signal, "allgather");
        without_gil([&] { detail::coll_allgather(in.local, in.window_ptr(), tg.desc(), s.desc(), core_num); });
        return target;
      },
      py::arg("local"), py::arg("target"), py::arg("signal"), py::kw_only(), py::arg("core_num") = 1,
      "target is [P, SIZE]; row s of every rank's target becomes rank s's local; returns target.");
  t.def(
      "reduce_scatter",
      [](py::handle target, py::handle signal, py::handle op_in, int core_num) {
        const ReduceOp op = enum_of<ReduceOp>(op_in, "reduce_scatter", "op");
        const Window& tg = window_of(target, "reduce_scatter", "target");
        const Window& s = signal_window(signal, "reduce_scatter");
        without_gil([&] { detail::coll_reduce_scatter(tg.desc(), s.desc(), op, core_num); });
        return target;
      },
      py::arg("target"), py::arg("signal"), py::kw_only(), py::arg("op") = ReduceOp::Sum, py::arg("core_num") = 1,
      "target is [P, SIZE]; row r of rank r's target becomes op over ranks of their row r; returns target.");
  t.def(
      "all_to_all",
      [](py::handle input, py::handle target, py::handle signal, int core_num) {
        const Input in = input_of(input, "all_to_all", "input");
        const Window& tg = window_of(target, "all_to_all", "target");
        const Window& s = signal_window(signal, "all_to_all");
        without_gil([&] { detail::coll_all_to_all(in.local, in.window_ptr(), tg.desc(), s.desc(), core_num); });
        return target;
      },
      py::arg("input"), py::arg("target"), py::arg("signal"), py::kw_only(), py::arg("core_num") = 1,
      "input and target are [P, SIZE]; row s of rank r's target becomes row r of rank s's input; returns target.");
  t.def(
      "all_to_all_v",
      [](py::handle input, py::handle target, py::handle signal, py::handle send_counts, py::handle recv_counts,
         int core_num) {
        detail::check_core_num_option("all_to_all_v", core_num);
        const Input in = input_of(input, "all_to_all_v", "input");
        const Window& tg = window_of(target, "all_to_all_v", "target");
        const Window& s = signal_window(signal, "all_to_all_v");
        const detail::LocalDesc sc = local_of(send_counts, "all_to_all_v", "send_counts");
        const detail::WindowDesc rc = window_of(recv_counts, "all_to_all_v", "recv_counts").desc();
        without_gil([&] { detail::coll_all_to_all_v(in.local, in.window_ptr(), tg.desc(), s.desc(), sc, rc); });
        return target;
      },
      py::arg("input"), py::arg("target"), py::arg("signal"), py::arg("send_counts"), py::arg("recv_counts"),
      py::kw_only(), py::arg("core_num") = 1,
      "Variable all_to_all: send_counts [P] rows to each peer, recv_counts (a window) receives the counts.");
}

}  // namespace

void bind_collectives(py::module_& m) {
  auto t = py::reinterpret_borrow<py::module_>(m.attr("_tensor"));
  bind_kernel_collectives(t);
  bind_kernel_row_collectives(t);
}

}  // namespace pld::python
