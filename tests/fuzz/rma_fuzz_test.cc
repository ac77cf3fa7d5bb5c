// Randomized arguments for tensor::put / get (full slice and region, chunk_rows / chunk_cols /
// pipeline, AtomicType::Add), their non-blocking forms put_nbi / get_nbi (each followed by
// system::quiet), put_signal and put_signal_nbi (a put and a signal cell), tensor::remote_store,
// and system::notify / wait at random cells and peers, against the model (fuzz/model.hpp) with
// guard bytes around every operand (fuzz/arena.hpp). Seeds and case counts: fuzz/fuzz.hpp.
#include "fuzz/arena.hpp"

namespace pld::fuzz {
namespace {

enum RmaOp : int {
  kPut = 10,
  kGet,
  kRemoteStore,
  kNotify,
  kWait,
  kPutNbi,
  kGetNbi,
  kPutSignal,
  kPutSignalNbi,
  kRmaEnd
};
constexpr const char* kRmaOpNames[] = {
    "tensor::put",     "tensor::get",        "tensor::remote_store",  "notify", "wait", "tensor::put_nbi",
    "tensor::get_nbi", "tensor::put_signal", "tensor::put_signal_nbi"};
const char* rma_name(int op) {
  return kRmaOpNames[op - kPut];
}

bool peer_ok(int peer, int p) {
  return peer >= 0 && peer < p;
}

bool cell_ok(const Dims& shape, const Dims& offsets) {
  if (offsets.size() != shape.size()) return false;
  for (int d = 0; d < shape.size(); ++d)
    if (offsets[d] < 0 || offsets[d] >= shape[d]) return false;
  return true;
}

Index draw_chunk(Rng& r) {
  const Index values[] = {0, 0, 1, 2, 3, 7, INT64_MAX, Index{1} << 62, -1, INT64_MIN};
  return r.pick(values);
}

// put / get: a window operand (A, on the peer) and a local one (rank tensor or this rank's B).
void draw_transfer(Rng& r, OpCase& c) {
  const std::size_t esz = dtype_size(c.dtype);
  c.wshape = draw_shape(r, esz, kArea);
  c.region = r.chance(70);
  c.lshape = c.wshape;
  if (c.region)
    for (int d = 0; d < c.lshape.size(); ++d)
      if (c.lshape[d] < 64) c.lshape[d] = std::max<Index>(0, c.lshape[d] + r.range(-1, 2));
  if (r.chance(4) && c.lshape.size() > 0) c.lshape = c.lshape.drop_front();  // rank mismatch
  if (c.lshape.size() == 0 && esz > kArea) c.lshape = Dims{0};
  for (int d = 0; d < c.lshape.size() && !shape_ok(c.lshape); ++d)  // a tensor shape pld accepts
    if (c.lshape[d] > 64) c.lshape[d] = 1;
  while (numel_exact(c.lshape) * static_cast<Wide>(esz) > static_cast<Wide>(kArea)) {
    int big = 0;
    for (int d = 1; d < c.lshape.size(); ++d)
      if (c.lshape[d] > c.lshape[big]) big = d;
    c.lshape[big] /= 2;
  }
  Dims common = c.wshape;
  for (int d = 0; d < common.size() && d < c.lshape.size(); ++d) common[d] = std::min(common[d], c.lshape[d]);
  const Box b = draw_box(r, common);
  c.ext = b.extent;
  for (int d = 0; d < c.ext.size(); ++d) {
    c.woff.push_back(
        d < c.wshape.size() && c.ext[d] >= 0 && c.wshape[d] >= c.ext[d] ? r.range(0, c.wshape[d] - c.ext[d]) : 0);
    c.loff.push_back(
        d < c.lshape.size() && c.ext[d] >= 0 && c.lshape[d] >= c.ext[d] ? r.range(0, c.lshape[d] - c.ext[d]) : 0);
  }
  if (r.chance(15) && c.woff.size() > 0) c.woff[static_cast<int>(r.below(c.woff.size()))] = boundary_index(r, 2);
  if (r.chance(15) && c.loff.size() > 0) c.loff[static_cast<int>(r.below(c.loff.size()))] = boundary_index(r, 2);
  if (r.chance(50)) {
    c.chunk_rows = draw_chunk(r);
    c.chunk_cols = draw_chunk(r);
    c.pipeline = r.chance(30);
  }
}

// put_signal's signal: a cell of the signal buffer (sometimes outside it), an op, a value.
void draw_signal(Rng& r, OpCase& c) {
  c.sshape = draw_shape(r, 4, kSig);
  c.soff = draw_box(r, c.sshape).offsets;
  const std::int64_t values[] = {1, -1, 0, 2, 7, INT32_MAX, INT32_MIN, 1000};
  c.svalue = r.pick(values);
  const int modes[] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, -1};
  c.smode = r.pick(modes);
}

OpCase draw_rma(int op, Rng& r, int p) {
  OpCase c;
  c.dtype = op == kNotify || op == kWait ? DType::INT32 : draw_dtype(r);
  c.salt = r.next();
  c.window = op != kRemoteStore && r.chance(50);
  c.peer = draw_peer(r, p);
  const int atomics[] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, -1};
  const std::size_t esz = dtype_size(c.dtype);
  if (op == kPut || op == kGet) {
    draw_transfer(r, c);
    if (op == kPut) c.mode = r.pick(atomics);
  } else if (op >= kPutNbi) {
    draw_transfer(r, c);
    if (op != kGetNbi) c.mode = r.pick(atomics);
    c.signal = op == kPutSignal || op == kPutSignalNbi;
    if (c.signal) draw_signal(r, c);
  } else if (op == kRemoteStore) {
    c.wshape = draw_shape(r, esz, kArea, r.chance(92) ? 2 : 0);
    const Box b = draw_box(r, c.wshape);
    c.woff = b.offsets;
    const int k = r.chance(5) ? static_cast<int>(r.range(0, 1)) : static_cast<int>(r.range(2, 4));
    for (int d = 0; d < k; ++d) {
      const int from = b.extent.size() - (k - d);
      c.lshape.push_back(d + 2 < k ? 1 : from >= 0 ? std::clamp<Index>(b.extent[from], 0, 9) : 1);
    }
    if (k > 2 && r.chance(5)) c.lshape[0] = 2;
    c.mode = r.pick(atomics);
  } else {
    c.wshape = draw_shape(r, 4, kSig);
    c.woff = draw_box(r, c.wshape).offsets;
    const std::int64_t values[] = {1, -1, 0, 2, 7, INT32_MAX, INT32_MIN, 1000};
    c.value = op == kWait ? r.pick(values) & INT64_MAX % 4096 : r.pick(values);
    const int notify_modes[] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, -1};
    const int wait_modes[] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 3, 4, 5, 6, -1};  // WaitCmp Eq..Le, and invalid ones
    c.mode = op == kWait ? r.pick(wait_modes) : r.pick(notify_modes);
  }
  return c;
}

