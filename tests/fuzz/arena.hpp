// The memory the kernel-op fuzz tests address, with guard bytes around every operand.
//
// Every rank r owns one "set" of window buffers, allocated back to back in the world domain:
//   pre (guard) | A (window operand) | mid (guard) | B (second window operand) | sig (signal
//   cells) | post (guard)
// and acts only on its own set, on every rank's copy of it (case i runs on rank i % P), so the
// ranks run their cases concurrently without a barrier. The model keeps an image of the whole set
// on every rank, and of a rank-local buffer with guards on both sides; after each case every
// image is compared byte for byte with the real memory (read through CommCtx::windows_in, so the
// tests run on the shm backend).
#pragma once

#include "fuzz/model.hpp"

#include <pld/pld.hpp>

#include <array>
#include <string>
#include <vector>

namespace pld::fuzz {

inline constexpr std::size_t kGuard = 128, kArea = 2048, kSig = 256;
enum SetBuffer : int { kPre, kA, kMid, kB, kSigBuf, kPost, kSetBuffers };
inline constexpr std::size_t kSetSizes[kSetBuffers] = {kGuard, kArea, kGuard, kArea, kSig, kGuard};
inline constexpr const char* kSetNames[kSetBuffers] = {"pre", "A", "mid", "B", "sig", "post"};

using ByteView = DistributedTensor<std::uint8_t>;

/// Rank side of a set: views of its buffers, the model images and the rank-local operand.
class Arena {
 public:
  Arena(const ByteView& pre, const ByteView& a, const ByteView& b, const ByteView& sig, const ByteView& post,
        RankLog log)
      : ctx_(get_comm_ctx(a)), me_(rank(ctx_)), p_(nranks(ctx_)), a_(a), b_(b), sig_(sig), log_(log) {
    start_ = pre.ref().offset;
    bytes_ = post.ref().offset + post.ref().bytes - start_;
    model_.assign(static_cast<std::size_t>(p_), std::vector<std::byte>(bytes_));
    for (int r = 0; r < p_; ++r) std::memcpy(model_[r].data(), real(r), bytes_);
    local_real_.assign(kGuard * 2 + kArea, std::byte{0});
    local_model_ = local_real_;
  }

  int me() const { return me_; }
  int p() const { return p_; }
  RankLog& log() { return log_; }
  std::byte* real(int r) { return ctx_.windows_in(r) + start_; }
  std::uint64_t rel(SetBuffer which) const {
    const ByteView& v = which == kA ? a_ : which == kB ? b_ : sig_;
    return v.ref().offset - start_;
  }

  /// Fresh values in rank `r`'s set (model and memory), and in the local buffer when r is me.
  template <class T>
  void refill(int r, std::uint64_t salt) {
    fill<T>(model_[r].data(), bytes_, mix(salt, static_cast<std::uint64_t>(r)));
    std::memcpy(real(r), model_[r].data(), bytes_);
    if (r != me_) return;
    fill<T>(local_model_.data(), local_model_.size(), mix(salt, 999));
    local_real_ = local_model_;
  }

  /// A typed view of buffer A, B or sig with `shape` (it always fits the buffer).
  template <class T>
  DistributedTensor<T> view(SetBuffer which, const Dims& shape) const {
    const ByteView& v = which == kA ? a_ : which == kB ? b_ : sig_;
    return detail::Access::make<DistributedTensor<T>>(v.ref(), shape, v.state());
  }
  Area model_area(int r, SetBuffer which, const Dims& shape) { return Area{model_[r].data() + rel(which), shape}; }
  template <class T>
  Tensor<T> local(const Dims& shape) {
    return Tensor<T>(reinterpret_cast<T*>(local_real_.data() + kGuard), shape);
  }
  Area local_model(const Dims& shape) { return Area{local_model_.data() + kGuard, shape}; }

  /// "" when every image matches memory; otherwise where the first byte differs.
  std::string compare() {
    for (int r = 0; r < p_; ++r) {
      const Index at = first_diff(real(r), model_[r].data(), bytes_);
      if (at >= 0) return "rank " + std::to_string(r) + "'s window: " + where(static_cast<std::uint64_t>(at));
    }
    const Index at = first_diff(local_real_.data(), local_model_.data(), local_real_.size());
    if (at < 0) return {};
    const Index in = at - static_cast<Index>(kGuard);
    return "rank-local buffer: byte " + std::to_string(in) +
           (in < 0 || in >= static_cast<Index>(kArea) ? " (a guard byte)" : " of the operand") + " changed";
  }

  /// Makes the images agree with memory again after a reported mismatch.
  void resync() {
    for (int r = 0; r < p_; ++r) std::memcpy(model_[r].data(), real(r), bytes_);
    local_model_ = local_real_;
  }

 private:
  std::string where(std::uint64_t at) const {
    for (SetBuffer k : {kA, kB, kSigBuf})
      if (at >= rel(k) && at < rel(k) + kSetSizes[k])
        return "byte " + std::to_string(at - rel(k)) + " of buffer '" + kSetNames[k] + "' differs from the model";
    return "guard byte " + std::to_string(at) + " of the set (outside every operand) changed";
  }

