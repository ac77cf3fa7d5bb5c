// Operand checks of every collective, shared by the rank (composite path) and the host (builtin
// path, which runs them before any rank starts). Each throws UsageError naming the collective,
// the operand and the shape it needs; the int results are the signal's column stride per lane.
#pragma once

#include <pld/collectives.hpp>

namespace pld::detail {

int check_allreduce(const WindowDesc& target, const WindowDesc& signal, const AllreduceOptions& options);
int check_broadcast(const WindowDesc& target, const WindowDesc& signal, int root, int core_num);
int check_reduce_scatter(const WindowDesc& target, const WindowDesc& signal, ReduceOp op, int core_num);
int check_allgather(const LocalDesc& local, const WindowDesc* local_window, const WindowDesc& target,
                    const WindowDesc& signal, int core_num);
int check_all_to_all(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                     const WindowDesc& signal, int core_num);
void check_all_to_all_v(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                        const WindowDesc& signal, const LocalDesc& send_counts, const WindowDesc& recv_counts);
/// barrier: the signal alone.
void check_barrier(const WindowDesc& signal);

}  // namespace pld::detail
