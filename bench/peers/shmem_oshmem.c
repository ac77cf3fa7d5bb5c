/* shmem_oshmem — the OpenSHMEM side of the SHMEM primitives benchmark: Open MPI's OSHMEM
 * (OpenSHMEM 1.4 API), the same rows, sizes, timing and checks as bench/peers/shmem_pld.cpp, so
 * every row compares like with like. P comes from oshrun; the point-to-point rows run between
 * PE 0 and PE 1 (any other PE only joins the barriers).
 *
 *   put          shmem_putmem + shmem_quiet per call (PE 0 -> PE 1)
 *   get          shmem_getmem per call (PE 0 <- PE 1)
 *   put_bw       a window of 64 shmem_putmem_nbi, then shmem_quiet; us per put and GB/s
 *   get_bw       the same with shmem_getmem_nbi
 *   fetch_add    ping-pong of PE 0 and 1 on one long (int64) of PE 1: in round i PE `me` polls
 *                with shmem_long_atomic_fetch until the cell holds 2i + me, then
 *                shmem_long_atomic_fetch_add(1); us = half a round trip (one turn)
 *   compare_swap the same turn with shmem_long_atomic_compare_swap(2i + me -> 2i + me + 1)
 *   put_signal   ping-pong: PE 0 puts `bytes` to PE 1 and signals, PE 1 waits and answers alike;
 *                us = half a round trip. OpenSHMEM 1.4 has no shmem_putmem_signal: a put is
 *                shmem_putmem + shmem_fence + shmem_long_atomic_set on the peer's signal, and the
 *                wait is shmem_long_wait_until(SHMEM_CMP_GE)
 *   barrier_all  shmem_barrier_all
 *   allreduce    shmem_float_sum_to_all in place, nreduce = bytes / 4
 *   broadcast    shmem_broadcast32 from PE 0, nelems = bytes / 4 (1.4 leaves the root's target
 *                alone: the root is not checked)
 *   allgather    shmem_fcollect32; bytes = the gathered [P, SIZE] buffer, nelems = bytes / 4 / P
 *   all_to_all   shmem_alltoall32; bytes = one PE's [P, SIZE] send buffer, nelems = bytes / 4 / P
 * Sizes are pld-bench's: the bytes of one rank's buffer, whole fp32 elements, and for allgather
 * and all_to_all a whole number of elements per PE; -b, -b*f, ... up to -e, and -e itself.
 * Successive collective calls alternate between two pSync arrays (allreduce: and two pWrk).
 *
 * Timing (pld-bench's rules, tools/pld-bench/rules.hpp, mirrored here): iterations = budget
 * (1 GiB) / bytes in [20, 20000] (the bandwidth rows: / (64 * bytes)); warm-up = iterations / 10,
 * at least 5, the first row of the process as many as it times; then shmem_barrier_all and the
 * timed loop on CLOCK_MONOTONIC. us = max over PEs of loop time / iterations (the point-to-point
 * rows: PE 0's). After timing each row re-stages small integers, runs once and compares; a wrong
 * value is reported on stderr and the exit status is 1.
 *
 * Exit: this Open MPI (4.1.4, Debian) segfaults in shmem_finalize under the default settings.
 * spml/ucx is the only component that holds libmca_common_ucx (Debian's openmpi-mca-params.conf
 * disables pml/ucx), so closing it unloads the library while its memory-release hook stays
 * registered with opal's memory patcher; the osc/rdma teardown in the MPI finalize that follows
 * frees memory, the patcher calls the dangling hook and the process dies. `--mca memory ^patcher`
 * (no patcher, no hook calls; the shared-memory transports here do not need it) makes it exit
 * cleanly; so do `--mca osc ^rdma` and `--mca osc ucx`. The program sets
 * OMPI_MCA_memory=^patcher before shmem_init unless the environment already sets
 * OMPI_MCA_memory. UCX needs no setting (UCX_TLS=sm,self or posix,self time alike).
 * The collectives run Open MPI's scoll/basic (the default here; scoll/mpi does not enable).
 * With more PEs than cores, add --oversubscribe: OSHMEM's waits spin where pld's yield.
 *
 *   oshcc -O3 bench/peers/shmem_oshmem.c -o build-release/bench/peers/shmem_oshmem
 *   oshrun --allow-run-as-root -n 2 --mca memory ^patcher build-release/bench/peers/shmem_oshmem -J oshmem2.json
 *   oshrun --allow-run-as-root -n 4 --oversubscribe --mca memory ^patcher build-release/bench/peers/shmem_oshmem \
 *       --ops barrier_all,allreduce,broadcast,allgather,all_to_all
 *   Options: --ops LIST  -b/-e/-f sizes (K/M/G; default 8, 1M, 4)  -n iters (0 = auto)
 *            --quick (8 B - 4 KiB by 8, at most 500 iterations)  -J/--json FILE
 * CTest's bench.peers.shmem.oshmem.smoke compiles it the same way and runs --quick at 2 PEs.
 * Output: a table on PE 0's stdout; -J writes one JSON object per row (side "oshmem").
 */