  CommCtx ctx_;
  int me_, p_;
  ByteView a_, b_, sig_;
  RankLog log_;
  std::uint64_t start_ = 0, bytes_ = 0;
  std::vector<std::vector<std::byte>> model_;
  std::vector<std::byte> local_real_, local_model_;
};

/// The arguments of one kernel-op case (each op uses the fields it needs).
struct OpCase {
  DType dtype = DType::FP32;
  int peer = 0;
  bool window = false;  // the local operand is this rank's copy of window B (else a rank-local tensor)
  bool region = true;   // put/get: region form (else full slice)
  Dims wshape, lshape, woff, loff, ext, tshape, tvalid;
  Index chunk_rows = 0, chunk_cols = 0;
  bool pipeline = false;
  int mode = 0;  // atomic / NotifyOp / WaitCmp as int
  std::int64_t value = 0;
  std::uint64_t salt = 0;
  bool signal = false;  // put_signal: the signal cell, its NotifyOp (as int) and value
  Dims sshape, soff;
  int smode = 0;
  std::int64_t svalue = 0;

  std::string str() const {
    std::string s = std::string("dtype ") + dtype_name(dtype) + " peer " + std::to_string(peer) +
                    (window ? " local=window B" : " local=rank tensor");
    auto add = [&](const char* name, const Dims& d) {
      if (d.size() || name[0] == 'w') s += std::string(" ") + name + " " + d.str();
    };
    add("wshape", wshape), add("lshape", lshape), add("woff", woff), add("loff", loff), add("ext", ext);
    add("tshape", tshape), add("tvalid", tvalid);
    s += " region " + std::to_string(region) + " chunks " + std::to_string(chunk_rows) + "x" +
         std::to_string(chunk_cols) + (pipeline ? " pipeline" : "") + " mode " + std::to_string(mode) + " value " +
         std::to_string(value);
    if (signal)
      s += " signal " + sshape.str() + " at " + soff.str() + " op " + std::to_string(smode) + " value " +
           std::to_string(svalue);
    return s;
  }
};

/// The domain-local rank that runs case `index` (of a test with P world ranks) in its domain.
inline int case_actor(int p, std::int64_t index) {
  const auto n = static_cast<std::int64_t>(case_domain(p, index).size());
  return static_cast<int>((p == 1 ? index : index / 2) % n);
}

/// Rank side of one op's run: the cases of [start, end) that belong to this rank in this domain
/// part (case_part), each drawn by `draw(rng, domain size)`, run and judged by `exec(arena,
/// case)`, then every image compared.
template <class Draw, class Exec>
void arena_cases(Arena& env, const char* name, int op, int p, int part, std::int64_t start, std::int64_t end, Draw draw,
                 Exec exec) {
  const std::uint64_t seed = settings().seed;
  for (std::int64_t i = start; i < end; ++i) {
    if (case_part(p, i) != part || case_actor(p, i) != env.me()) continue;
    env.log().start(i);
    Rng r = case_rng(seed, op, p, i);
    const auto c = draw(r, env.p());
    Verdict v = exec(env, c);
    const std::string mem = env.compare();
    if (!mem.empty()) {
      v.problem += (v.problem.empty() ? "" : "; ") + mem;
      env.resync();
    }
    if (!v.problem.empty())
      env.log().fail(case_tag(name, p, i) + " domain rank " + std::to_string(env.me()) + " of " +
                     std::to_string(env.p()) + ": " + c.str() + ": " + v.problem);
    env.log().done(v.error);
    if (env.log().failures() >= kMaxFailures) {
      env.log().fail(std::string(name) + ": rank " + std::to_string(env.me()) + " stops after " +
                     std::to_string(kMaxFailures) + " failures");
      return;
    }
  }
}

/// Allocates one set per rank in the world and in the sub-domain (case_domain) and runs
/// `kernel(pre, A, B, sig, post, counters, log, op, P, part, start, end)` on every member of each,
/// with its own set.
template <class Kernel>
void launch_sets(int p, double wait_timeout, Kernel kernel, int op, std::int64_t start, std::int64_t end,
                 const Logs& logs) {
  run(test::ranks(p, wait_timeout), [&](Host& h) {
    for (int part = 0; part < (p > 1 ? 2 : 1); ++part) {
      const std::vector<int> members = case_domain(p, part);
      CommDomain d = part == 0 ? h.world() : h.domain(members);
      std::vector<std::array<ByteView, kSetBuffers>> sets(members.size());
      for (std::size_t m = 0; m < members.size(); ++m)
        for (int k = 0; k < kSetBuffers; ++k) {
          auto buf = d.alloc_window_buffer(kSetSizes[k], std::string(kSetNames[k]) + std::to_string(m));
          sets[m][k] = d.window<std::uint8_t>(buf, {static_cast<Index>(kSetSizes[k])});
        }
      for (std::size_t m = 0; m < members.size(); ++m) {
        const auto& s = sets[m];
        const int r = members[m];
        h.dispatch(r, kernel, s[kPre], s[kA], s[kB], s[kSigBuf], s[kPost], logs.counters[r], logs.text[r], op, p, part,
                   start, end);
      }
    }
  });
}

/// "domain of n ranks, rank a: " for the host's description of case `index`.
inline std::string case_where(int p, std::int64_t index) {
  return "domain of " + std::to_string(case_domain(p, index).size()) + " ranks, domain rank " +
         std::to_string(case_actor(p, index)) + ": ";
}

}  // namespace pld::fuzz
