// Randomized arguments for the tile ops: load, store, read, write, remote_load and remote_store
// (AtomicType::Add included), against the model (fuzz/model.hpp) with guard bytes around every
// operand (fuzz/arena.hpp). Seeds and case counts: fuzz/fuzz.hpp.
#include "fuzz/arena.hpp"

namespace pld::fuzz {
namespace {

enum TileOp : int { kLoad, kStore, kRead, kWrite, kRemoteLoad, kRemoteStore, kTileOps };
constexpr const char* kTileOpNames[kTileOps] = {"tile::load",  "tile::store",       "tile::read",
                                                "tile::write", "tile::remote_load", "tile::remote_store"};

bool peer_ok(int peer, int p) {
  return peer >= 0 && peer < p;
}

/// The inner two extents of a store, small and non-negative.
Dims inner_of(const Dims& extent) {
  Dims in{1, 1};
  for (int k = 0; k < 2 && k < extent.size(); ++k) in[1 - k] = std::clamp<Index>(extent[extent.size() - 1 - k], 0, 9);
  return in;
}

OpCase draw_tile_op(int op, Rng& r, int p) {
  OpCase c;
  c.dtype = draw_dtype(r);
  c.salt = r.next();
  c.window = r.chance(50);
  c.peer = draw_peer(r, p);
  const std::size_t esz = dtype_size(c.dtype);
  const bool remote = op == kRemoteLoad || op == kRemoteStore;
  Dims& shape = remote ? c.wshape : c.lshape;
  shape = draw_shape(r, esz, kArea, op == kRemoteStore && r.chance(92) ? 2 : 0);
  const Box box = draw_box(r, shape);
  (remote ? c.woff : c.loff) = box.offsets;
  if (op == kLoad || op == kRemoteLoad) {
    draw_tile_shape(r, esz, box.extent, c.tshape, c.tvalid);
  } else if (op == kStore) {
    const int n = shape.size();
    const int k = r.chance(6) && n < kMaxDims ? n + 1 : static_cast<int>(r.range(0, n));
    for (int d = n - std::min(k, n); d < n; ++d) c.tvalid.push_back(std::clamp<Index>(box.extent[d], 0, 9));
    if (k > n) c.tvalid = pad_leading(c.tvalid, k);
    c.tshape = c.tvalid;
    for (int d = 0; d < c.tshape.size(); ++d) c.tshape[d] += r.chance(20) ? 1 : 0;
  } else if (op == kRemoteStore) {
    const int k = r.chance(5) ? static_cast<int>(r.range(0, 1)) : static_cast<int>(r.range(2, 4));
    const Dims in = inner_of(box.extent);
    for (int d = 0; d < k; ++d) c.tvalid.push_back(d + 2 >= k ? in[d + 2 - k] : 1);
    c.tshape = c.tvalid;
    for (int d = 0; d < k; ++d) c.tshape[d] += d + 2 >= k && r.chance(20) ? 1 : 0;
    if (k > 2 && r.chance(5)) c.tshape[0] = 2;  // a leading dimension that is not 1
    const int modes[] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, -1};
    c.mode = r.pick(modes);
  } else {
    c.value = r.range(-3, 3);
  }
  return c;
}

/// A tile of `shape` / `valid` filled with the case's values.
template <class T>
Tile<T> source_tile(const OpCase& c) {
  Tile<T> t(c.tshape, c.tvalid);
  fill<T>(reinterpret_cast<std::byte*>(t.data()), static_cast<std::size_t>(t.numel()) * sizeof(T), c.salt + 7);
  return t;
}

/// Checks a loaded tile: shape, valid shape, the valid box from `src` at `offsets`, zeros elsewhere.
template <class T>
std::string check_tile(const Tile<T>& t, const OpCase& c, const Area& src, const Dims& offsets) {
  if (!(t.shape() == c.tshape) || !(t.valid_shape() == c.tvalid))
    return "tile has shape " + t.shape().str() + " valid " + t.valid_shape().str() + "; expected " + c.tshape.str() +
           " valid " + c.tvalid.str();
  std::vector<std::byte> want(static_cast<std::size_t>(c.tshape.numel()) * sizeof(T), std::byte{0});
  model_copy<T>(Area{want.data(), c.tshape}, zeros(c.tshape.size()), src, offsets, c.tvalid, false);
  const Index at = first_diff(reinterpret_cast<const std::byte*>(t.data()), want.data(), want.size());
  return at < 0 ? std::string()
                : "tile element " + std::to_string(at / static_cast<Index>(sizeof(T))) + " differs from the model";
}

template <class T>
Verdict exec_load(Arena& env, const OpCase& c, bool remote) {
  const int from = remote ? c.peer : env.me();
  const Dims& shape = remote ? c.wshape : c.lshape;
  const Dims& offsets = remote ? c.woff : c.loff;
  const bool valid = (!remote || (peer_ok(c.peer, env.p()) && shape.size() > 0)) && valid_ok(c.tshape, c.tvalid) &&
                     shape_ok(c.tshape) && c.tshape.size() == shape.size() && box_ok(shape, offsets, c.tvalid) &&
                     !tile_too_big(c.tshape, sizeof(T));
  Tile<T> t;
  const Attempt a = attempt([&] {
    if (remote)
      t = tile::remote_load(env.view<T>(kA, shape), c.peer, offsets, c.tshape, c.tvalid);
    else if (c.window)
      t = tile::load(env.view<T>(kB, shape), offsets, c.tshape, c.tvalid);
    else
      t = tile::load(env.local<T>(shape), offsets, c.tshape, c.tvalid);
  });
  Verdict v = verdict(a, valid, remote ? "tile::remote_load" : "tile::load");
  if (!v.problem.empty() || a.threw || !valid || !peer_ok(from, env.p())) return v;
  const Area src = remote     ? env.model_area(c.peer, kA, shape)
                   : c.window ? env.model_area(env.me(), kB, shape)
                              : env.local_model(shape);
  v.problem = check_tile(t, c, src, offsets);
  return v;
}

template <class T>
Verdict exec_store(Arena& env, const OpCase& c) {
  const int n = c.lshape.size();
  const bool valid = c.tvalid.size() <= n && box_ok(c.lshape, c.loff, pad_leading(c.tvalid, n));
  const Tile<T> t = source_tile<T>(c);
  const Attempt a = attempt([&] {
    if (c.window)
      tile::store(t, c.loff, env.view<T>(kB, c.lshape));
    else
      tile::store(t, c.loff, env.local<T>(c.lshape));
  });
  if (valid) {
    const Area dst = c.window ? env.model_area(env.me(), kB, c.lshape) : env.local_model(c.lshape);
    model_copy<T>(dst, c.loff, Area{const_cast<std::byte*>(reinterpret_cast<const std::byte*>(t.data())), c.tshape},
                  zeros(c.tshape.size()), c.tvalid, false);
  }
  return verdict(a, valid, "tile::store");
}

template <class T>
Verdict exec_element(Arena& env, const OpCase& c, bool write) {
  bool valid = c.loff.size() == c.lshape.size();
  for (int d = 0; valid && d < c.lshape.size(); ++d) valid = c.loff[d] >= 0 && c.loff[d] < c.lshape[d];
  const Area m = c.window ? env.model_area(env.me(), kB, c.lshape) : env.local_model(c.lshape);
  const T value = static_cast<T>(static_cast<float>(c.value));
  T got{};
  const Attempt a = attempt([&] {
    if (write && c.window)
      tile::write(env.view<T>(kB, c.lshape), c.loff, value);
    else if (write)
      tile::write(env.local<T>(c.lshape), c.loff, value);
    else if (c.window)
      got = tile::read(env.view<T>(kB, c.lshape), c.loff);
    else
      got = tile::read(env.local<T>(c.lshape), c.loff);
  });
  Verdict v = verdict(a, valid, write ? "tile::write" : "tile::read");
  if (!valid) return v;
  std::byte* at = m.base + linear_of(c.lshape, c.loff) * static_cast<Index>(sizeof(T));
  if (write)
    std::memcpy(at, &value, sizeof(T));
  else if (v.problem.empty() && !a.threw && std::memcmp(&got, at, sizeof(T)) != 0)
    v.problem = "read returned a value that is not the element's";
  return v;
}

template <class T>
Verdict exec_remote_store(Arena& env, const OpCase& c) {
  const int n = c.wshape.size(), k = c.tshape.size();
  bool lead_ones = true;
  for (int d = 0; d + 2 < k; ++d) lead_ones = lead_ones && c.tshape[d] == 1;
  const Dims in = k >= 2 ? Dims{c.tvalid[k - 2], c.tvalid[k - 1]} : Dims{};
  const bool atomic_ok = c.mode == 0 || (c.mode == 1 && atomic_dtype(c.dtype));
  const bool valid = peer_ok(c.peer, env.p()) && atomic_ok && n >= 2 && k >= 2 && lead_ones &&
                     box_ok(c.wshape, c.woff, pad_leading(in, n));
  const Tile<T> t = source_tile<T>(c);
  const Attempt a = attempt(
      [&] { tile::remote_store(t, env.view<T>(kA, c.wshape), c.peer, c.woff, static_cast<AtomicType>(c.mode)); });
  if (valid)
    model_copy<T>(env.model_area(c.peer, kA, c.wshape), c.woff,
                  Area{const_cast<std::byte*>(reinterpret_cast<const std::byte*>(t.data())), c.tshape}, zeros(k), in,
                  c.mode == 1);
  return verdict(a, valid, "tile::remote_store");
}

template <class T>
Verdict exec_tile_op(int op, Arena& env, const OpCase& c) {
  env.refill<T>(env.me(), c.salt);
  if (peer_ok(c.peer, env.p()) && c.peer != env.me()) env.refill<T>(c.peer, c.salt);
  switch (op) {
    case kLoad: return exec_load<T>(env, c, false);
    case kRemoteLoad: return exec_load<T>(env, c, true);
    case kStore: return exec_store<T>(env, c);
    case kRead: return exec_element<T>(env, c, false);
    case kWrite: return exec_element<T>(env, c, true);
    default: return exec_remote_store<T>(env, c);
  }
}

void tile_kernel(ByteView pre, ByteView a, ByteView b, ByteView sig, ByteView post, Tensor<std::int64_t> counters,
                 Tensor<std::uint8_t> log, int op, int p, int part, std::int64_t start, std::int64_t end) {
  Arena env(pre, a, b, sig, post, RankLog(counters, log));
  arena_cases(
      env, kTileOpNames[op], op, p, part, start, end, [op](Rng& r, int n) { return draw_tile_op(op, r, n); },
      [op](Arena& e, const OpCase& c) {
        return with_dtype(c.dtype, [&]<class T>() { return exec_tile_op<T>(op, e, c); });
      });
}

class TileFuzz : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(TileFuzz, RightResultOrNamedError) {
  PLD_REQUIRE_SHM();
  const auto [op, p] = GetParam();
  run_cases(
      kTileOpNames[op], p,
      [&](std::int64_t start, std::int64_t end, const Logs& logs) {
        launch_sets(p, 20, tile_kernel, op, start, end, logs);
      },
      [&](std::int64_t i) {
        Rng r = case_rng(settings().seed, op, p, i);
        return case_where(p, i) + draw_tile_op(op, r, static_cast<int>(case_domain(p, i).size())).str();
      });
}

INSTANTIATE_TEST_SUITE_P(Ops, TileFuzz,
                         ::testing::Combine(::testing::Range(0, int{kTileOps}), ::testing::Range(1, kMaxP + 1)),
                         [](const auto& info) {
                           std::string name = kTileOpNames[std::get<0>(info.param)];
                           return name.substr(6) + "_P" + std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace pld::fuzz