bool chunks_ok(const OpCase& c) {
  return c.chunk_rows >= 0 && c.chunk_cols >= 0 && (!c.pipeline || (c.chunk_rows > 0 && c.chunk_cols > 0));
}

bool transfer_ok(const OpCase& c) {
  if (c.wshape.size() != c.lshape.size()) return false;
  return c.region ? box_ok(c.wshape, c.woff, c.ext) && box_ok(c.lshape, c.loff, c.ext) : c.wshape == c.lshape;
}

/// The model of a valid notify: `peer`'s cell `off` of a signal buffer of `shape` becomes `value`
/// (Set, mode 1) or grows by it (AtomicAdd, mode 0; wrapping).
void model_notify(Arena& env, int peer, const Dims& shape, const Dims& off, int mode, std::int32_t v) {
  std::byte* cell = env.model_area(peer, kSigBuf, shape).base + linear_of(shape, off) * 4;
  std::int32_t now = mode == 1 ? v
                               : static_cast<std::int32_t>(static_cast<std::uint32_t>(load_elem<std::int32_t>(cell)) +
                                                           static_cast<std::uint32_t>(v));
  std::memcpy(cell, &now, 4);
}

// put, get and their non-blocking and signalling forms; a non-blocking one is followed by quiet.
template <class T>
Verdict exec_transfer(Arena& env, const OpCase& c, int op) {
  const bool put = op != kGet && op != kGetNbi, nbi = op == kPutNbi || op == kGetNbi || op == kPutSignalNbi;
  const bool atomic_ok = !put || c.mode == 0 || (c.mode == 1 && atomic_dtype(c.dtype));
  const bool signal_ok = !c.signal || ((c.smode == 0 || c.smode == 1) && cell_ok(c.sshape, c.soff));
  const bool valid = peer_ok(c.peer, env.p()) && atomic_ok && chunks_ok(c) && transfer_ok(c) && signal_ok;
  const auto dst = env.view<T>(kA, c.wshape);
  const auto sig = env.view<std::int32_t>(kSigBuf, c.sshape);
  const Attempt a = attempt([&] {
    const PutOptions po{static_cast<AtomicType>(c.mode), c.chunk_rows, c.chunk_cols, c.pipeline};
    const GetOptions go{c.chunk_rows, c.chunk_cols, c.pipeline};
    const auto sv = static_cast<std::int32_t>(c.svalue);
    const auto sop = static_cast<NotifyOp>(c.smode);
    auto call = [&](const auto& local) {
      switch (op) {
        case kPut:
          return c.region ? tensor::put(dst, c.peer, local, c.woff, c.loff, c.ext, po)
                          : tensor::put(dst, c.peer, local, po);
        case kGet:
          return c.region ? tensor::get(local, c.peer, dst, c.loff, c.woff, c.ext, go)
                          : tensor::get(local, c.peer, dst, go);
        case kPutNbi:
          return c.region ? tensor::put_nbi(dst, c.peer, local, c.woff, c.loff, c.ext, po)
                          : tensor::put_nbi(dst, c.peer, local, po);
        case kGetNbi:
          return c.region ? tensor::get_nbi(local, c.peer, dst, c.loff, c.woff, c.ext, go)
                          : tensor::get_nbi(local, c.peer, dst, go);
        case kPutSignal:
          return c.region ? tensor::put_signal(dst, c.peer, local, c.woff, c.loff, c.ext, sig, c.soff, sv, sop, po)
                          : tensor::put_signal(dst, c.peer, local, sig, c.soff, sv, sop, po);
        default:
          return c.region ? tensor::put_signal_nbi(dst, c.peer, local, c.woff, c.loff, c.ext, sig, c.soff, sv, sop, po)
                          : tensor::put_signal_nbi(dst, c.peer, local, sig, c.soff, sv, sop, po);
      }
    };
    if (c.window)
      call(env.view<T>(kB, c.lshape));
    else
      call(env.local<T>(c.lshape));
    if (nbi) system::quiet();
  });
  if (valid) {
    const Dims ext = c.region ? c.ext : c.wshape;
    const Dims woff = c.region ? c.woff : zeros(ext.size()), loff = c.region ? c.loff : zeros(ext.size());
    const Area win = env.model_area(c.peer, kA, c.wshape);
    const Area local = c.window ? env.model_area(env.me(), kB, c.lshape) : env.local_model(c.lshape);
    if (put)
      model_copy<T>(win, woff, local, loff, ext, c.mode == 1);
    else
      model_copy<T>(local, loff, win, woff, ext, false);
    if (c.signal) model_notify(env, c.peer, c.sshape, c.soff, c.smode, static_cast<std::int32_t>(c.svalue));
  }
  return verdict(a, valid, rma_name(op));
}