#include <shmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { PUT, GET, PUT_BW, GET_BW, FADD, CSWAP, PSIG, BARRIER, ALLREDUCE, BCAST, ALLGATHER, ALLTOALL, NOPS };
static const char *const kOps[NOPS] = {"put",        "get",          "put_bw",     "get_bw",
                                       "fetch_add",  "compare_swap", "put_signal", "barrier_all",
                                       "allreduce",  "broadcast",    "allgather",  "all_to_all"};
enum { kWindow = 64, kMinIters = 20, kMaxIters = 20000, kMaxPes = 256 };
#define SYNC_SIZE 8 /* >= every *_SYNC_SIZE of this shmem.h (checked in main) */

/* Everything symmetric lives on the symmetric heap (shmem_malloc): remote atomics on the data
 * segment's symmetric variables are emulated here with active messages that only complete when
 * the target PE calls into the library, and a PE polling its own cell never does. */
struct Sym {
  long psync[2][SYNC_SIZE];
  long cell;                   /* the atomics' ping-pong cell (PE 1's is used) */
  long sig;                    /* put_signal: written by the peer */
  double results[2 * kMaxPes]; /* on PE 0: loop ns and wrong count of every PE */
};
static struct Sym *sym;
static long ncalls;               /* collective calls made: picks the pSync / pWrk set */
static unsigned char *data, *aux; /* a row's target and source */
static float *pwrk[2];
static int me, npes;

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}
static void pause_cpu(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }
/* rules.hpp: auto iterations and warm-up. */
static int64_t auto_iters(uint64_t budget, uint64_t bytes, int64_t lo, int64_t hi) {
  const uint64_t per = bytes ? bytes : 1, n = budget / per;
  return n > (uint64_t)hi ? hi : clamp64((int64_t)n, lo, hi);
}
static int64_t warmup_iters(int64_t iters, int first_row) {
  int64_t w = iters / 10 > 5 ? iters / 10 : 5;
  return first_row && iters > w ? iters : w;
}

static int die(const char *msg, const char *arg) {
  if (me == 0) fprintf(stderr, "shmem_oshmem: %s%s\n", msg, arg ? arg : "");
  return 2;
}
static int parse_size(const char *s, uint64_t *out) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return 0;
  if (*end == 'K' || *end == 'k') v <<= 10, ++end;
  else if (*end == 'M' || *end == 'm') v <<= 20, ++end;
  else if (*end == 'G' || *end == 'g') v <<= 30, ++end;
  *out = v;
  return *end == 0;
}

