// A program built against an installed pld: two ranks exchange their rank numbers.
#include <pld/pld.hpp>

#include <cstdio>

void swap_ranks(pld::DistributedTensor<int32_t> sig, pld::Tensor<int32_t> out) {
  auto ctx = pld::get_comm_ctx(sig);
  const int me = pld::rank(ctx), peer = 1 - me;
  pld::system::notify(sig, peer, {0}, me + 10, pld::NotifyOp::Set);
  pld::system::wait(sig, {0}, peer + 10, pld::WaitCmp::Eq);
  out(0) = pld::tile::read(sig, {0});
}

int main() {
  auto out = pld::HostTensor<int32_t>::zeros({2, 1});
  pld::run(pld::DistributedConfig{.device_ids = {0, 1}}, [&](pld::Host& h) {
    auto b = h.alloc_window_buffer(sizeof(int32_t), "sig");
    for (int r = 0; r < 2; ++r) h.dispatch(r, swap_ranks, h.window<int32_t>(b, {1}), out[r]);
  });
  const bool ok = out(0, 0) == 11 && out(1, 0) == 10;
  std::printf("consumer: %s\n", ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