template <class T>
Verdict exec_remote_store(Arena& env, const OpCase& c) {
  const int n = c.wshape.size(), k = c.lshape.size();
  bool lead_ones = true;
  for (int d = 0; d + 2 < k; ++d) lead_ones = lead_ones && c.lshape[d] == 1;
  const Dims in = k >= 2 ? Dims{c.lshape[k - 2], c.lshape[k - 1]} : Dims{};
  const bool atomic_ok = c.mode == 0 || (c.mode == 1 && atomic_dtype(c.dtype));
  const bool valid = peer_ok(c.peer, env.p()) && atomic_ok && n >= 2 && k >= 2 && lead_ones &&
                     box_ok(c.wshape, c.woff, pad_leading(in, n));
  const Attempt a = attempt([&] {
    tensor::remote_store(env.local<T>(c.lshape), env.view<T>(kA, c.wshape), c.peer, c.woff,
                         static_cast<AtomicType>(c.mode));
  });
  if (valid)
    model_copy<T>(env.model_area(c.peer, kA, c.wshape), c.woff, env.local_model(c.lshape), zeros(k), in, c.mode == 1);
  return verdict(a, valid, "tensor::remote_store");
}

Verdict exec_notify(Arena& env, const OpCase& c) {
  const bool valid = (c.mode == 0 || c.mode == 1) && peer_ok(c.peer, env.p()) && cell_ok(c.wshape, c.woff);
  const auto v = static_cast<std::int32_t>(c.value);
  const Attempt a = attempt([&] {
    system::notify(env.view<std::int32_t>(kSigBuf, c.wshape), c.peer, c.woff, v, static_cast<NotifyOp>(c.mode));
  });
  if (valid) model_notify(env, c.peer, c.wshape, c.woff, c.mode, v);
  return verdict(a, valid, "notify");
}

