#include "coll/credit.h"

#include "backend/backend.h"
#include "coll/ll.h"
#include "coll/match.h"

#include <pld/error.hpp>

#include <fmt/format.h>

namespace pld::detail {

CreditBarrier::CreditBarrier(const char* api, const DomainState& domain, const WindowDesc& signal, int column,
                             int lanes)
    : api_(api),
      d_(domain),
      signal_(signal),
      base_(signal.ref.offset),
      cols_(signal.shape.size() == 2 ? static_cast<std::uint64_t>(signal.shape[1]) : 1),
      column_(column),
      me_(domain.rank),
      n_(domain.nranks()),
      flags_first_(lanes == 1 && ll_barrier_fits(domain, signal)) {}

void CreditBarrier::sync() {
  if (++syncs_ == 1 && flags_first_) return ll_barrier(api_, d_, signal_, true);
  ++g_;
  // The match check of a call split over lanes, on lane 0: the record goes out before the first
  // arrival, the next rank's is compared after the second (it stays until that rank's call after
  // next, coll/match.h).
  const bool records = column_ == 0 && !flags_first_;
  if (records && g_ == 1) publish_call(d_, signal_);
  Backend& be = *d_.backend;
  for (int k = 1; k < n_; ++k) {  // staggered: rank r starts with r + 1
    const int p = (me_ + k) % n_;
    be.notify(d_.members[static_cast<std::size_t>(p)], cell(me_), 1, NotifyOp::AtomicAdd);
  }
  const MatchProbe probe(d_, signal_);
  for (int k = 1; k < n_; ++k) {
    const int s = (me_ + k) % n_;
    const Dims at = cols_ == 1 && signal_.shape.size() == 1 ? Dims{s} : Dims{s, column_};
    WaitSite site{signal_.ref.domain, signal_.ref.buffer, &at, d_.members[static_cast<std::size_t>(s)], api_};
    site.probe = probe.get();
    std::int32_t seen = 0;
    const WaitStatus st = be.wait(cell(s), g_, WaitCmp::Ge, site, &seen);
    if (st == WaitStatus::Ok) continue;
    if (st == WaitStatus::Mismatch) call_mismatch_failed(api_, d_, signal_, probe.peer());
    const std::string what =
        fmt::format("{}: waiting for rank {}'s credit {} on signal '{}' cell {} (the cell holds {})", api_, s, g_,
                    d_.buffer_name(signal_.ref.buffer), at.str(), seen);
    if (st == WaitStatus::Timeout)
      throw WaitTimeoutError(what +
                             " at the deadline; every rank of the domain must call the same collectives in "
                             "the same order");
    throw AbortedError(what + ": released because another rank failed");
  }
  if (records && g_ == 1) prefetch_next_call(d_, signal_);  // the line arrives while the body runs
  if (records && g_ == 2) check_next_call(api_, d_, signal_);
}

void CreditBarrier::finish() {
  if (g_ == 0) return;
  Backend& be = *d_.backend;
  const int self = d_.members[static_cast<std::size_t>(me_)];
  for (int s = 0; s < n_; ++s)
    if (s != me_) be.notify(self, cell(s), -g_, NotifyOp::AtomicAdd);
  g_ = 0;
}

}  // namespace pld::detail
