#include "coll/credit.h"

#include "coll/checks.h"
#include "coll/ll.h"
#include "coll/peer.h"
#include "debug/checks.h"

#include "backend/backend.h"
#include "core/settings.h"

#include <pld/error.hpp>

#include <fmt/format.h>

namespace pld::detail {

const DomainState& coll_domain(const char* op, const WindowDesc& signal, const WindowDesc* target,
                               const char* signal_name) {
  if (!signal.state || (target && !target->state)) {
    RankRuntime::get(op);
    throw UsageError(fmt::format("{}: the window operands are not bound to a comm domain; pass window views "
                                 "created by Host::window<T>() through Host::dispatch",
                                 op));
  }
  if (target && target->state != signal.state)
    throw UsageError(fmt::format("{}: {} '{}' belongs to comm domain {} but target '{}' to comm domain {}; use a "
                                 "{} allocated in the target's domain",
                                 op, signal_name, signal.state->buffer_name(signal.ref.buffer), signal.state->label,
                                 target->state->buffer_name(target->ref.buffer), target->state->label, signal_name));
  return *signal.state;
}

void check_reduce_op(const char* op, ReduceOp rop) {
  if (rop != ReduceOp::Sum && rop != ReduceOp::Max && rop != ReduceOp::Min && rop != ReduceOp::Prod)
    throw UsageError(fmt::format("{}: op {} must be ReduceOp::Sum, Max, Min or Prod", op, static_cast<int>(rop)));
}

void check_distinct(const char* op, const char* a_name, const WindowDesc& a, const char* b_name, const WindowDesc& b) {
  if (a.ref.domain == b.ref.domain && a.ref.buffer == b.ref.buffer)
    throw UsageError(fmt::format("{}: {} and {} are views of the same window buffer '{}'; they must be different "
                                 "buffers",
                                 op, a_name, b_name, a.state ? a.state->buffer_name(a.ref.buffer) : std::string("?")));
}

void check_core_num(const char* op, int core_num) {
  if (core_num < 1 || core_num > kMaxCoreNum)
    throw UsageError(fmt::format("{}: core_num {} must be in [1, {}]", op, core_num, kMaxCoreNum));
}

int signal_lane_stride(const char* op, const WindowDesc& signal, int nranks, int core_num) {
  check_core_num(op, core_num);
  const Dims& s = signal.shape;
  auto fail = [&] {
    const std::string name = signal.state ? signal.state->buffer_name(signal.ref.buffer) : std::string("?");
    throw UsageError(fmt::format("{}: signal '{}' has shape {} but this collective over {} ranks with core_num {} "
                                 "needs an INT32 signal of shape [{}, {}]{} (one row per rank, one column per "
                                 "lane, wider is fine; [{}, {}] puts every cell on its own cache line)",
                                 op, name, s.str(), nranks, core_num, nranks, core_num,
                                 core_num == 1 ? fmt::format(" or [{}]", nranks) : std::string(), nranks,
                                 16 * core_num));
  };
  if (signal.dtype != DType::INT32) fail();
  if (s.size() == 1) {
    if (s[0] < nranks || core_num != 1) fail();
    return 1;
  }
  if (s.size() != 2 || s[0] < nranks || s[1] < core_num) fail();
  return static_cast<int>(s[1] / core_num);
}

CreditBarrier::CreditBarrier(const char* op, const DomainState& domain, const WindowDesc& signal, int column)
    : op_(op),
      d_(domain),
      signal_(signal),
      base_(signal.ref.offset),
      cols_(signal.shape.size() == 2 ? static_cast<std::uint64_t>(signal.shape[1]) : 1),
      column_(column),
      me_(domain.rank),
      n_(domain.nranks()) {}

void CreditBarrier::sync() {
  ++g_;
  Backend& be = *d_.backend;
  for (int k = 1; k < n_; ++k) {  // staggered: rank r starts with r + 1
    const int p = (me_ + k) % n_;
    be.notify(d_.members[static_cast<std::size_t>(p)], cell(me_), 1, NotifyOp::AtomicAdd);
  }
  for (int k = 1; k < n_; ++k) {
    const int s = (me_ + k) % n_;
    const Dims at = cols_ == 1 && signal_.shape.size() == 1 ? Dims{s} : Dims{s, column_};
    const WaitSite site{signal_.ref.domain, signal_.ref.buffer, &at, d_.members[static_cast<std::size_t>(s)], op_};
    std::int32_t seen = 0;
    const WaitStatus st = be.wait(cell(s), g_, WaitCmp::Ge, site, &seen);
    if (st == WaitStatus::Ok) continue;
    const std::string what =
        fmt::format("{}: waiting for rank {}'s credit {} on signal '{}' cell {} (the cell holds {})", op_, s, g_,
                    d_.buffer_name(signal_.ref.buffer), at.str(), seen);
    if (st == WaitStatus::Timeout)
      throw WaitTimeoutError(what + " at the deadline; every rank of the domain must call the same collectives in "
                                    "the same order");
    throw AbortedError(what + ": released because another rank failed");
  }
}

void CreditBarrier::finish() {
  if (g_ == 0) return;
  Backend& be = *d_.backend;
  const int self = d_.members[static_cast<std::size_t>(me_)];
  for (int s = 0; s < n_; ++s)
    if (s != me_) be.notify(self, cell(s), -g_, NotifyOp::AtomicAdd);
  g_ = 0;
}

std::byte* window_at(const char* op, const DomainState& d, int peer, const WindowDesc& w, std::uint64_t byte_offset) {
  std::byte* base = d.windows_in[static_cast<std::size_t>(peer)];
  if (!base)
    throw Error(
        fmt::format("{}: internal error: a direct schedule addressed rank {}'s window, which the {} backend "
                    "does not expose as memory (the RMA schedule should have run); please report it",
                    op, peer, d.backend->name()));
  return base + w.ref.offset + byte_offset;
}

const CollTuning& coll_tuning() {
  static const CollTuning tuning = [] {
    CollTuning t;
    t.mesh_max_bytes = setting_bytes(Setting::AllreduceMeshMax);
    t.reproducible = setting_int(Setting::Reproducible) != 0;
    t.chunk_bytes = 32 * 1024;
    return t;
  }();
  return tuning;
}

bool coll_rma_forced() {
  static const bool forced = setting_int(Setting::CollRma) != 0;
  return forced;
}

void check_barrier(const WindowDesc& signal) {
  const DomainState& d = coll_domain("barrier", signal, nullptr);
  signal_lane_stride("barrier", signal, d.nranks(), 1);
}

void coll_barrier(const WindowDesc& signal) {
  const char* op = "barrier";
  check_barrier(signal);
  const DomainState& d = *signal.state;
  collective_enter(d, signal, CollKind::Barrier, 0, [&] {
    CollCall call;
    call.kind = CollKind::Barrier;
    call.signal = signal.ref.buffer;
    return call;
  });
  if (d.nranks() == 1) return;
  if (ll_barrier_fits(d, signal)) return ll_barrier(op, d, signal);
  CreditBarrier b(op, d, signal, 0);
  b.sync();
  b.finish();
}

}  // namespace pld::detail
