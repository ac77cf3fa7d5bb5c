// pld — plumbing of the collectives (internal; included by collectives.hpp): the type-erased entry
// points the public templates call (each records the call's swimlane span itself) and the checks
// shared by the kernel and host forms.
#pragma once

#include <pld/detail/kernel.hpp>
#include <pld/export.hpp>
#include <pld/types.hpp>
#include <pld/window.hpp>

#include <cstdint>
#include <string>

namespace pld {

struct AllreduceOptions;

namespace detail {

/// Throws UsageError unless `core_num` is in [1, kMaxCoreNum]. For collectives whose entry point
/// takes no core_num (all_to_all_v): the value is checked, the call runs on one lane.
inline void check_core_num_option(const char* api, int core_num) {
  if (core_num < 1 || core_num > kMaxCoreNum)
    throw_usage(std::string(api) + ": core_num " + std::to_string(core_num) + " must be in [1, " +
                std::to_string(kMaxCoreNum) + "]; pass .core_num between 1 and pld::kMaxCoreNum");
}

PLD_API void coll_barrier(const WindowDesc& signal);
PLD_API void coll_allreduce(const WindowDesc& target, const WindowDesc& signal, const AllreduceOptions& options);
PLD_API void coll_broadcast(const WindowDesc& target, const WindowDesc& signal, int root, int core_num);
PLD_API void coll_allgather(const LocalDesc& local, const WindowDesc* local_window, const WindowDesc& target,
                            const WindowDesc& signal, int core_num);
PLD_API void coll_reduce_scatter(const WindowDesc& target, const WindowDesc& signal, ReduceOp op, int core_num);
PLD_API void coll_all_to_all(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                             const WindowDesc& signal, int core_num);
PLD_API void coll_all_to_all_v(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                               const WindowDesc& signal, const LocalDesc& send_counts, const WindowDesc& recv_counts);

}  // namespace detail
}  // namespace pld
