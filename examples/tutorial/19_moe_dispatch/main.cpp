// Step 19 — MoE dispatch: each token reserves its slot on its expert's rank with one atomic.
//
// Expert parallelism as a mixture-of-experts layer runs it: every rank holds TOKENS tokens (rows of
// HIDDEN floats) and one expert; a router sends each token to one expert, the expert processes
// what it received, and the results go back to the tokens' owners.
//   1. dispatch  for each token: slot = atomic_fetch_add(count on the expert's rank, 1), then put
//                the token into row `slot` of the expert's inbox and its origin into `origin`
//   2. barrier   every token has landed
//   3. expert    rank e processes its count rows (here: y = x * (e + 1)) and puts each result
//                back into row t of the owner's `result`
//   4. barrier   every result has landed
// The slot order differs from run to run (whichever token's fetch_add comes first); the results
// do not. The README compares it with the histogram + prefix-sum dispatch of step 16's style.
//
// Concepts introduced:
//   - pld::system::atomic_fetch_add: a fetching atomic on a peer's window cell; the old value is
//     the caller's own, unique slot
//   - windows of int64 cells (alloc_window_buffer with DType::INT64), read with atomic_fetch
//   - an atomic is a release, a barrier the acquire that makes every put visible
//
// Run:  ./19_moe_dispatch -d 0,1,2,3      (any number of ranks; one expert per rank)
#include "tutorial.hpp"

#include <pld/pld.hpp>

#include <cstdint>
#include <cstdio>

constexpr pld::Index TOKENS = 16;  // tokens per rank
constexpr pld::Index HIDDEN = 8;   // floats per token

// The router: the expert (= rank) of token t of rank r. Uneven on purpose (from 3 ranks on), as
// real routers are: experts receive different numbers of tokens.
int route(int r, pld::Index t, int n) {
  return static_cast<int>((r + 1) * (t + 3) / 2 % n);
}

// =============================================================================================
// STEP 1-4: the kernel. Windows: count ([1], int32), inbox ([P * TOKENS, HIDDEN] fp32), origin
// ([P * TOKENS, 1] int64: source rank * TOKENS + token), result ([TOKENS, HIDDEN] fp32), signal.
// =============================================================================================
void moe_kernel(pld::Tensor<float> tokens, pld::Tensor<float> out, pld::Tensor<int32_t> received,
                pld::DistributedTensor<int32_t> count, pld::DistributedTensor<float> inbox,
                pld::DistributedTensor<int64_t> origin, pld::DistributedTensor<float> result,
                pld::DistributedTensor<int32_t> signal) {
  const pld::CommCtx ctx = pld::get_comm_ctx(count);
  const int me = pld::rank(ctx), n = pld::nranks(ctx);

  // STEP 1: dispatch. The fetch_add returns the expert's counter before my increment: a slot
  // nobody else gets. The puts that follow go to that row only, so no two tokens collide.
  for (pld::Index t = 0; t < TOKENS; ++t) {
    const int expert = route(me, t, n);
    const int32_t slot = pld::system::atomic_fetch_add(count, expert, {0}, 1);
    pld::tile::remote_store(pld::tile::load(tokens, {t, 0}, {1, HIDDEN}), inbox, expert, {slot, 0});
    pld::tile::remote_store(pld::tile::full<int64_t>({1, 1}, me * TOKENS + t), origin, expert, {slot, 0});
  }

  // STEP 2: every token of every rank is in its expert's inbox after the barrier.
  pld::tensor::barrier(signal);

  // STEP 3: the expert. My counter now holds how many tokens I received.
  const int32_t mine = pld::system::atomic_fetch(count, me, {0});
  for (int32_t s = 0; s < mine; ++s) {
    const pld::Tile<float> y = pld::tile::mul(pld::tile::load(inbox, {s, 0}, {1, HIDDEN}), static_cast<float>(me + 1));
    const int64_t from = pld::tile::read(origin, {s, 0});
    pld::tile::remote_store(y, result, static_cast<int>(from / TOKENS), {from % TOKENS, 0});
  }

  // STEP 4: every result is home after the second barrier.
  pld::tensor::barrier(signal);
  pld::tensor::get(out, me, result);
  received(0) = mine;
}

// =============================================================================================
// STEP 5: the host orchestrator: the windows, one dispatch per rank.
// =============================================================================================
void moe_program(pld::Host& h, pld::HostTensor<float>& tokens, pld::HostTensor<float>& out,
                 pld::HostTensor<int32_t>& received) {
  const int P = h.world_size();
  const pld::Index cap = P * TOKENS;  // an expert may receive every token
  auto count = h.alloc_window_buffer({1}, pld::DType::INT32, "count");
  auto inbox = h.alloc_window_buffer({cap, HIDDEN}, pld::DType::FP32, "inbox");
  auto origin = h.alloc_window_buffer({cap, 1}, pld::DType::INT64, "origin");
  auto result = h.alloc_window_buffer({TOKENS, HIDDEN}, pld::DType::FP32, "result");
  auto signal = h.alloc_window_buffer({P, 1}, pld::DType::INT32, "signal");
  for (int r = 0; r < P; ++r)
    h.dispatch(r, moe_kernel, tokens[r], out[r], received[r], h.window<int32_t>(count, {1}),
               h.window<float>(inbox, {cap, HIDDEN}), h.window<int64_t>(origin, {cap, 1}),
               h.window<float>(result, {TOKENS, HIDDEN}), h.window<int32_t>(signal, {P, 1}));
}

int main(int argc, char** argv) {
  const pld::DistributedConfig config = tutorial::parse_devices(
      argc, argv, "19_moe_dispatch", "Step 19: MoE dispatch, each token reserving its slot with atomic_fetch_add");
  const int P = config.world_size();

  return tutorial::guarded([&] {
    auto tokens = tutorial::small_integers({P, TOKENS, HIDDEN}, /*seed=*/191);
    auto out = pld::HostTensor<float>::zeros({P, TOKENS, HIDDEN});
    auto received = pld::HostTensor<int32_t>::zeros({P, 1});
    pld::run(config, moe_program, tokens, out, received);

    // =========================================================================================
    // STEP 6: the golden: each token times its expert's factor; each expert's load.
    // =========================================================================================
    auto out_want = pld::HostTensor<float>::zeros({P, TOKENS, HIDDEN});
    auto received_want = pld::HostTensor<int32_t>::zeros({P, 1});
    for (int r = 0; r < P; ++r)
      for (pld::Index t = 0; t < TOKENS; ++t) {
        const int e = route(r, t, P);
        received_want(e, 0) += 1;
        for (pld::Index i = 0; i < HIDDEN; ++i) out_want(r, t, i) = tokens(r, t, i) * static_cast<float>(e + 1);
      }
    std::printf("tokens per expert:");
    for (int e = 0; e < P; ++e) std::printf(" %d", received(e, 0));
    std::printf("\n");

    tutorial::Checker check;
    check.expect("received", received, received_want);
    check.expect("out", out, out_want);
    return check.report();
  });
}
