// pld — plumbing of the host side (internal; included by host.hpp): the non-template halves of
// pld::run and pld::gather.
#pragma once

#include <pld/detail/dispatch.hpp>
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

// ----- For language bindings (the Python package) ---------------------------------------------

/// Records a dispatch to `rank` whose arguments `writer` already holds (with the shared blocks and
/// window views it noted), to be decoded in the rank by `trampoline(kernel, reader)`. Checks the
/// rank and the views as Host::dispatch does.
PLD_API void record_encoded_dispatch(Host& host, int rank, Trampoline trampoline, void (*kernel)(), ArgWriter& writer);

/// Functions run around every fork of a rank process on the shm backend: `prepare` in the forking
/// thread before fork(), `parent` in it after fork() (also when fork failed), `child` first in the
/// new rank process, `exit` in the rank process just before it exits. An interpreter embedding pld
/// re-initialises itself in `child` and flushes its output streams in `exit`. Null = none.
struct RankForkHooks {
  void (*prepare)() = nullptr;
  void (*parent)() = nullptr;
  void (*child)() = nullptr;
  void (*exit)() = nullptr;
};
PLD_API void set_rank_fork_hooks(const RankForkHooks& hooks);

}  // namespace detail
}  // namespace pld
