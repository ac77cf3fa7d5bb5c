#include "coll/peer.h"

#include <pld/error.hpp>

#include <fmt/format.h>

namespace pld::detail {

std::byte* window_at(const char* api, const DomainState& d, int peer, const WindowDesc& w, std::uint64_t byte_offset) {
  std::byte* base = d.windows_in[static_cast<std::size_t>(peer)];
  if (!base)
    throw Error(
        fmt::format("{}: internal error: a direct schedule addressed rank {}'s window, which the {} backend "
                    "does not expose as memory (the RMA schedule should have run); please report it",
                    api, peer, d.backend->name()));
  return base + w.ref.offset + byte_offset;
}

}  // namespace pld::detail
