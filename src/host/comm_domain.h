// Comm domains on the host: what one orchestrator call records about each domain it creates
// (DomainRecord, kept by HostSession). CommDomain (include/pld/comm_domain.hpp) is the user's
// handle on one; rank/domain.h is the same domain as a member rank sees it.
#pragma once

#include "rank/domain.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pld::detail {

struct DomainRecord {
  std::uint32_t id = 0;
  std::vector<int> members;                 // world ranks, ascending
  std::vector<int> local_of;                // world rank -> domain-local rank, or -1
  std::vector<BufferInfo> buffers;          // by buffer id
  std::vector<std::optional<DType>> typed;  // by buffer id: alloc_window_buffer(shape, dtype)'s dtype
  std::string label;
  std::vector<bool> dispatched;  // by domain-local rank: got a dispatch using this domain
  bool used = false;
};

}  // namespace pld::detail
