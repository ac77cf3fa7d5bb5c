// pld-bench — pld's collectives and point-to-point primitives, measured the nccl-tests way.
//
//   pld-bench --op allreduce -b 8 -e 128M -f 2 -g 2          # one table, nccl-tests columns
//   pld-bench --op all --path both -d all -o all -J out.json # everything, JSON too
//   pld-bench --op amo -g 2                                  # atomics: latency, throughput
//   pld-bench --tune --tune-out pld-tuning.json              # measured thresholds (tune.hpp)
//
// options.cpp parses the command line, sweep.cpp plans the rows, runner.cpp runs them in one
// pld::run (kernels.hpp / timer.hpp / check.hpp inside the ranks; baseline.cpp the bare memcpy and
// ping-pongs of p2p before it), report.cpp prints and writes.
// Exit status: 0 all results correct, 1 some value wrong, 2 the run failed.
#include "amo.hpp"
#include "options.hpp"
#include "report.hpp"
#include "runner.hpp"
#include "sweep.hpp"
#include "tune.hpp"

#include <pld/pld.hpp>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  const pldbench::Options o = pldbench::parse_options(argc, argv);
  // Under mpirun every process runs the benchmark and ends with the same results: one prints.
  if (!pld::is_output_rank() && !std::freopen("/dev/null", "w", stdout)) return 2;
  try {
    if (o.tune.enabled) return pldbench::run_tune(o);
    int status = 0;
    if (!o.colls.empty()) {
      const pldbench::Plan plan = pldbench::make_plan(o);
      pldbench::print_header(stdout, o, plan);
      std::fflush(stdout);
      const pldbench::Results r = pldbench::run_plan(o, plan);
      for (const auto& t : r.tables) {
        pldbench::print_table(stdout, o, t);
        if (t.table.coll == pldbench::Coll::PutSignal) pldbench::print_put_signal_ratios(stdout, t);
      }
      pldbench::print_footer(stdout, r);
      if (!o.json.empty() && pld::is_output_rank()) pldbench::write_json(o.json, o, plan, r);
      status = r.wrong_total ? 1 : 0;
    }
    if (o.amo) {
      const pldbench::AmoResults a = pldbench::run_amo(o);
      pldbench::print_amo(stdout, a);
      if (a.wrong) status = 1;
    }
    return status;
  } catch (const pld::Error& e) {
    std::fprintf(stderr, "pld-bench: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pld-bench: %s\n", e.what());
  }
  return 2;
}
