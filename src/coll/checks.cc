#include "coll/checks.h"

#include "rank/runtime.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <string>

namespace pld::detail {

namespace {

std::string name_of(const WindowDesc& w) {
  return w.state ? w.state->buffer_name(w.ref.buffer) : std::string("?");
}

void check_same_dtype(const char* api, DType a, DType b) {
  if (a != b)
    throw UsageError(fmt::format("{}: input dtype {} must match target dtype {}", api, dtype_name(a), dtype_name(b)));
}

}  // namespace

void coll_domain_failed(const char* api, const WindowDesc& signal, const WindowDesc* target, const char* signal_name) {
  if (!signal.state || (target && !target->state)) {
    RankRuntime::get(api);
    throw UsageError(
        fmt::format("{}: the window operands are not bound to a comm domain; pass window views "
                    "created by Host::window<T>() through Host::dispatch",
                    api));
  }
  throw UsageError(fmt::format(
      "{}: {} '{}' belongs to comm domain {} but target '{}' to comm domain {}; use a "
      "{} allocated in the target's domain",
      api, signal_name, name_of(signal), signal.state->label, name_of(*target), target->state->label, signal_name));
}

void check_reduce_op(const char* api, ReduceOp op) {
  if (op != ReduceOp::Sum && op != ReduceOp::Max && op != ReduceOp::Min && op != ReduceOp::Prod)
    throw UsageError(fmt::format("{}: op {} must be ReduceOp::Sum, Max, Min or Prod", api, static_cast<int>(op)));
}

void check_distinct_failed(const char* api, const char* a_name, const WindowDesc& a, const char* b_name) {
  throw UsageError(
      fmt::format("{}: {} and {} are views of the same window buffer '{}'; they must be different "
                  "buffers",
                  api, a_name, b_name, name_of(a)));
}

void check_rows(const char* api, const char* what, const WindowDesc& w, int nranks) {
  if (w.shape.size() != 2 || w.shape[0] != nranks)
    throw UsageError(fmt::format("{}: {} '{}' has shape {} but must be [{}, SIZE] (one row per rank of comm domain {})",
                                 api, what, name_of(w), w.shape.str(), nranks,
                                 w.state ? w.state->label : std::string("?")));
}

void check_core_num_failed(const char* api, int core_num) {
  throw UsageError(fmt::format("{}: core_num {} must be in [1, {}]", api, core_num, kMaxCoreNum));
}

void signal_lane_stride_failed(const char* api, const WindowDesc& signal, int nranks, int core_num) {
  throw UsageError(
      fmt::format("{}: signal '{}' has shape {} but this collective over {} ranks with core_num {} "
                  "needs an INT32 signal of shape [{}, {}]{} (one row per rank, one column per "
                  "lane, wider is fine; [{}, {}] puts every cell on its own cache line)",
                  api, name_of(signal), signal.shape.str(), nranks, core_num, nranks, core_num,
                  core_num == 1 ? fmt::format(" or [{}]", nranks) : std::string(), nranks, 16 * core_num));
}

void check_barrier(const WindowDesc& signal) {
  const DomainState& d = coll_domain("barrier", signal, nullptr);
  signal_lane_stride("barrier", signal, d.nranks(), 1);
}

int check_allreduce(const WindowDesc& target, const WindowDesc& signal, const AllreduceOptions& options) {
  const char* api = "allreduce";
  const DomainState& d = coll_domain(api, signal, &target);
  check_reduce_op(api, options.op);
  if (options.mode != AllreduceMode::Auto && options.mode != AllreduceMode::Mesh &&
      options.mode != AllreduceMode::Ring && options.mode != AllreduceMode::TwoShot)
    throw UsageError(fmt::format("allreduce: mode {} must be AllreduceMode::Auto, Mesh, Ring or TwoShot",
                                 static_cast<int>(options.mode)));
  check_distinct(api, "target", target, "signal", signal);
  return signal_lane_stride(api, signal, d.nranks(), options.core_num);
}

void broadcast_root_failed(const WindowDesc& signal, int root) {
  const DomainState& d = *signal.state;
  throw UsageError(
      fmt::format("broadcast: root {} out of range [0, {}) of comm domain {}; the root is a "
                  "domain-local rank",
                  root, d.nranks(), d.label));
}

int check_reduce_scatter(const WindowDesc& target, const WindowDesc& signal, ReduceOp op, int core_num) {
  const char* api = "reduce_scatter";
  const DomainState& d = coll_domain(api, signal, &target);
  check_reduce_op(api, op);
  check_distinct(api, "target", target, "signal", signal);
  check_rows(api, "target", target, d.nranks());
  return signal_lane_stride(api, signal, d.nranks(), core_num);
}

int check_allgather(const LocalDesc& local, const WindowDesc* local_window, const WindowDesc& target,
                    const WindowDesc& signal, int core_num) {
  const char* api = "allgather";
  const DomainState& d = coll_domain(api, signal, &target);
  check_distinct(api, "target", target, "signal", signal);
  if (local_window) check_distinct(api, "local_data", *local_window, "target", target);
  check_rows(api, "target", target, d.nranks());
  check_same_dtype(api, local.dtype, target.dtype);
  const Index size = target.shape[1];
  const bool shape_ok = (local.shape.size() == 1 && local.shape[0] == size) ||
                        (local.shape.size() == 2 && local.shape[0] == 1 && local.shape[1] == size);
  if (!shape_ok)
    throw UsageError(
        fmt::format("allgather: local_data has shape {} but target '{}' is {}; local_data must be [1, {}] "
                    "or [{}]",
                    local.shape.str(), name_of(target), target.shape.str(), size, size));
  return signal_lane_stride(api, signal, d.nranks(), core_num);
}

int check_all_to_all(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                     const WindowDesc& signal, int core_num) {
  const char* api = "all_to_all";
  const DomainState& d = coll_domain(api, signal, &target);
  check_distinct(api, "target", target, "signal", signal);
  if (input_window) check_distinct(api, "input", *input_window, "target", target);
  check_rows(api, "target", target, d.nranks());
  check_same_dtype(api, input.dtype, target.dtype);
  if (!(input.shape == target.shape))
    throw UsageError(fmt::format("all_to_all: input has shape {} but target '{}' is {}; both must be [{}, SIZE]",
                                 input.shape.str(), name_of(target), target.shape.str(), d.nranks()));
  return signal_lane_stride(api, signal, d.nranks(), core_num);
}

void check_all_to_all_v(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                        const WindowDesc& signal, const LocalDesc& send_counts, const WindowDesc& recv_counts) {
  const char* api = "all_to_all_v";
  const DomainState& d = coll_domain(api, signal, &target);
  coll_domain(api, recv_counts, &target, "recv_counts");
  const int n = d.nranks();
  signal_lane_stride(api, signal, n, 1);
  check_distinct(api, "target", target, "signal", signal);
  check_distinct(api, "recv_counts", recv_counts, "target", target);
  check_distinct(api, "recv_counts", recv_counts, "signal", signal);
  if (input_window) check_distinct(api, "input", *input_window, "target", target);
  check_same_dtype(api, input.dtype, target.dtype);
  if (target.shape.size() != 2 || target.shape[0] % n != 0 || target.shape[0] == 0)
    throw UsageError(
        fmt::format("all_to_all_v: target '{}' has shape {}; it must be [{} * MAX_RECV, SIZE] with "
                    "MAX_RECV >= 1 ({} ranks must divide target dim 0)",
                    name_of(target), target.shape.str(), n, n));
  if (!(input.shape == target.shape))
    throw UsageError(
        fmt::format("all_to_all_v: input has shape {} but target '{}' is {}; both must be [{} * MAX_RECV, "
                    "SIZE]",
                    input.shape.str(), name_of(target), target.shape.str(), n));
  const bool counts_ok = send_counts.dtype == DType::INT32 &&
                         ((send_counts.shape.size() == 1 && send_counts.shape[0] == n) ||
                          (send_counts.shape.size() == 2 && send_counts.shape[0] == n && send_counts.shape[1] == 1));
  if (!counts_ok)
    throw UsageError(fmt::format("all_to_all_v: send_counts is {} {}; it must be INT32 [{}] or [{}, 1]{}",
                                 dtype_name(send_counts.dtype), send_counts.shape.str(), n, n,
                                 send_counts.dtype == DType::INT32 ? "" : " (convert the counts to int32)"));
  if (!(recv_counts.dtype == DType::INT32 && recv_counts.shape == Dims{n, 1}))
    throw UsageError(fmt::format("all_to_all_v: recv_counts '{}' is {} {}; it must be an INT32 window [{}, 1]",
                                 name_of(recv_counts), dtype_name(recv_counts.dtype), recv_counts.shape.str(), n));
}

void check_send_counts(const std::int32_t* counts, int nranks, Index max_recv) {
  for (int p = 0; p < nranks; ++p)
    if (counts[p] < 0 || counts[p] > max_recv)
      throw UsageError(
          fmt::format("all_to_all_v: send_counts[{}] = {} is outside [0, MAX_RECV = {}]; a count is the "
                      "number of rows sent to that rank and must fit its block",
                      p, counts[p], max_recv));
}

}  // namespace pld::detail
