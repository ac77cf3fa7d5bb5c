// The hand-rolled self-clearing credit barrier that step 08 builds and explains; steps 09-15
// reuse it from here. (pld's own collectives use the same protocol: src/coll/credit.cc.)
#pragma once

#include <pld/pld.hpp>

#include <cstdint>

class CreditBarrier {
 public:
  explicit CreditBarrier(const pld::DistributedTensor<int32_t>& signal) : signal_(signal) {
    const pld::CommCtx ctx = pld::get_comm_ctx(signal);
    me_ = pld::rank(ctx);
    n_ = pld::nranks(ctx);
  }
  void sync() {  // barrier g = 1, 2, ... of this call
    ++g_;
    for (int p = 0; p < n_; ++p)
      if (p != me_) pld::system::notify(signal_, p, {me_, 0}, 1, pld::NotifyOp::AtomicAdd);
    for (int s = 0; s < n_; ++s)
      if (s != me_) pld::system::wait(signal_, {s, 0}, g_, pld::WaitCmp::Ge);
  }
  void finish() {  // give back the g credits consumed: my cells are 0 again
    for (int s = 0; s < n_; ++s)
      if (s != me_) pld::system::notify(signal_, me_, {s, 0}, -g_, pld::NotifyOp::AtomicAdd);
    g_ = 0;
  }

 private:
  pld::DistributedTensor<int32_t> signal_;
  int me_ = 0, n_ = 1, g_ = 0;
};
