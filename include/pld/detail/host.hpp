// pld — plumbing of the host side (internal; included by host.hpp): the non-template halves of
// pld::run and pld::gather.
#pragma once

#include <pld/export.hpp>
#include <pld/types.hpp>

#include <cstdint>
#include <functional>

namespace pld {

class Host;
struct DistributedConfig;

namespace detail {

/// Gathers slice `r` of a [rows, ...] host tensor from MPI process r into `root` (-1: everyone).
PLD_API void gather_slices(void* data, std::uint64_t bytes, Index rows, int root);
/// pld::run without the argument pack.
PLD_API void run(const DistributedConfig& config, const std::function<void(Host&)>& orchestrator);

}  // namespace detail
}  // namespace pld
