// Operand checks of every collective, shared by the rank (composite path) and the host (builtin
// path, which runs them before any rank starts). Each throws UsageError naming the collective
// (`api`), the operand and the shape it needs; the int results are the signal's column stride per
// lane.
#pragma once

#include "rank/domain.h"

#include <pld/collectives.hpp>

#include <cstdint>

namespace pld::detail {

int check_allreduce(const WindowDesc& target, const WindowDesc& signal, const AllreduceOptions& options);
int check_reduce_scatter(const WindowDesc& target, const WindowDesc& signal, ReduceOp op, int core_num);
int check_allgather(const LocalDesc& local, const WindowDesc* local_window, const WindowDesc& target,
                    const WindowDesc& signal, int core_num);
int check_all_to_all(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                     const WindowDesc& signal, int core_num);
void check_all_to_all_v(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                        const WindowDesc& signal, const LocalDesc& send_counts, const WindowDesc& recv_counts);
/// all_to_all_v's send counts (known on the rank only): each in [0, max_recv].
void check_send_counts(const std::int32_t* counts, int nranks, Index max_recv);
/// barrier: the signal alone.
void check_barrier(const WindowDesc& signal);

// The pieces the checks above are made of. Each tests its condition inline (every collective call
// runs them) and throws from an out-of-line function (the *_failed ones), so a call that passes
// costs a few compares.

[[noreturn]] void coll_domain_failed(const char* api, const WindowDesc& signal, const WindowDesc* target,
                                     const char* signal_name);
[[noreturn]] void check_distinct_failed(const char* api, const char* a_name, const WindowDesc& a, const char* b_name);
[[noreturn]] void signal_lane_stride_failed(const char* api, const WindowDesc& signal, int nranks, int core_num);
[[noreturn]] void check_core_num_failed(const char* api, int core_num);

/// The domain of a collective's operands, after checking they are bound and share it.
inline const DomainState& coll_domain(const char* api, const WindowDesc& signal, const WindowDesc* target,
                                      const char* signal_name = "signal") {
  if (!signal.state || (target && target->state != signal.state)) [[unlikely]]
    coll_domain_failed(api, signal, target, signal_name);
  return *signal.state;
}

/// Throws unless 1 <= core_num <= kMaxCoreNum.
inline void check_core_num(const char* api, int core_num) {
  if (core_num < 1 || core_num > kMaxCoreNum) [[unlikely]]
    check_core_num_failed(api, core_num);
}

/// Checks signal dtype and shape for `core_num` lanes and returns the column stride per lane:
/// [P] (core_num 1), or [>= P, k] with k >= core_num (lane b uses column b * (k / core_num)).
inline int signal_lane_stride(const char* api, const WindowDesc& signal, int nranks, int core_num) {
  check_core_num(api, core_num);
  const Dims& s = signal.shape;
  if (signal.dtype == DType::INT32) {
    if (s.size() == 1 && s[0] >= nranks && core_num == 1) return 1;
    if (s.size() == 2 && s[0] >= nranks && s[1] >= core_num)
      return static_cast<int>(core_num == 1 ? s[1] : s[1] / core_num);  // no division for one lane
  }
  signal_lane_stride_failed(api, signal, nranks, core_num);
}

/// Throws unless op is Sum, Max, Min or Prod.
void check_reduce_op(const char* api, ReduceOp op);

/// Throws unless the two window operands are different buffers.
inline void check_distinct(const char* api, const char* a_name, const WindowDesc& a, const char* b_name,
                           const WindowDesc& b) {
  if (a.ref.domain == b.ref.domain && a.ref.buffer == b.ref.buffer) [[unlikely]]
    check_distinct_failed(api, a_name, a, b_name);
}

/// Throws unless `w` is [nranks, SIZE].
void check_rows(const char* api, const char* what, const WindowDesc& w, int nranks);

[[noreturn]] void broadcast_root_failed(const WindowDesc& signal, int root);

/// broadcast's operands: bound to one domain, target and signal distinct, 0 <= root < P, the
/// signal's shape for core_num lanes. Inline: every broadcast runs it.
inline int check_broadcast(const WindowDesc& target, const WindowDesc& signal, int root, int core_num) {
  const char* api = "broadcast";
  const DomainState& d = coll_domain(api, signal, &target);
  check_distinct(api, "target", target, "signal", signal);
  if (root < 0 || root >= d.nranks()) [[unlikely]]
    broadcast_root_failed(signal, root);
  return signal_lane_stride(api, signal, d.nranks(), core_num);
}

}  // namespace pld::detail