/* Small-integer patterns: byte i of PE r's payload, element i of the float collectives. */
static unsigned char pbyte(uint64_t i, int r) { return (unsigned char)((i * 7 + (uint64_t)r * 3 + 1) % 251); }
static float fval(int src, int dst, uint64_t i) { return (float)(src * 1000 + dst * 10 + (int)(i % 7)); }
static void stage_bytes(unsigned char *p, uint64_t n, int r) { for (uint64_t i = 0; i < n; ++i) p[i] = pbyte(i, r); }
static long wrong_bytes(const char *op, uint64_t bytes, const unsigned char *p, int r) {
  long bad = 0;
  uint64_t first = 0;
  for (uint64_t i = 0; i < bytes; ++i)
    if (p[i] != pbyte(i, r) && bad++ == 0) first = i;
  if (bad)
    fprintf(stderr, "shmem_oshmem: %s %llu B: PE %d holds %ld wrong bytes (first at %llu: %d, want %d)\n", op,
            (unsigned long long)bytes, me, bad, (unsigned long long)first, p[first], pbyte(first, r));
  return bad;
}
static long wrong_floats(const char *op, uint64_t bytes, const float *got, const float *want, uint64_t n) {
  long bad = 0;
  uint64_t first = 0;
  for (uint64_t i = 0; i < n; ++i)
    if (got[i] != want[i] && bad++ == 0) first = i;
  if (bad)
    fprintf(stderr, "shmem_oshmem: %s %llu B at %d PEs: PE %d holds %ld wrong elements (first at %llu: %g, want %g)\n",
            op, (unsigned long long)bytes, npes, me, bad, (unsigned long long)first, got[first], want[first]);
  return bad;
}

static long *next_psync(float **wrk) {
  const long k = ncalls++ & 1;
  if (wrk) *wrk = pwrk[k];
  return sym->psync[k];
}
/* One collective call of op on `bytes` (nelems per the header). */
static void collective(int op, uint64_t bytes) {
  float *const t = (float *)data, *const s = (float *)aux, *wrk;
  const size_t n = bytes / 4, per_pe = n / (size_t)npes;
  switch (op) {
    case BARRIER: shmem_barrier_all(); break;
    case ALLREDUCE: { long *ps = next_psync(&wrk); shmem_float_sum_to_all(t, t, (int)n, 0, 0, npes, wrk, ps); } break;
    case BCAST: shmem_broadcast32(t, s, n, 0, 0, 0, npes, next_psync(NULL)); break;
    case ALLGATHER: shmem_fcollect32(t, s, per_pe, 0, 0, npes, next_psync(NULL)); break;
    case ALLTOALL: shmem_alltoall32(t, s, per_pe, 0, 0, npes, next_psync(NULL)); break;
  }
}
/* Stages a collective's operands (data poisoned), runs it once and compares. */
static long check_collective(int op, uint64_t bytes) {
  float *const t = (float *)data, *const s = (float *)aux, *want = (float *)malloc(bytes ? bytes : 1);
  const uint64_t n = bytes / 4, per_pe = n / (uint64_t)npes;
  if (!want) { fprintf(stderr, "shmem_oshmem: malloc(%llu) for the check failed\n", (unsigned long long)bytes); return 1; }
  for (uint64_t i = 0; i < n; ++i) {
    t[i] = -1;
    s[i] = -1;
    want[i] = -1;
    if (op == ALLREDUCE) t[i] = fval(me, 0, i), want[i] = 0;
    if (op == BCAST) s[i] = fval(0, 0, i), want[i] = fval(0, 0, i);
    if (op == ALLGATHER && i < per_pe) s[i] = fval(me, 0, i);
    if (op == ALLGATHER) want[i] = fval((int)(i / per_pe), 0, i % per_pe);
    if (op == ALLTOALL) s[i] = fval(me, (int)(i / per_pe), i % per_pe), want[i] = fval((int)(i / per_pe), me, i % per_pe);
  }
  if (op == ALLREDUCE)
    for (int r = 0; r < npes; ++r)
      for (uint64_t i = 0; i < n; ++i) want[i] += fval(r, 0, i);
  shmem_barrier_all();
  collective(op, bytes);
  shmem_barrier_all();
  /* 1.4 leaves the root's target of a broadcast alone: the root is not checked. */
  const long bad = op == BARRIER || (op == BCAST && me == 0) ? 0 : wrong_floats(kOps[op], bytes, t, want, n);
  free(want);
  return bad;
}

