// pld quickstart (DESIGN §3): a 4-rank allreduce written with the primitives — stage in, a
// notify/wait barrier, accumulate every peer's window with remote_load, stage out.
#include <pld/pld.hpp>

#include <cstdio>

constexpr pld::Index SIZE = 256;

// Kernel: runs inside each rank process.
void reduce_step(pld::Tensor<float> inp, pld::Tensor<float> out, pld::DistributedTensor<float> data,
                 pld::DistributedTensor<int32_t> signal) {
  auto ctx = pld::get_comm_ctx(data);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);
  pld::tile::store(pld::tile::load(inp, {0, 0}, {1, SIZE}), {0, 0}, data);  // 1. stage in
  for (int p = 0; p < n; ++p)                                               // 2. barrier
    if (p != me) pld::system::notify(signal, p, {me, 0}, 1, pld::NotifyOp::AtomicAdd);
  for (int s = 0; s < n; ++s)
    if (s != me) pld::system::wait(signal, {s, 0}, 1, pld::WaitCmp::Ge);
  auto acc = pld::tile::load(data, {0, 0}, {1, SIZE});  // 3. accumulate
  for (int p = 0; p < n; ++p)
    if (p != me) acc = pld::tile::add(acc, pld::tile::remote_load(data, p, {0, 0}, {1, SIZE}));
  pld::tile::store(acc, {0, 0}, out);  // 4. stage out
}

// Host orchestrator: allocates the windows and dispatches one kernel per rank.
void orchestrator(pld::Host& h, pld::HostTensor<float>& in, pld::HostTensor<float>& out) {
  auto data_buf = h.alloc_window_buffer(SIZE * sizeof(float), "data");  // bytes
  auto sig_buf = h.alloc_window_buffer({h.world_size(), 1}, pld::DType::INT32, "signal");
  for (int r = 0; r < h.world_size(); ++r)
    h.dispatch(r, reduce_step, in[r], out[r], h.window<float>(data_buf, {1, SIZE}),
               h.window<int32_t>(sig_buf, {h.world_size(), 1}));
}

int main() {
  constexpr int kRanks = 4;
  pld::DistributedConfig config{.device_ids = {0, 1, 2, 3}};
  auto in = pld::HostTensor<float>::arange({kRanks, 1, SIZE});
  auto out = pld::HostTensor<float>::zeros({kRanks, 1, SIZE});
  pld::run(config, orchestrator, in, out);  // forks 4 ranks, blocks until all finish

  // Every rank holds the sum over ranks of in[r][0][i] = r * SIZE + i.
  int wrong = 0;
  for (int r = 0; r < kRanks; ++r)
    for (pld::Index i = 0; i < SIZE; ++i) {
      float expect = 0;
      for (int s = 0; s < kRanks; ++s) expect += static_cast<float>(s * SIZE + i);
      if (out(r, 0, i) != expect) ++wrong;
    }
  std::printf("allreduce over %d ranks, %lld floats each: out[0][0][0..3] = %g %g %g %g\n", kRanks,
              static_cast<long long>(SIZE), out(0, 0, 0), out(0, 0, 1), out(0, 0, 2), out(0, 0, 3));
  std::printf("%s\n", wrong ? "MISMATCH" : "OK");
  return wrong ? 1 : 0;
}
