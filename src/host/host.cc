// pld::Host: the orchestrator's view of a HostSession (its comm domains: host/comm_domain.cc).
#include "host/session.h"

#include <pld/error.hpp>
#include <pld/host.hpp>

#include <fmt/format.h>

namespace pld {

Host::Host(detail::HostSession* session) : session_(session), world_(session, 0) {}

int Host::world_size() const {
  return session_->world_size();
}

void Host::check_rank(const char* api, int rank) const {
  if (rank < 0 || rank >= session_->world_size())
    throw UsageError(fmt::format("Host::{}: rank {} out of range [0, {}); ranks index DistributedConfig::device_ids",
                                 api, rank, session_->world_size()));
}

void Host::add_callback(std::function<void()> fn) {
  session_->add_callback(std::move(fn));
}

void Host::record_dispatch(int rank, detail::Trampoline trampoline, void (*kernel)(), detail::ArgWriter& writer) {
  session_->record(rank, trampoline, kernel, writer);
}

namespace detail {
void record_encoded_dispatch(Host& host, int rank, Trampoline trampoline, void (*kernel)(), ArgWriter& writer) {
  host.check_rank("dispatch", rank);
  host.record_dispatch(rank, trampoline, kernel, writer);
}

void throw_unshared_tensor(int arg_index) {
  throw UsageError(
      fmt::format("Host::dispatch: argument {} is a Tensor that does not view pld shared memory; "
                  "ranks cannot see it. Create the data as a pld::HostTensor and pass it or a view of it",
                  arg_index));
}
}  // namespace detail

}  // namespace pld