/* One ping-pong turn of the atomics: poll PE 1's cell until it holds 2 * round + me, then add 1. */
static long amo_turn(int op, long round) {
  const long want = 2 * round + me;
  while (shmem_long_atomic_fetch(&sym->cell, 1) != want) pause_cpu();
  const long got = op == FADD ? shmem_long_atomic_fetch_add(&sym->cell, 1, 1)
                              : shmem_long_atomic_compare_swap(&sym->cell, want, want + 1, 1);
  return got != want;
}
static void psig_send(uint64_t bytes, long v, int peer) {
  shmem_putmem(data, aux, bytes, peer);
  shmem_fence();
  shmem_long_atomic_set(&sym->sig, v, peer);
}

/* Runs one row; returns this PE's loop time in ns and adds wrong values to *wrong. */
static double run_row(int op, uint64_t bytes, int64_t warm, int64_t iters, long *wrong) {
  const int p2p = op <= PSIG, active = me < 2;
  double t0 = 0, t = 0;
  if (p2p) {
    stage_bytes(aux, bytes, me);
    memset(data, 0, bytes);
    sym->cell = 0;
    sym->sig = 0;
  }
  shmem_barrier_all();
  if (op == FADD || op == CSWAP || op == PSIG) {
    const long total = warm + iters;
    for (long r = 0; r < total && active; ++r) {
      if (r == warm) t0 = now_ns();
      if (op == PSIG) {
        if (me == 0) psig_send(bytes, r + 1, 1);
        shmem_long_wait_until(&sym->sig, SHMEM_CMP_GE, r + 1);
        if (me == 1) psig_send(bytes, r + 1, 0);
      } else {
        *wrong += amo_turn(op, r);
      }
    }
    t = active ? now_ns() - t0 : 0;
    shmem_barrier_all();
    if (op != PSIG && me == 1 && sym->cell != 2 * total) {
      fprintf(stderr, "shmem_oshmem: %s: the cell ends at %ld, want %ld\n", kOps[op], sym->cell, 2 * total);
      ++*wrong;
    }
    if (op == PSIG && active) *wrong += wrong_bytes(kOps[op], bytes, data, 1 - me);
    return t;
  }
#define TIMED(body)                                         \
  do {                                                      \
    for (int64_t i_ = 0; i_ < warm; ++i_) { body; }         \
    shmem_barrier_all();                                    \
    t0 = now_ns();                                          \
    for (int64_t i_ = 0; i_ < iters; ++i_) { body; }        \
    t = now_ns() - t0;                                      \
  } while (0)
  switch (op) {
    case PUT: TIMED(if (me == 0) { shmem_putmem(data, aux, bytes, 1); shmem_quiet(); }); break;
    case GET: TIMED(if (me == 0) shmem_getmem(data, aux, bytes, 1)); break;
    case PUT_BW: TIMED(if (me == 0) { for (int k = 0; k < kWindow; ++k) shmem_putmem_nbi(data, aux, bytes, 1); shmem_quiet(); }); break;
    case GET_BW: TIMED(if (me == 0) { for (int k = 0; k < kWindow; ++k) shmem_getmem_nbi(data, aux, bytes, 1); shmem_quiet(); }); break;
    default: TIMED(collective(op, bytes)); break;
  }
  shmem_barrier_all();
  if (!p2p) {
    *wrong += check_collective(op, bytes);
    return t;
  }
  /* The check: poison the target, move once, compare (put: at PE 1; get: at PE 0). */
  if (me < 2) memset(data, 0xee, bytes);
  shmem_barrier_all();
  if (me == 0) {
    if (op == PUT || op == PUT_BW) shmem_putmem_nbi(data, aux, bytes, 1);
    else shmem_getmem_nbi(data, aux, bytes, 1);
    shmem_quiet();
  }
  shmem_barrier_all();
  if (me == ((op == PUT || op == PUT_BW) ? 1 : 0)) *wrong += wrong_bytes(kOps[op], bytes, data, 1 - me);
  return t;
}

