// MpiGroup's agreements: every process recorded the same call (a hash of its shape, gathered),
// and every process ends a call with the same first failure (MINLOC over the ranks).
#include "group/mpi/group.h"

#include "backend/mpi/backend.h"
#include "host/session.h"

#include <pld/error.hpp>

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace pld::detail {

namespace {

struct Fnv {
  std::uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      h ^= static_cast<const unsigned char*>(p)[i];
      h *= 1099511628211ull;
    }
  }
  template <class T>
  void value(const T& v) {
    bytes(&v, sizeof v);
  }
  void text(const std::string& s) {
    value(s.size());
    bytes(s.data(), s.size());
  }
};

// A kernel as (module, offset in it): the same on every process of one binary, whatever the
// address-space layout.
void hash_kernel(Fnv& f, void (*kernel)()) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(kernel), &info) && info.dli_fbase) {
    f.text(info.dli_fname ? info.dli_fname : "");
    f.value(reinterpret_cast<std::uintptr_t>(kernel) - reinterpret_cast<std::uintptr_t>(info.dli_fbase));
  } else {
    f.value(reinterpret_cast<std::uintptr_t>(kernel));
  }
}

// Failures rank before released waits; MINLOC picks the lowest code, then the lowest rank.
constexpr int kCodeFailed = 0, kCodeAborted = 1, kCodeOk = 2;

}  // namespace

// Every process must have recorded the same call: same domains, buffers and dispatches (rank,
// kernel, argument size), same callbacks. Argument bytes are left out: they name host tensors by
// this process's block ids.
void MpiGroup::check_agreement(const HostSession& session) const {
  Fnv f;
  for (const DomainRecord& d : session.domains()) {
    f.value(d.id);
    for (int m : d.members) f.value(m);
    for (const BufferInfo& b : d.buffers) {
      f.value(b.offset);
      f.value(b.bytes);
      f.text(b.name);
    }
  }
  for (const DispatchRecord& d : session.dispatches()) {
    f.value(d.rank);
    hash_kernel(f, d.kernel);
    f.value(d.args.size());
    for (std::uint32_t id : d.domains) f.value(id);
  }
  for (const auto& c : session.callbacks()) f.value(c.position);
  const int n = backend_->world_size();
  std::vector<std::uint64_t> all(static_cast<std::size_t>(n));
  backend_->collective([&](MPI_Comm comm, MPI_Request* req) {
    MPI_Iallgather(&f.h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm, req);
  });
  for (int q = 1; q < n; ++q)
    if (all[static_cast<std::size_t>(q)] != all[0])
      throw UsageError(
          fmt::format("pld::run (backend mpi): the orchestrator recorded a different call on MPI process {} "
                      "than on process 0 ({} dispatches here); under mpirun every process runs the "
                      "orchestrator, which must record the same windows and dispatches everywhere (no "
                      "branches on the process, the time or unseeded random numbers)",
                      q, session.dispatches().size()));
}

MpiGroup::Failure MpiGroup::agree(const Failure& mine) const {
  MpiBackend& be = *backend_;
  struct {
    int code, rank;
  } in{mine.rank < 0 ? kCodeOk : mine.released ? kCodeAborted : kCodeFailed, be.rank()}, out{};
  // A peer that never reaches the end of the call (stuck in a kernel) must not hang the job.
  const double limit = 2 * options_.wait_timeout + 30;
  const bool done = be.collective(
      [&](MPI_Comm comm, MPI_Request* req) { MPI_Iallreduce(&in, &out, 1, MPI_2INT, MPI_MINLOC, comm, req); }, limit);
  if (!done) {
    std::fprintf(
        stderr,
        "pld: rank %d: not every rank finished the call within %.0f s (2 x the wait deadline + 30 s): a "
        "rank is stuck in a kernel. %s. Aborting the MPI job.\n",
        be.rank(), limit,
        mine.rank < 0 ? "This rank finished its dispatches" : fmt::format("This rank failed: {}", mine.text).c_str());
    std::fflush(stderr);
    MPI_Abort(be.comm(), 70);
  }
  Failure f;
  if (out.code == kCodeOk) return f;
  f.rank = out.rank;
  // The failing rank tells everyone what happened.
  long long head[3] = {static_cast<long long>(mine.cause), mine.dispatch, mine.released ? 1 : 0};
  be.broadcast(head, 3, MPI_LONG_LONG, f.rank);
  if (be.rank() == f.rank) f.text = mine.text;
  be.broadcast(f.text, f.rank);
  f.cause = static_cast<RankFailure>(head[0]);
  f.dispatch = head[1];
  f.released = head[2] != 0;
  return f;
}

}  // namespace pld::detail