// A wait whose condition already holds (the model knows the cell): a valid wait must return.
// Cells hold small values (fuzz/model.hpp), so cur +- 1 never overflows.
Verdict exec_wait(Arena& env, const OpCase& c) {
  const bool valid = c.mode >= 0 && c.mode <= 5 && cell_ok(c.wshape, c.woff);
  std::int32_t expected = static_cast<std::int32_t>(c.value);
  if (cell_ok(c.wshape, c.woff)) {
    const std::int32_t cur =
        load_elem<std::int32_t>(env.model_area(env.me(), kSigBuf, c.wshape).base + linear_of(c.wshape, c.woff) * 4);
    switch (static_cast<WaitCmp>(c.mode)) {
      case WaitCmp::Ge:
        expected = static_cast<std::int32_t>(std::max<std::int64_t>(INT32_MIN, std::int64_t{cur} - c.value));
        break;
      case WaitCmp::Ne: expected = cur ^ 1; break;
      case WaitCmp::Gt: expected = cur - 1; break;
      case WaitCmp::Lt: expected = cur + 1; break;
      default: expected = cur; break;  // Eq, Le, and the invalid values
    }
  }
  const Attempt a = attempt(
      [&] { system::wait(env.view<std::int32_t>(kSigBuf, c.wshape), c.woff, expected, static_cast<WaitCmp>(c.mode)); });
  return verdict(a, valid, "wait");
}

template <class T>
Verdict exec_rma(int op, Arena& env, const OpCase& c) {
  env.refill<T>(env.me(), c.salt);
  if (peer_ok(c.peer, env.p()) && c.peer != env.me()) env.refill<T>(c.peer, c.salt);
  switch (op) {
    case kRemoteStore: return exec_remote_store<T>(env, c);
    case kNotify: return exec_notify(env, c);
    case kWait: return exec_wait(env, c);
    default: return exec_transfer<T>(env, c, op);
  }
}

void rma_kernel(ByteView pre, ByteView a, ByteView b, ByteView sig, ByteView post, Tensor<std::int64_t> counters,
                Tensor<std::uint8_t> log, int op, int p, int part, std::int64_t start, std::int64_t end) {
  Arena env(pre, a, b, sig, post, RankLog(counters, log));
  arena_cases(
      env, rma_name(op), op, p, part, start, end, [op](Rng& r, int n) { return draw_rma(op, r, n); },
      [op](Arena& e, const OpCase& c) {
        return with_dtype(c.dtype, [&]<class T>() { return exec_rma<T>(op, e, c); });
      });
}

class RmaFuzz : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(RmaFuzz, RightResultOrNamedError) {
  PLD_REQUIRE_SHM();
  const auto [op, p] = GetParam();
  // A wait the model expects to fail but the library accepts would block: a short deadline.
  const double deadline = op == kWait ? 0.5 : 20;
  run_cases(
      rma_name(op), p,
      [&](std::int64_t start, std::int64_t end, const Logs& logs) {
        launch_sets(p, deadline, rma_kernel, op, start, end, logs);
      },
      [&](std::int64_t i) {
        Rng r = case_rng(settings().seed, op, p, i);
        return case_where(p, i) + draw_rma(op, r, static_cast<int>(case_domain(p, i).size())).str();
      });
}

INSTANTIATE_TEST_SUITE_P(Ops, RmaFuzz,
                         ::testing::Combine(::testing::Range(int{kPut}, int{kRmaEnd}), ::testing::Range(1, kMaxP + 1)),
                         [](const auto& info) {
                           std::string name = rma_name(std::get<0>(info.param));
                           const auto colon = name.rfind(':');
                           if (colon != std::string::npos) name = name.substr(colon + 1);
                           return name + "_P" + std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace pld::fuzz
