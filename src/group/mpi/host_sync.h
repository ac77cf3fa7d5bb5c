// HostTensor bytes under the mpi backend. Each process has its own copy of every HostTensor; a
// dispatch of rank r writes only process r's copy. HostSync snapshots the bytes of the tensors
// passed to this process's dispatches (the views, not their whole blocks), and merge() sends the
// bytes that changed to every process and applies theirs, so that every process holds what all
// ranks wrote (design §7). Its buffers go back to a pool for the next call: fresh memory costs
// a page fault per 4 KiB, more than the copy itself.
#pragma once

#include "host/session.h"

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace pld::detail {

class MpiBackend;

class HostSync {
 public:
  /// `me`: this process's world rank. Blocks are numbered by first use in the call, which is the
  /// same on every process of an SPMD program.
  HostSync(const HostSession& session, int me);
  ~HostSync();
  HostSync(const HostSync&) = delete;
  HostSync& operator=(const HostSync&) = delete;
  /// Collective over the backend's communicator: exchange and apply every process's changes since the snapshot, then
  /// snapshot again.
  void merge(MpiBackend& backend);

  struct Buffers;  // the snapshot and the exchange buffers, reused from call to call

 private:
  struct Block {
    std::byte* base = nullptr;
    std::uint64_t bytes = 0;
  };
  /// Bytes [offset, offset + bytes) of blocks_[block] that this process's dispatches view; their
  /// copy before the dispatches ran is at snapshot + at.
  struct Region {
    std::uint32_t block = 0;
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
    std::uint64_t at = 0;
  };
  void take_snapshots();
  std::vector<Block> blocks_;
  std::vector<Region> mine_;
  std::unique_ptr<Buffers> buffers_;
};

}  // namespace pld::detail
