// atomics: are MPI_Compare_and_swap (int32, int64), MPI_Fetch_and_op (int32 SUM) and
// MPI_Accumulate (SUM on float, int8, int16, int32) correct under contention from every rank at
// once, on the selected osc component? And the fp16/bf16 fallback pld needs (no MPI type): a
// compare-and-swap loop on the aligned 32-bit word holding the element.
//
//   mpirun -n 3 ./atomics [--reps 200] [--count 1024] [--thread multiple|single] [--only cas32,...]
//
// Every rank adds into rank 0's window (and, for the counters, into every rank's window), then
// rank 0 checks the totals. Prints one line per test: OK / WRONG (expected, got) and the time.
#include "common.h"

#include <cstdint>
#include <vector>

namespace {

uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}
float bf16_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const int thread = init_mpi(argc, argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int reps = atoi(arg(argc, argv, "--reps", "200").c_str());
  const int count = atoi(arg(argc, argv, "--count", "1024").c_str());
  const std::string only = arg(argc, argv, "--only", "");
  auto want = [&](const char* t) { return only.empty() || only.find(t) != std::string::npos; };

  // Layout: [0,8) int64 counter, [8,12) int32 counter, [64, 64+4*count) float, then int8, int16,
  // int32, bf16 arrays (each 4*count bytes, 64-aligned).
  const MPI_Aint arr = 4 * static_cast<MPI_Aint>(count);
  const MPI_Aint off_f = 64, off_i8 = off_f + arr, off_i16 = off_i8 + arr, off_i32 = off_i16 + arr,
                 off_bf = off_i32 + arr;
  const MPI_Aint bytes = off_bf + arr;
  char* base;
  MPI_Win win;
  MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  memset(base, 0, bytes);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  MPI_Win_sync(win);
  MPI_Barrier(MPI_COMM_WORLD);
  std::string desc;
  describe_window(win, rank, size, &desc);
  if (rank == 0) printf("n=%d thread=%d %s\n", size, thread, desc.c_str());

  auto finish = [&](const char* name, double t0, bool ok, const std::string& detail) {
    MPI_Win_sync(win);
    int okv = ok, all = 0;
    MPI_Allreduce(&okv, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0) printf("  %-28s %s  %.1f us/op  %s\n", name, all ? "OK   " : "WRONG", (now_s() - t0) * 1e6 / reps, detail.c_str());
  };

  char buf[256];
  // 1. Fetch_and_op int32 SUM on every rank's counter (ring of targets), reps each.
  if (want("fop32")) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_s();
    const int one = 1;
    for (int i = 0; i < reps; ++i)
      for (int t = 0; t < size; ++t) {
        int old;
        MPI_Fetch_and_op(&one, &old, MPI_INT32_T, t, 8, MPI_SUM, win);
        MPI_Win_flush(t, win);
      }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    const int32_t got = *reinterpret_cast<int32_t*>(base + 8);
    snprintf(buf, sizeof buf, "expected %d got %d", reps * size, got);
    finish("fetch_and_op int32 SUM", t0, got == reps * size, buf);
  }
  // 2. Compare_and_swap increment loops, int32 and int64, on rank 0.
  for (int w : {32, 64}) {
    if (!want(w == 32 ? "cas32" : "cas64")) continue;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_s();
    long retries = 0;
    const MPI_Aint at = w == 32 ? 8 : 0;
    if (w == 32) {  // reset the int32 counter used above
      if (rank == 0) { *reinterpret_cast<int32_t*>(base + 8) = 0; }
      MPI_Win_sync(win);
      MPI_Barrier(MPI_COMM_WORLD);
    }
    for (int i = 0; i < reps; ++i) {
      int64_t cur = 0, result = 0;
      const int64_t zero = 0;
      // read current value (atomic) with fetch_and_op NO_OP
      MPI_Fetch_and_op(&zero, &cur, w == 32 ? MPI_INT32_T : MPI_INT64_T, 0, at, MPI_NO_OP, win);
      MPI_Win_flush(0, win);
      if (w == 32) cur = static_cast<int32_t>(cur);
      for (;;) {
        if (w == 32) {
          int32_t c = static_cast<int32_t>(cur), n = c + 1, r = 0;
          MPI_Compare_and_swap(&n, &c, &r, MPI_INT32_T, 0, at, win);
          MPI_Win_flush(0, win);
          result = r;
        } else {
          int64_t n = cur + 1, r = 0;
          MPI_Compare_and_swap(&n, &cur, &r, MPI_INT64_T, 0, at, win);
          MPI_Win_flush(0, win);
          result = r;
        }
        if (result == cur) break;
        cur = result;
        ++retries;
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    const int64_t got = w == 32 ? *reinterpret_cast<int32_t*>(base + 8) : *reinterpret_cast<int64_t*>(base);
    long all_retries = 0;
    MPI_Reduce(&retries, &all_retries, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    snprintf(buf, sizeof buf, "expected %d got %lld (%ld retries)", reps * size, static_cast<long long>(got), all_retries);
    finish(w == 32 ? "compare_and_swap int32 loop" : "compare_and_swap int64 loop", t0, rank != 0 || got == reps * size, buf);
  }
  // 3. Accumulate SUM arrays into rank 0: float, int8, int16, int32. Values chosen so sums are exact.
  struct Arr { const char* name; MPI_Datatype type; MPI_Aint off; int esz; };
  const Arr arrays[] = {{"accumulate SUM float", MPI_FLOAT, off_f, 4}, {"accumulate SUM int8", MPI_INT8_T, off_i8, 1},
                        {"accumulate SUM int16", MPI_INT16_T, off_i16, 2}, {"accumulate SUM int32", MPI_INT32_T, off_i32, 4}};
  const int acc_reps = reps / 10 > 0 ? reps / 10 : 1;
  for (const Arr& a : arrays) {
    if (!want(a.name + 15)) continue;
    std::vector<char> src(static_cast<size_t>(count) * a.esz);
    for (int e = 0; e < count; ++e) {
      const int v = 1 + (e % 2);  // small: int8 holds reps/10 * size * 2 for the defaults
      if (a.type == MPI_FLOAT) reinterpret_cast<float*>(src.data())[e] = static_cast<float>(v);
      else if (a.esz == 1) reinterpret_cast<int8_t*>(src.data())[e] = static_cast<int8_t>(v);
      else if (a.esz == 2) reinterpret_cast<int16_t*>(src.data())[e] = static_cast<int16_t>(v);
      else reinterpret_cast<int32_t*>(src.data())[e] = v;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_s();
    for (int i = 0; i < acc_reps; ++i) {
      MPI_Accumulate(src.data(), count, a.type, 0, a.off, count, a.type, MPI_SUM, win);
      MPI_Win_flush(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    bool ok = true;
    long long first_bad = -1, exp = 0, got = 0;
    if (rank == 0)
      for (int e = 0; e < count && ok; ++e) {
        exp = static_cast<long long>(acc_reps) * size * (1 + (e % 2));
        const char* p = base + a.off + static_cast<MPI_Aint>(e) * a.esz;
        if (a.type == MPI_FLOAT) got = static_cast<long long>(*reinterpret_cast<const float*>(p));
        else if (a.esz == 1) got = static_cast<int8_t>(*p);
        else if (a.esz == 2) got = *reinterpret_cast<const int16_t*>(p);
        else got = *reinterpret_cast<const int32_t*>(p);
        if (got != static_cast<long long>(a.esz == 1 ? static_cast<int8_t>(exp) : exp)) { ok = false; first_bad = e; }
      }
    snprintf(buf, sizeof buf, "%d elements x %d reps x %d ranks%s", count, acc_reps, size,
             ok ? "" : (" first bad " + std::to_string(first_bad) + " got " + std::to_string(got)).c_str());
    finish(a.name, t0, ok, buf);
  }
  // 4. bf16 add via 32-bit compare_and_swap on the word holding two bf16 elements.
  if (want("bf16")) {
    const int n = count < 256 ? count : 256;  // elements (n/2 words)
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_s();
    long cas = 0;
    for (int i = 0; i < acc_reps; ++i) {
      std::vector<uint32_t> cur(static_cast<size_t>(n / 2));
      MPI_Get(cur.data(), n / 2, MPI_UINT32_T, 0, off_bf, n / 2, MPI_UINT32_T, win);  // a snapshot; CAS validates
      MPI_Win_flush(0, win);
      for (int wd = 0; wd < n / 2; ++wd) {
        uint32_t c = cur[static_cast<size_t>(wd)];
        for (;;) {
          const uint16_t lo = static_cast<uint16_t>(c & 0xffff), hi = static_cast<uint16_t>(c >> 16);
          const uint32_t nw = f32_to_bf16(bf16_to_f32(lo) + 1.0f) | (static_cast<uint32_t>(f32_to_bf16(bf16_to_f32(hi) + 2.0f)) << 16);
          uint32_t r = 0;
          MPI_Compare_and_swap(&nw, &c, &r, MPI_UINT32_T, 0, off_bf + 4 * wd, win);
          MPI_Win_flush(0, win);
          ++cas;
          if (r == c) break;
          c = r;
        }
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    bool ok = true;
    if (rank == 0)
      for (int e = 0; e < n; ++e) {
        const float got = bf16_to_f32(reinterpret_cast<const uint16_t*>(base + off_bf)[e]);
        if (got != static_cast<float>(acc_reps * size * (1 + (e % 2)))) ok = false;
      }
    snprintf(buf, sizeof buf, "%d bf16 elements x %d reps x %d ranks, %ld CAS, %.2f us per element", n, acc_reps, size, cas,
             (now_s() - t0) * 1e6 / (static_cast<double>(n) * acc_reps));
    finish("bf16 add via CAS32 loop", t0, ok, buf);
  }
  // 5. bf16 add under a per-target lock (the design's fp16/bf16 path): acquire = 32-bit
  //    compare_and_swap 0 -> rank+1 on rank 0's lock cell (offset 12) + flush, then get the range,
  //    add in float, put it back, flush, release = accumulate REPLACE 0 + flush.
  if (want("lock16")) {
    const int n = count;  // bf16 elements, at off_bf (reset first)
    if (rank == 0) memset(base + off_bf, 0, static_cast<size_t>(arr));
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_s();
    long spins = 0;
    std::vector<uint16_t> tmp(static_cast<size_t>(n));
    for (int i = 0; i < acc_reps; ++i) {
      const int32_t zero = 0, me = rank + 1;
      for (;;) {
        int32_t old = -1;
        MPI_Compare_and_swap(&me, &zero, &old, MPI_INT32_T, 0, 12, win);
        MPI_Win_flush(0, win);
        if (old == 0) break;
        ++spins;
        int f;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &f, MPI_STATUS_IGNORE);
      }
      MPI_Get(tmp.data(), n, MPI_UINT16_T, 0, off_bf, n, MPI_UINT16_T, win);
      MPI_Win_flush(0, win);
      for (int e = 0; e < n; ++e) tmp[static_cast<size_t>(e)] = f32_to_bf16(bf16_to_f32(tmp[static_cast<size_t>(e)]) + static_cast<float>(1 + (e % 2)));
      MPI_Put(tmp.data(), n, MPI_UINT16_T, 0, off_bf, n, MPI_UINT16_T, win);
      MPI_Win_flush(0, win);
      int32_t old = 0;
      MPI_Fetch_and_op(&zero, &old, MPI_INT32_T, 0, 12, MPI_REPLACE, win);
      MPI_Win_flush(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    bool ok = true;
    if (rank == 0)
      for (int e = 0; e < n; ++e)
        if (bf16_to_f32(reinterpret_cast<const uint16_t*>(base + off_bf)[e]) != static_cast<float>(acc_reps * size * (1 + (e % 2)))) ok = false;
    snprintf(buf, sizeof buf, "%d bf16 elements x %d reps x %d ranks, %ld busy retries, %.3f us per element", n, acc_reps, size, spins,
             (now_s() - t0) * 1e6 / (static_cast<double>(n) * acc_reps));
    finish("bf16 add under a CAS32 lock", t0, ok, buf);
  }
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  MPI_Finalize();
}
