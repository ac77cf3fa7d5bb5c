// pld::Host and pld::CommDomain: the orchestrator's view of a HostSession.
#include "host/session.h"

#include <pld/detail/checked.hpp>
#include <pld/error.hpp>
#include <pld/host.hpp>

#include <fmt/format.h>

namespace pld {

int CommDomain::size() const { return static_cast<int>(session_->domain(id_).members.size()); }

const std::vector<int>& CommDomain::ranks() const { return session_->domain(id_).members; }

namespace {
// pld's own windows (kBuiltinSignalName, kCollStagingName) are allocated by the session itself;
// a user buffer must not take one of their names.
const std::string& user_name(const std::string& name) {
  if (name.rfind("pld.", 0) == 0)
    throw UsageError(fmt::format("alloc_window_buffer('{}'): names starting with 'pld.' are reserved for pld's own "
                                 "windows; pick another name",
                                 name));
  return name;
}
}  // namespace

WindowBuffer CommDomain::alloc_window_buffer(std::uint64_t bytes, const std::string& name) {
  return session_->alloc(id_, bytes, user_name(name));
}

WindowBuffer CommDomain::alloc_window_buffer(const Dims& shape, DType dtype, const std::string& name) {
  if (shape.empty())
    throw UsageError("alloc_window_buffer(shape, dtype): the shape is empty; give at least one dimension");
  for (Index e : shape)
    if (e < 0)
      throw UsageError(fmt::format("alloc_window_buffer({}, {}): negative extent; extents must be >= 0", shape.str(),
                                   dtype_name(dtype)));
  const std::string op = fmt::format("alloc_window_buffer({}, {})", shape.str(), dtype_name(dtype));
  const Index bytes = detail::checked_bytes(op.c_str(), shape, dtype_size(dtype));
  return session_->alloc(id_, static_cast<std::uint64_t>(bytes), user_name(name));
}

detail::WindowRef CommDomain::window_ref(const WindowBuffer& buffer, const Dims& shape, DType dtype) const {
  return session_->view(id_, buffer, shape, dtype);
}

Host::Host(detail::HostSession* session) : session_(session), world_(session, 0) {}

int Host::world_size() const { return session_->world_size(); }

CommDomain Host::domain(const std::vector<int>& ranks) { return CommDomain(session_, session_->domain_create(ranks)); }

void Host::check_rank(const char* op, int rank) const {
  if (rank < 0 || rank >= session_->world_size())
    throw UsageError(fmt::format("Host::{}: rank {} out of range [0, {}); ranks index DistributedConfig::device_ids",
                                 op, rank, session_->world_size()));
}

void Host::add_callback(std::function<void()> fn) { session_->add_callback(std::move(fn)); }

void Host::record_dispatch(int rank, detail::Trampoline trampoline, void (*kernel)(), detail::ArgWriter& writer) {
  session_->record(rank, trampoline, kernel, writer);
}

namespace detail {
void throw_unshared_tensor(int arg_index) {
  throw UsageError(fmt::format("Host::dispatch: argument {} is a Tensor that does not view pld shared memory; "
                               "ranks cannot see it. Create the data as a pld::HostTensor and pass it or a view of it",
                               arg_index));
}
}  // namespace detail

}  // namespace pld
