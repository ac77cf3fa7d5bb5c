// bw: put/get bandwidth between ranks 0 and 1, and allreduce / allgather built from MPI RMA
// (put + flush + accumulate notify, waiter polls its cell with MPI_Iprobe) next to Open MPI's
// MPI_Allreduce / MPI_Allgather, fp32, in place, every rank participating.
//
//   mpirun -n 2 ./bw [--min 65536] [--max 16777216] [--reps 20] [--chunk 262144] [--p2p 1]
//
// allreduce schedule "rma-2shot": segment s of the vector belongs to rank s. Phase 1: rank r
// puts its copy of segment s into rank s's staging slot r (chunked: put chunk, flush, notify +1),
// and reduces its own segment chunk by chunk as the peers' chunks land. Phase 2: rank r puts
// its reduced segment into every peer's vector (chunked, notify per chunk) and waits for the
// P-1 other segments. Counters are monotonic (no reset), one cell per (phase, source).
#include "common.h"

#include <algorithm>
#include <vector>

namespace {

MPI_Win g_win;
int g_rank, g_size;
char* g_base;

// cell index: phase (0,1) x source rank
int32_t* cell(int phase, int src) { return reinterpret_cast<int32_t*>(g_base + 64 * (phase * 64 + src)); }
const MPI_Aint kCells = 64 * 128;

void notify(int target, int phase) {
  const int one = 1;
  MPI_Accumulate(&one, 1, MPI_INT, target, 64 * (phase * 64 + g_rank), 1, MPI_INT, MPI_SUM, g_win);
  MPI_Win_flush(target, g_win);
}
void wait_ge(int32_t* c, int32_t v) {
  while (__atomic_load_n(c, __ATOMIC_ACQUIRE) < v) {
    int f;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &f, MPI_STATUS_IGNORE);
  }
  MPI_Win_sync(g_win);
}

}  // namespace