int main(int argc, char **argv) {
  setenv("OMPI_MCA_memory", "^patcher", 0); /* see the header: Open MPI's exit segfault */
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  uint64_t minb = 8, maxb = 1 << 20, factor = 4, budget = 1ull << 30, u;
  int64_t given_iters = 0, max_iters = kMaxIters;
  int want_op[NOPS] = {0}, any = 0, status = 0;
  const char *json = NULL;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    const int has = v != NULL;
    if (!strcmp(a, "--quick")) { minb = 8; maxb = 4096; factor = 8; budget = 16u << 20; max_iters = 500; continue; }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      if (me == 0) puts("shmem_oshmem [--ops LIST] [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [--quick] [-J FILE]");
      shmem_finalize();
      return 0;
    }
    const int valued = !strcmp(a, "-b") || !strcmp(a, "-e") || !strcmp(a, "-f") || !strcmp(a, "-n") ||
                       !strcmp(a, "-J") || !strcmp(a, "--json") || !strcmp(a, "--ops");
    if (!valued) { status = die("unknown option (see --help): ", a); break; }
    if (!has) { status = die("missing value after ", a); break; }
    ++i;
    if (!strcmp(a, "-b") && (!parse_size(v, &minb) || minb == 0)) status = die("-b: expected a size > 0 in bytes (K/M/G): ", v);
    else if (!strcmp(a, "-e") && !parse_size(v, &maxb)) status = die("-e: expected a size in bytes (K/M/G): ", v);
    else if (!strcmp(a, "-f") && (!parse_size(v, &factor) || factor < 2)) status = die("-f: expected a factor >= 2: ", v);
    else if (!strcmp(a, "-n") && !parse_size(v, &u)) status = die("-n: expected a count: ", v);
    else if (!strcmp(a, "-n")) given_iters = (int64_t)u;
    else if (!strcmp(a, "-J") || !strcmp(a, "--json")) json = v;
    else if (!strcmp(a, "--ops")) {
      char buf[512];
      snprintf(buf, sizeof buf, "%s", v);
      for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int k = 0;
        while (k < NOPS && strcmp(tok, kOps[k])) ++k;
        if (k == NOPS) { status = die("--ops: unknown op (put, get, put_bw, get_bw, fetch_add, compare_swap, put_signal, "
                                      "barrier_all, allreduce, broadcast, allgather, all_to_all): ", tok); break; }
        want_op[k] = any = 1;
      }
    }
    if (status) break;
  }
  if (!status && minb > maxb) status = die("-b exceeds -e", NULL);
  if (!status && (SHMEM_REDUCE_SYNC_SIZE > SYNC_SIZE || SHMEM_BCAST_SYNC_SIZE > SYNC_SIZE ||
                  SHMEM_COLLECT_SYNC_SIZE > SYNC_SIZE || SHMEM_ALLTOALL_SYNC_SIZE > SYNC_SIZE))
    status = die("this shmem.h needs a larger pSync: raise SYNC_SIZE", NULL);
  if (!status && npes > kMaxPes) status = die("more PEs than kMaxPes (256)", NULL);
  for (int k = 0; k < NOPS && !any; ++k) want_op[k] = 1;
  if (!status && npes < 2)
    for (int k = 0; k <= PSIG; ++k)
      if (want_op[k]) { status = die("the point-to-point rows need 2 PEs (oshrun -n 2): ", kOps[k]); break; }
  const uint64_t bufbytes = (maxb + 4095) / 4096 * 4096 + 4096;
  if (!status) {
    sym = (struct Sym *)shmem_malloc(sizeof *sym);
    data = (unsigned char *)shmem_malloc(bufbytes);
    aux = (unsigned char *)shmem_malloc(bufbytes);
    /* pWrk: max(nreduce / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE) floats */
    pwrk[0] = (float *)shmem_malloc((bufbytes / 8 + SHMEM_REDUCE_MIN_WRKDATA_SIZE + 1) * sizeof(float));
    pwrk[1] = (float *)shmem_malloc((bufbytes / 8 + SHMEM_REDUCE_MIN_WRKDATA_SIZE + 1) * sizeof(float));
    if (!sym || !data || !aux || !pwrk[0] || !pwrk[1]) status = die("shmem_malloc of the symmetric buffers failed (raise SHMEM_SYMMETRIC_SIZE)", NULL);
  }
  FILE *js = NULL;
  if (!status && me == 0 && json && !(js = fopen(json, "w"))) status = die("cannot open the JSON file ", json);
  if (status) { shmem_finalize(); return status; }
  for (int k = 0; k < SYNC_SIZE; ++k) sym->psync[0][k] = sym->psync[1][k] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
  if (me == 0) printf("# shmem_oshmem: OSHMEM %d.%d (OpenSHMEM %d.%d), %d PEs\n#  %-12s %9s %5s %7s %10s %9s %6s\n",
                      OSHMEM_MAJOR_VERSION, OSHMEM_MINOR_VERSION, SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION, npes, "op",
                      "bytes", "ranks", "iters", "us", "GB/s", "check");
  long wrong_total = 0;
  int first = 1;
  for (int op = 0; op < NOPS; ++op) {
    if (!want_op[op]) continue;
    const int sized = op <= PSIG && op != FADD && op != CSWAP ? 1 : op >= ALLREDUCE;
    const uint64_t unit = op <= PSIG ? 1 : op == ALLGATHER || op == ALLTOALL ? 4u * (uint64_t)npes : 4;
    uint64_t last = ~0ull;
    for (uint64_t s = minb;; s = s * factor > maxb && s < maxb ? maxb : s * factor) {
      const uint64_t bytes = op == FADD || op == CSWAP ? 8 : op == BARRIER ? 0 : (s / unit * unit > unit ? s / unit * unit : unit);
      if (bytes != last && bytes <= bufbytes) {
        last = bytes;
        const uint64_t per = op == PUT_BW || op == GET_BW ? kWindow * bytes : bytes;
        const int64_t iters = given_iters > 0 ? given_iters : auto_iters(budget, per, kMinIters, max_iters);
        long wrong = 0;
        const double ns = run_row(op, bytes, warmup_iters(iters, first), iters, &wrong);
        first = 0;
        wrong_total += wrong;
        double mine[2] = {ns, (double)wrong};
        shmem_double_put(&sym->results[2 * me], mine, 2, 0);
        shmem_barrier_all();
        if (me == 0) {
          double worst = 0, bad = 0;
          for (int r = 0; r < npes; ++r) {
            if (op > PSIG && sym->results[2 * r] > worst) worst = sym->results[2 * r];
            bad += sym->results[2 * r + 1];
          }
          if (op <= PSIG) worst = sym->results[0];
          double us = worst / (double)iters / 1e3;
          if (op == PUT_BW || op == GET_BW) us /= kWindow;
          if (op >= FADD && op <= PSIG) us /= 2; /* half a round trip */
          const double gbps = op <= GET_BW || op == PSIG ? (double)bytes / us / 1e3 : 0;
          char bw[32] = "-";
          if (gbps > 0) snprintf(bw, sizeof bw, "%.3f", gbps);
          printf("   %-12s %9llu %5d %7lld %10.4f %9s %6s\n", kOps[op], (unsigned long long)bytes, npes,
                 (long long)iters, us, bw, bad ? "WRONG" : "ok");
          fflush(stdout);
          if (js) {
            fprintf(js, "{\"suite\": \"shmem\", \"side\": \"oshmem\", \"op\": \"%s\", \"bytes\": %llu, \"ranks\": %d, "
                        "\"us\": %.6g, \"iters\": %lld", kOps[op], (unsigned long long)bytes, npes, us, (long long)iters);
            if (op == PUT_BW || op == GET_BW) fprintf(js, ", \"gbps\": %.6g", gbps);
            fputs("}\n", js);
          }
          if (bad) wrong_total += 1;
        }
        shmem_barrier_all();
      }
      if (!sized || s >= maxb) break;
    }
  }
  if (js) fclose(js);
  shmem_barrier_all();
  shmem_free(pwrk[1]);
  shmem_free(pwrk[0]);
  shmem_free(aux);
  shmem_free(data);
  shmem_free(sym);
  shmem_finalize();
  return wrong_total ? 1 : 0;
}
