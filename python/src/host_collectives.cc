// The host builtin collectives on pld.Host: each records one builtin dispatch per member of the
// operands' comm domain, checked on the host before any rank starts. Without a signal pld uses
// its own per-domain signal window.
#include "host.h"

#include <pld/collectives.hpp>
#include <pld/error.hpp>

#include <fmt/format.h>

#include <optional>

namespace pld::python {

namespace {

using Int32Window = DistributedTensor<std::int32_t>;

std::optional<Int32Window> signal_opt(py::handle signal, const char* api) {
  if (signal.is_none()) return std::nullopt;
  const Window& s = window_of(signal, api, "signal");
  if (s.dtype != DType::INT32)
    throw UsageError(fmt::format("{}: signal has dtype {}; a signal is an INT32 window ([nranks] or [nranks, k])", api,
                                 dtype_name(s.dtype)));
  return s.typed<std::int32_t>();
}

/// Calls `f(typed target, typed other operands...)` for the target's element type.
template <class F>
void with_type(const Window& target, F&& f) {
  visit_dtype(target.dtype, [&](auto tag) { f(tag); });
}

const Window& operand(py::handle v, const char* api, const char* what, const Window* like = nullptr) {
  const Window& w = window_of(v, api, what);
  if (like && w.dtype != like->dtype)
    throw UsageError(fmt::format("{}: {} has dtype {} but target has {}; give both the same dtype", api, what,
                                 dtype_name(w.dtype), dtype_name(like->dtype)));
  return w;
}

void bind_host_reductions(py::class_<PyHost>& host) {
  host.def(
      "barrier",
      [](const PyHost& h, py::handle signal, py::object domain) {
        Host& host = h.get("Host.barrier");
        if (py::isinstance<PyDomain>(signal)) {  // h.barrier(d): the domain given by position
          if (!domain.is_none())
            throw UsageError("Host.barrier: a domain given twice (by position and as domain=); give it once");
          return host.barrier(signal.cast<const PyDomain&>().domain);
        }
        if (auto s = signal_opt(signal, "Host.barrier")) return host.barrier(*s);
        if (!domain.is_none()) return host.barrier(domain.cast<const PyDomain&>().domain);
        host.barrier();
      },
      py::arg("signal") = py::none(), py::kw_only(), py::arg("domain") = py::none(),
      "Barrier of the signal's (or domain's, or the world's) members: h.barrier(), h.barrier(signal), "
      "h.barrier(domain) or h.barrier(domain=domain).");
  host.def(
      "allreduce",
      [](const PyHost& h, py::handle target, py::handle signal, py::handle op_in, py::handle mode_in, int core_num,
         bool reproducible) {
        const AllreduceMode mode = enum_of<AllreduceMode>(mode_in, "Host.allreduce", "mode");
        const ReduceOp op = enum_of<ReduceOp>(op_in, "Host.allreduce", "op");
        Host& host = h.get("Host.allreduce");
        const Window& t = operand(target, "Host.allreduce", "target");
        const AllreduceOptions o{op, mode, core_num, reproducible};
        const auto s = signal_opt(signal, "Host.allreduce");
        with_type(t, [&](auto tag) {
          using T = decltype(tag);
          s ? host.allreduce(t.typed<T>(), *s, o) : host.allreduce(t.typed<T>(), o);
        });
      },
      py::arg("target"), py::arg("signal") = py::none(), py::kw_only(), py::arg("op") = ReduceOp::Sum,
      py::arg("mode") = AllreduceMode::Auto, py::arg("core_num") = 1, py::arg("reproducible") = false,
      "tensor.allreduce on every member of target's domain (pld's own signal when none is given).");
  host.def(
      "broadcast",
      [](const PyHost& h, py::handle target, py::handle signal, int root, int core_num) {
        Host& host = h.get("Host.broadcast");
        const Window& t = operand(target, "Host.broadcast", "target");
        const BroadcastOptions o{root, core_num};
        const auto s = signal_opt(signal, "Host.broadcast");
        with_type(t, [&](auto tag) {
          using T = decltype(tag);
          s ? host.broadcast(t.typed<T>(), *s, o) : host.broadcast(t.typed<T>(), o);
        });
      },
      py::arg("target"), py::arg("signal") = py::none(), py::kw_only(), py::arg("root") = 0, py::arg("core_num") = 1,
      "tensor.broadcast on every member of target's domain (pld's own signal when none is given).");
  host.def(
      "reduce_scatter",
      [](const PyHost& h, py::handle target, py::handle signal, py::handle op_in, int core_num) {
        const ReduceOp op = enum_of<ReduceOp>(op_in, "Host.reduce_scatter", "op");
        Host& host = h.get("Host.reduce_scatter");
        const Window& t = operand(target, "Host.reduce_scatter", "target");
        const ReduceScatterOptions o{op, core_num};
        const auto s = signal_opt(signal, "Host.reduce_scatter");
        with_type(t, [&](auto tag) {
          using T = decltype(tag);
          s ? host.reduce_scatter(t.typed<T>(), *s, o) : host.reduce_scatter(t.typed<T>(), o);
        });
      },
      py::arg("target"), py::arg("signal") = py::none(), py::kw_only(), py::arg("op") = ReduceOp::Sum,
      py::arg("core_num") = 1, "tensor.reduce_scatter on every member of target's domain.");
}

/// Binds a host exchange with an input operand besides the target (allgather, all_to_all):
/// `call(host, typed input, typed target, signal or nullptr, options)` for the target's dtype.
template <class Options, class Call>
void def_host_exchange(py::class_<PyHost>& host, const char* name, const char* api, const char* input_name, Call call,
                       const char* doc) {
  host.def(
      name,
      [api, input_name, call](const PyHost& h, py::handle input, py::handle target, py::handle signal, int core_num) {
        Host& hst = h.get(api);
        const Window& t = operand(target, api, "target");
        const Window& in = operand(input, api, input_name, &t);
        const Options o{core_num};
        const auto s = signal_opt(signal, api);
        with_type(t, [&](auto tag) {
          using T = decltype(tag);
          call(hst, in.typed<T>(), t.typed<T>(), s ? &*s : nullptr, o);
        });
      },
      py::arg(input_name), py::arg("target"), py::arg("signal") = py::none(), py::kw_only(), py::arg("core_num") = 1,
      doc);
}

/// The host forms of allgather, all_to_all and all_to_all_v (an input operand besides the target).
void bind_host_exchanges(py::class_<PyHost>& host) {
  def_host_exchange<AllgatherOptions>(
      host, "allgather", "Host.allgather", "local",
      [](Host& h, auto in, auto t, const Int32Window* s, const AllgatherOptions& o) {
        s ? h.allgather(in, t, *s, o) : h.allgather(in, t, o);
      },
      "tensor.allgather on every member of target's domain (local is a window view here).");
  def_host_exchange<AllToAllOptions>(
      host, "all_to_all", "Host.all_to_all", "input",
      [](Host& h, auto in, auto t, const Int32Window* s, const AllToAllOptions& o) {
        s ? h.all_to_all(in, t, *s, o) : h.all_to_all(in, t, o);
      },
      "tensor.all_to_all on every member of target's domain (input is a window view here).");
  host.def(
      "all_to_all_v",
      [](const PyHost& h, py::handle input, py::handle target, py::handle signal, py::handle send_counts,
         py::handle recv_counts, int core_num) {
        Host& host = h.get("Host.all_to_all_v");
        const Window& t = operand(target, "Host.all_to_all_v", "target");
        const Window& in = operand(input, "Host.all_to_all_v", "input", &t);
        const auto sc = signal_opt(send_counts, "Host.all_to_all_v");
        const auto rc = signal_opt(recv_counts, "Host.all_to_all_v");
        if (!sc || !rc)
          throw UsageError(
              "Host.all_to_all_v: send_counts and recv_counts are required; pass INT32 windows by keyword");
        const AllToAllVCounts counts{*sc, *rc};
        const AllToAllVOptions o{core_num};
        const auto s = signal_opt(signal, "Host.all_to_all_v");
        with_type(t, [&](auto tag) {
          using T = decltype(tag);
          s ? host.all_to_all_v(in.typed<T>(), t.typed<T>(), *s, counts, o)
            : host.all_to_all_v(in.typed<T>(), t.typed<T>(), counts, o);
        });
      },
      py::arg("input"), py::arg("target"), py::arg("signal") = py::none(), py::kw_only(),
      py::arg("send_counts") = py::none(), py::arg("recv_counts") = py::none(), py::arg("core_num") = 1,
      "tensor.all_to_all_v on every member of target's domain; send_counts and recv_counts are INT32 windows.");
}

}  // namespace

void bind_host_collectives(py::class_<PyHost>& host) {
  bind_host_reductions(host);
  bind_host_exchanges(host);
}

}  // namespace pld::python
