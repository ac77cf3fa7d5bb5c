// HostTensor bytes under the mpi backend. Each process has its own copy of every HostTensor; a
// dispatch of rank r writes only process r's copy. HostSync snapshots the tensors passed to this
// process's dispatches, and merge() sends the bytes that changed to every process and
// applies theirs, so that every process holds what all ranks wrote (design §7).
#pragma once

#include "host/session.h"

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace pld::detail {

class MpiBackend;

class HostSync {
 public:
  /// `me`: this process's world rank. Blocks are numbered by first use in the call, which is the
  /// same on every process of an SPMD program.
  HostSync(const HostSession& session, int me);
  /// Collective over the backend's communicator: exchange and apply every process's changes since the snapshot, then
  /// snapshot again.
  void merge(MpiBackend& backend);

 private:
  struct Block {
    std::byte* base = nullptr;
    std::uint64_t bytes = 0;
    bool mine = false;                // passed to one of this process's dispatches
    std::vector<std::byte> snapshot;  // its bytes before this process's dispatches ran
  };
  void take_snapshots();
  std::vector<Block> blocks_;
};

}  // namespace pld::detail
