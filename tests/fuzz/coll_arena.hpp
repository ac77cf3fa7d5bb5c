// The memory of the collective fuzz tests: per comm domain, guard buffers around two sets of
// operand buffers (target, input), the signal, recv_counts and send_counts windows, and a
// rank-local input with guards. Consecutive valid calls alternate between the two sets, so no
// barrier is needed between cases: a rank refills a set only after every peer has entered a
// later collective, i.e. has finished reading and writing that set. Each rank models and checks
// its own window (every rank's values are a function of the case and the rank).
#pragma once

#include "fuzz/coll_model.hpp"

#include <pld/pld.hpp>

#include <array>
#include <string>
#include <vector>

namespace pld::fuzz {

enum CollBuffer : int { kCPre, kTgt0, kTgt1, kInp0, kInp1, kRecv, kSend, kCSig, kSync, kCPost, kCollBuffers };
inline constexpr std::size_t kCollSizes[kCollBuffers] = {128, kCollArea, kCollArea, kCollArea, kCollArea,
                                                         64,  64,        kCollSig,  64,        128};
inline constexpr const char* kCollBufNames[kCollBuffers] = {"pre",  "tgt0", "tgt1", "inp0", "inp1",
                                                            "recv", "send", "csig", "sync", "post"};

using CollViews = std::array<DistributedTensor<std::uint8_t>, kCollBuffers>;

/// The buffers of one comm domain (world or a sub-domain), allocated in order, and byte views.
struct CollBuffers {
  std::array<WindowBuffer, kCollBuffers> buffers;
  CollViews views;
};

inline CollBuffers alloc_coll(CommDomain& d, const std::string& tag) {
  CollBuffers c;
  for (int k = 0; k < kCollBuffers; ++k) {
    c.buffers[k] = d.alloc_window_buffer(kCollSizes[k], std::string(kCollBufNames[k]) + tag);
    c.views[k] = d.window<std::uint8_t>(c.buffers[k], {static_cast<Index>(kCollSizes[k])});
  }
  return c;
}

class CollArena {
 public:
  explicit CollArena(const CollViews& v) : v_(v), ctx_(get_comm_ctx(v[kTgt0])), me_(rank(ctx_)), n_(nranks(ctx_)) {
    start_ = v[kCPre].ref().offset;
    bytes_ = v[kCPost].ref().offset + v[kCPost].ref().bytes - start_;
    model_.resize(bytes_);
    std::memcpy(model_.data(), real(), bytes_);
    local_real_.assign(2 * 128 + kCollArea + 64, std::byte{0});
    local_model_ = local_real_;
  }
  int me() const { return me_; }
  int n() const { return n_; }
  std::byte* real() { return ctx_.windows_in(me_) + start_; }
  std::uint64_t rel(int k) const { return v_[k].ref().offset - start_; }

  /// Fills set `set` (target and input buffers, the local input, send_counts) for case `c`.
  template <class T>
  void fill_case(const CollCase& c, int set) {
    const auto tgt = rank_values<T>(c, me_, false, kCollArea), inp = rank_values<T>(c, me_, true, kCollArea);
    std::memcpy(model_.data() + rel(kTgt0 + set), tgt.data(), kCollArea);
    std::memcpy(model_.data() + rel(kInp0 + set), inp.data(), kCollArea);
    std::memcpy(local_model_.data() + 128, inp.data(), kCollArea);
    if (c.op == kAllToAllV) {
      const Index m = c.target.size() == 2 && c.target[0] > 0 ? std::max<Index>(c.target[0] / n_, 1) : 1;
      std::int32_t counts[kMaxP + 1] = {};
      for (int d = 0; d < n_; ++d) counts[d] = send_count(c, me_, d, m);
      std::memcpy(model_.data() + rel(kSend), counts, sizeof counts);
      std::memcpy(local_model_.data() + 128 + kCollArea, counts, sizeof counts);
    }
    for (int k : {kTgt0 + set, kInp0 + set, static_cast<int>(kSend)})
      std::memcpy(real() + rel(k), model_.data() + rel(k), kCollSizes[k]);
    local_real_ = local_model_;
  }

  template <class T>
  DistributedTensor<T> view(int k, const Dims& shape) const {
    return detail::Access::make<DistributedTensor<T>>(v_[k].ref(), shape, v_[k].state());
  }
  template <class T>
  Tensor<T> local(const Dims& shape) {
    return Tensor<T>(reinterpret_cast<T*>(local_real_.data() + 128), shape);
  }
  Tensor<std::int32_t> local_counts(const Dims& shape) {
    return Tensor<std::int32_t>(reinterpret_cast<std::int32_t*>(local_real_.data() + 128 + kCollArea), shape);
  }

  /// The model's result of a valid call on this rank.
  template <class T>
  void expect(const CollCase& c, int set) {
    std::vector<std::byte> out(model_.begin() + static_cast<std::ptrdiff_t>(rel(kTgt0 + set)),
                               model_.begin() + static_cast<std::ptrdiff_t>(rel(kTgt0 + set) + kCollArea));
    std::vector<std::int32_t> recv(static_cast<std::size_t>(n_));
    coll_expect<T>(c, n_, me_, out, recv);
    std::memcpy(model_.data() + rel(kTgt0 + set), out.data(), kCollArea);
    if (c.op == kAllToAllV) std::memcpy(model_.data() + rel(kRecv), recv.data(), recv.size() * 4);
  }

  /// "" when this rank's window (signals aside) and local buffer match the model.
  std::string compare() {
    const std::uint64_t sig0 = rel(kCSig), sig1 = rel(kSync) + kCollSizes[kSync];
    Index at = first_diff(real(), model_.data(), sig0);
    if (at < 0) {
      at = first_diff(real() + sig1, model_.data() + sig1, bytes_ - sig1);
      if (at >= 0) at += static_cast<Index>(sig1);
    }
    if (at >= 0) {
      std::memcpy(model_.data(), real(), bytes_);
      return "rank " + std::to_string(me_) + "'s window: " + where(static_cast<std::uint64_t>(at));
    }
    at = first_diff(local_real_.data(), local_model_.data(), local_real_.size());
    if (at < 0) return {};
    local_model_ = local_real_;
    return "rank-local input: byte " + std::to_string(at - 128) + " changed";
  }

  /// After the last case and a barrier: every signal cell is back at zero.
  std::string signals_at_rest() {
    for (std::uint64_t i = rel(kCSig); i < rel(kCSig) + kCollSig; ++i)
      if (real()[i] != std::byte{0}) return "signal cell byte " + std::to_string(i - rel(kCSig)) + " not restored";
    return {};
  }

  /// Makes the model agree with memory again (after a call whose effect the model cannot know).
  void resync() {
    std::memcpy(model_.data(), real(), bytes_);
    local_model_ = local_real_;
  }

 private:
  std::string where(std::uint64_t at) const {
    for (int k = 0; k < kCollBuffers; ++k)
      if (at >= rel(k) && at < rel(k) + kCollSizes[k])
        return "byte " + std::to_string(at - rel(k)) + " of buffer '" + kCollBufNames[k] + "' differs from the model";
    return "byte " + std::to_string(at) + " (padding between buffers) changed";
  }

  CollViews v_;
  CommCtx ctx_;
  int me_, n_;
  std::uint64_t start_ = 0, bytes_ = 0;
  std::vector<std::byte> model_, local_real_, local_model_;
};

}  // namespace pld::fuzz