int main(int argc, char** argv) {
  init_mpi(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const size_t min_b = strtoull(arg(argc, argv, "--min", "65536").c_str(), nullptr, 10);
  const size_t max_b = strtoull(arg(argc, argv, "--max", "16777216").c_str(), nullptr, 10);
  const int reps = atoi(arg(argc, argv, "--reps", "20").c_str());
  const size_t chunk = strtoull(arg(argc, argv, "--chunk", "262144").c_str(), nullptr, 10);
  const int p2p = atoi(arg(argc, argv, "--p2p", "1").c_str());
  const size_t p2p_max = 64u << 20;
  const int P = g_size, me = g_rank;

  // Window: cells | vector (max_b) | staging (P x max_b / P) — also used as the put/get target.
  const MPI_Aint vec_off = kCells, stage_off = kCells + static_cast<MPI_Aint>(std::max(max_b, p2p_max));
  const MPI_Aint bytes = stage_off + static_cast<MPI_Aint>(max_b) + 64;
  MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &g_base, &g_win);
  memset(g_base, 0, static_cast<size_t>(bytes));
  MPI_Win_lock_all(MPI_MODE_NOCHECK, g_win);
  MPI_Win_sync(g_win);
  MPI_Barrier(MPI_COMM_WORLD);
  std::string desc;
  describe_window(g_win, me, P, &desc);
  if (me == 0) printf("# P=%d %s\n", P, desc.c_str());

  // 1. put / get bandwidth rank 0 -> 1 (others idle).
  if (p2p) {
    std::vector<char> src(p2p_max, 1);
    std::vector<char> local(p2p_max, 2);
    for (size_t s : {size_t(1) << 20, size_t(16) << 20, size_t(64) << 20}) {
      if (me == 0) {  // memcpy ceiling in this process, same sizes
        const int r = s > (1u << 20) ? 10 : 100;
        const double t0 = now_s();
        for (int i = 0; i < r; ++i) { memcpy(local.data(), src.data(), s); __asm__ volatile("" ::: "memory"); }
        const double t = now_s() - t0;
        printf("memcpy %9zu B: %7.2f GB/s (%.1f us each)\n", s, s * r / t / 1e9, t / r * 1e6);
      }
      for (int kind = 0; kind < 2; ++kind) {
        const int r = s > (1u << 20) ? 10 : 100;
        MPI_Barrier(MPI_COMM_WORLD);
        double t = 0;
        if (me == 0) {
          const double t0 = now_s();
          for (int i = 0; i < r; ++i) {
            if (kind == 0) MPI_Put(src.data(), static_cast<int>(s), MPI_BYTE, 1, vec_off, static_cast<int>(s), MPI_BYTE, g_win);
            else MPI_Get(src.data(), static_cast<int>(s), MPI_BYTE, 1, vec_off, static_cast<int>(s), MPI_BYTE, g_win);
            MPI_Win_flush(1, g_win);
          }
          t = now_s() - t0;
          printf("%-4s %9zu B: %7.2f GB/s (%.1f us each)\n", kind == 0 ? "put" : "get", s, s * r / t / 1e9, t / r * 1e6);
          fflush(stdout);
          notify(1, 0);
        } else if (me == 1) {
          // the target keeps calling MPI (progress) while it waits for the end
          static int32_t expected = 0;
          wait_ge(cell(0, 0), ++expected);
        }
      }
    }
    // reset counters
    MPI_Barrier(MPI_COMM_WORLD);
    memset(g_base, 0, kCells);
    MPI_Win_sync(g_win);
    MPI_Barrier(MPI_COMM_WORLD);
  }

  // 2. allreduce / allgather, fp32.
  if (me == 0) printf("# %10s %12s %12s %12s %12s %12s  (us, median of %d)\n", "bytes", "MPI_Allreduce", "rma-2shot", "ratio",
                      "MPI_Allgathr", "rma-allgathr", reps);
  std::vector<int32_t> gen(2 * 64, 0);  // expected value per (phase, src), monotonic
  float* vec = reinterpret_cast<float*>(g_base + vec_off);
  float* stage = reinterpret_cast<float*>(g_base + stage_off);
  std::vector<float> ref_buf(max_b / 4), gather_out(max_b / 4);
  for (size_t b = min_b; b <= max_b; b *= 4) {
    const size_t n = b / 4;
    auto seg = [&](int s) { size_t lo = n * s / P, hi = n * (s + 1) / P; return std::pair<size_t, size_t>(lo, hi); };
    const size_t chunk_el = std::max<size_t>(1, chunk / 4);
    std::vector<double> t_mpi, t_rma, t_ag_mpi, t_ag_rma;
    bool ok = true;
    for (int rep = 0; rep < reps + 2; ++rep) {
      // MPI_Allreduce
      for (size_t i = 0; i < n; ++i) ref_buf[i] = static_cast<float>((i + me) % 7);
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_s();
      MPI_Allreduce(MPI_IN_PLACE, ref_buf.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double t_a = now_s() - t0;
      // RMA two-shot
      for (size_t i = 0; i < n; ++i) vec[i] = static_cast<float>((i + me) % 7);
      MPI_Win_sync(g_win);
      MPI_Barrier(MPI_COMM_WORLD);  // (pld: the input is staged before the collective starts)
      t0 = now_s();
      // phase 1: push my copy of segment s to rank s's staging slot [me] (slot size = max seg)
      const size_t slot = n / P + 1;
      for (size_t c0 = 0;; c0 += chunk_el) {
        bool any = false;
        for (int k = 1; k < P; ++k) {
          const int s = (me + k) % P;
          auto [lo, hi] = seg(s);
          if (lo + c0 >= hi) continue;
          any = true;
          const size_t len = std::min(chunk_el, hi - lo - c0);
          MPI_Put(vec + lo + c0, static_cast<int>(len), MPI_FLOAT, s,
                  stage_off + static_cast<MPI_Aint>((me * slot + c0) * 4), static_cast<int>(len), MPI_FLOAT, g_win);
        }
        if (!any) break;
        for (int k = 1; k < P; ++k) {
          const int s = (me + k) % P;
          auto [lo, hi] = seg(s);
          if (lo + c0 >= hi) continue;
          MPI_Win_flush(s, g_win);
          notify(s, 0);
        }
      }
      // reduce my segment as chunks land
      auto [mlo, mhi] = seg(me);
      int32_t nchunks = 0;
      for (size_t c0 = 0; mlo + c0 < mhi; c0 += chunk_el) {
        const size_t len = std::min(chunk_el, mhi - mlo - c0);
        ++nchunks;
        for (int k = 1; k < P; ++k) {
          const int src = (me + P - k) % P;
          wait_ge(cell(0, src), gen[src] + nchunks);
          const float* in = stage + src * slot + c0;
          float* out = vec + mlo + c0;
          for (size_t i = 0; i < len; ++i) out[i] += in[i];
        }
        // phase 2 for this chunk: push reduced chunk to every peer
        for (int k = 1; k < P; ++k) {
          const int s = (me + k) % P;
          MPI_Put(vec + mlo + c0, static_cast<int>(len), MPI_FLOAT, s, vec_off + static_cast<MPI_Aint>((mlo + c0) * 4),
                  static_cast<int>(len), MPI_FLOAT, g_win);
        }
        for (int k = 1; k < P; ++k) {
          const int s = (me + k) % P;
          MPI_Win_flush(s, g_win);
          notify(s, 1);
        }
      }
      for (int src = 0; src < P; ++src)
        if (src != me) gen[src] += static_cast<int32_t>(nchunks);  // same chunk count per segment (+-1)
      // wait for every other segment's chunks
      for (int k = 1; k < P; ++k) {
        const int src = (me + P - k) % P;
        auto [lo, hi] = seg(src);
        const int32_t c = static_cast<int32_t>((hi - lo + chunk_el - 1) / chunk_el);
        gen[64 + src] += c;
        wait_ge(cell(1, src), gen[64 + src]);
      }
      double t_r = now_s() - t0;
      // the staging slots are reused next round: nobody may push before everyone has reduced
      MPI_Barrier(MPI_COMM_WORLD);
      for (size_t i = 0; i < n && ok; ++i)
        if (vec[i] != ref_buf[i]) { ok = false; printf("rank %d: rma allreduce wrong at %zu: %g vs %g\n", me, i, vec[i], ref_buf[i]); }
      // allgather: block me (n/P floats) of my vector to every peer, vs MPI_Allgather
      const size_t blk = n / P;
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = now_s();
      MPI_Allgather(ref_buf.data() + me * blk, static_cast<int>(blk), MPI_FLOAT, gather_out.data(), static_cast<int>(blk), MPI_FLOAT,
                    MPI_COMM_WORLD);
      double t_g = now_s() - t0;
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = now_s();
      for (int k = 1; k < P; ++k) {
        const int s = (me + k) % P;
        MPI_Put(vec + me * blk, static_cast<int>(blk), MPI_FLOAT, s, vec_off + static_cast<MPI_Aint>(me * blk * 4), static_cast<int>(blk),
                MPI_FLOAT, g_win);
      }
      for (int k = 1; k < P; ++k) {
        const int s = (me + k) % P;
        MPI_Win_flush(s, g_win);
        notify(s, 0);
      }
      for (int src = 0; src < P; ++src)
        if (src != me) wait_ge(cell(0, src), ++gen[src]);
      double t_gr = now_s() - t0;
      MPI_Barrier(MPI_COMM_WORLD);
      if (rep >= 2) {
        t_mpi.push_back(t_a); t_rma.push_back(t_r); t_ag_mpi.push_back(t_g); t_ag_rma.push_back(t_gr);
      }
    }
    // slowest rank per rep is what matters; take the max over ranks of each median
    auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
    double m[4] = {med(t_mpi), med(t_rma), med(t_ag_mpi), med(t_ag_rma)}, mx[4];
    MPI_Reduce(m, mx, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int okv = ok, allok;
    MPI_Reduce(&okv, &allok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    if (me == 0)
      printf("  %10zu %12.1f %12.1f %11.2fx %12.1f %12.1f %s\n", b, mx[0] * 1e6, mx[1] * 1e6, mx[1] / mx[0], mx[2] * 1e6,
             mx[3] * 1e6, allok ? "" : "WRONG");
  }
  MPI_Win_unlock_all(g_win);
  MPI_Win_free(&g_win);
  MPI_Finalize();
}
