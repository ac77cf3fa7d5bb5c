#include "options.hpp"

#include <pld/host.hpp>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <sstream>

namespace pldbench {

namespace {

const std::vector<std::pair<std::string, Coll>> kColls = {
    {"barrier", Coll::Barrier},
    {"allreduce", Coll::Allreduce},
    {"broadcast", Coll::Broadcast},
    {"allgather", Coll::Allgather},
    {"reduce_scatter", Coll::ReduceScatter},
    {"all_to_all", Coll::AllToAll},
    {"all_to_all_v", Coll::AllToAllV},
    {"p2p", Coll::P2P},
    {"put_signal", Coll::PutSignal},
    {"nbi", Coll::Nbi},
};
const std::vector<std::pair<std::string, pld::ReduceOp>> kRedops = {{"sum", pld::ReduceOp::Sum},
                                                                    {"prod", pld::ReduceOp::Prod},
                                                                    {"max", pld::ReduceOp::Max},
                                                                    {"min", pld::ReduceOp::Min}};
const std::vector<std::pair<std::string, pld::AllreduceMode>> kModes = {{"auto", pld::AllreduceMode::Auto},
                                                                        {"mesh", pld::AllreduceMode::Mesh},
                                                                        {"ring", pld::AllreduceMode::Ring},
                                                                        {"twoshot", pld::AllreduceMode::TwoShot}};
// pld's names first; nccl-tests' aliases after.
const std::vector<std::pair<std::string, pld::DType>> kDtypes = {
    {"fp32", pld::DType::FP32},   {"fp16", pld::DType::FP16},   {"bf16", pld::DType::BF16},
    {"int32", pld::DType::INT32}, {"int16", pld::DType::INT16}, {"int8", pld::DType::INT8},
    {"int64", pld::DType::INT64}, {"fp64", pld::DType::FP64},   {"uint8", pld::DType::UINT8},
    {"float", pld::DType::FP32},  {"half", pld::DType::FP16},   {"bfloat16", pld::DType::BF16},
    {"double", pld::DType::FP64},
};
constexpr std::size_t kPldDtypes = 9;  // the first entries of kDtypes are the distinct types

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string names_of(const auto& table, std::size_t n = 0) {
  std::string out;
  for (std::size_t i = 0; i < (n ? n : table.size()); ++i) out += (out.empty() ? "" : ", ") + table[i].first;
  return out;
}

// "a,b" or "all" -> values, in the table's order for "all".
template <class V>
std::vector<V> parse_list(const std::string& flag, const std::string& text,
                          const std::vector<std::pair<std::string, V>>& table, std::size_t distinct = 0) {
  std::vector<V> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item = lower(item);
    if (item == "all") {
      for (std::size_t i = 0; i < (distinct ? distinct : table.size()); ++i) out.push_back(table[i].second);
      continue;
    }
    auto it = std::find_if(table.begin(), table.end(), [&](const auto& e) { return e.first == item; });
    if (it == table.end())
      throw CLI::ValidationError(flag, fmt::format("'{}' is not one of {}, all", item, names_of(table)));
    if (std::find(out.begin(), out.end(), it->second) == out.end()) out.push_back(it->second);
  }
  if (out.empty()) throw CLI::ValidationError(flag, "needs at least one value");
  return out;
}

// "8", "64K", "1M", "2G" (powers of 1024, as nccl-tests).
std::uint64_t parse_size(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str())
    throw CLI::ValidationError(flag, fmt::format("'{}' is not a size (e.g. 8, 64K, 1M, 2G)", text));
  std::uint64_t mult = 1;
  const std::string suffix = lower(end);
  if (suffix == "k" || suffix == "kb" || suffix == "kib")
    mult = 1ull << 10;
  else if (suffix == "m" || suffix == "mb" || suffix == "mib")
    mult = 1ull << 20;
  else if (suffix == "g" || suffix == "gb" || suffix == "gib")
    mult = 1ull << 30;
  else if (!suffix.empty() && suffix != "b")
    throw CLI::ValidationError(flag, fmt::format("'{}' has an unknown suffix (use K, M or G)", text));
  return static_cast<std::uint64_t>(v) * mult;
}

}  // namespace

const char* coll_name(Coll c) {
  for (const auto& [name, v] : kColls)
    if (v == c) return name.c_str();
  return "?";
}
const char* path_name(Path p) {
  return p == Path::Composite ? "composite" : p == Path::Builtin ? "builtin" : "both";
}
const char* redop_name(pld::ReduceOp op) {
  for (const auto& [name, v] : kRedops)
    if (v == op) return name.c_str();
  return "?";
}
const char* mode_name(pld::AllreduceMode mode) {
  for (const auto& [name, v] : kModes)
    if (v == mode) return name.c_str();
  return "?";
}

namespace {

// The flags that parse_options converts after CLI11 has read them.
struct RawFlags {
  std::string op = "allreduce", dtype = "fp32", redop = "sum", mode = "auto", path = "composite", progress = "auto";
  std::string min_b = "8", max_b = "64M", step_b;
  std::string budget = "1G";
};

// Every flag, in --help order: straight into `o`, or as text into `f`.
void add_flags(CLI::App& app, Options& o, RawFlags& f) {
  app.add_option("--op", f.op,
                 "benchmark(s), comma-separated or 'all': barrier, allreduce, broadcast, allgather, "
                 "reduce_scatter, all_to_all, all_to_all_v, p2p, put_signal, nbi; and amo (atomic_fetch_add "
                 "latency and throughput, not part of 'all')")
      ->capture_default_str();
  if (const int p = pld::launcher_world_size(); p > 0) o.nranks = p;  // under mpirun: one rank per process
  app.add_option("-g,--ranks", o.nranks, "number of ranks (processes forked by pld::run; under mpirun: -n)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("-b,--minbytes", f.min_b, "smallest size in bytes (K/M/G suffixes)")->capture_default_str();
  app.add_option("-e,--maxbytes", f.max_b, "largest size in bytes")->capture_default_str();
  app.add_option("-f,--stepfactor", o.step_factor, "multiply the size by this between points")
      ->check(CLI::Range(2ull, 1ull << 30))
      ->capture_default_str();
  app.add_option("-i,--stepbytes", f.step_b, "add this many bytes between points instead (linear sweep)");
  app.add_option("-n,--iters", o.iters,
                 "timed iterations per size; 0 = auto (1 GiB / size, clamped to [20, 20000]; builtin path at most "
                 "1000)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("-w,--warmup_iters", o.warmup,
                 "warm-up iterations per size (not timed); -1 = auto (iters / 10, >= 5; the first size: iters)")
      ->check(CLI::Range(-1ll, 1ll << 40))
      ->capture_default_str();
  app.add_option("-c,--check", o.check,
                 "check results after timing (1) or not (0); data are small integers, exact "
                 "in every dtype")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  app.add_option("-o,--redop", f.redop,
                 "reduction op(s) of allreduce / reduce_scatter: sum, prod, max, min, all (nccl-tests: -o,--op; "
                 "here --op picks the benchmark)")
      ->capture_default_str();
  app.add_option("-d,--dtype,--datatype", f.dtype,
                 "element type(s): fp32, fp16, bf16, int32, int16, int8, int64, fp64, uint8, all (aliases float, "
                 "half, bfloat16, double)")
      ->capture_default_str();
  app.add_option("-r,--root", o.root, "broadcast root (domain-local rank)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--mode", f.mode, "allreduce schedule(s): auto, mesh, ring, twoshot, all")->capture_default_str();
  app.add_option("--path", f.path,
                 "composite (pld::tensor::* in one looping kernel), builtin (pld::Host methods: one dispatch per "
                 "iteration, reported separately), both")
      ->capture_default_str();
  app.add_option("--core-num", o.core_num, "threads per rank that split a collective (core_num)")
      ->check(CLI::Range(1, pld::kMaxCoreNum))
      ->capture_default_str();
  app.add_flag("--pin", o.pin, "pin rank r to CPU r (modulo the online CPUs)");
  app.add_option("--progress", f.progress, "progress line on stderr: auto (when stderr is a terminal), always, never")
      ->capture_default_str();
  app.add_option("-J,--output_file,--json", o.json, "write the results as JSON to this file");
  app.add_option("--budget", f.budget, "bytes per measurement that set the auto iteration count")
      ->capture_default_str();
  app.add_option("--max-iters", o.max_iters, "upper bound of the auto iteration count")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--tune", o.tune.enabled,
               "instead of benchmarks: measure where streaming stores and the pushed broadcast start or stop "
               "winning on this machine (P = 2) and write a tuning file (PLD_TUNING_FILE reads it)");
  app.add_option("--tune-out", o.tune.out, "the tuning file --tune writes")->capture_default_str();
  app.add_flag("--quick", o.tune.quick, "--tune: fewer sizes, rounds and iterations (a smoke run, seconds)");
  app.add_option("--rounds", o.tune.rounds, "--tune: interleaved rounds per setting; 0 = 9 (--quick: 3)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
}

// --op: "amo" sets o.amo (the atomics benchmark), the other names are collectives; --op amo alone
// runs no collective.
void parse_ops(const std::string& op, Options& o) {
  o.colls.clear();
  std::string rest;  // --op without amo
  for (std::size_t at = 0; at <= op.size();) {
    const std::size_t end = std::min(op.find(',', at), op.size());
    const std::string name = op.substr(at, end - at);
    if (lower(name) == "amo")
      o.amo = true;
    else
      rest += (rest.empty() ? "" : ",") + name;
    at = end + 1;
  }
  if (!rest.empty() || !o.amo) o.colls = parse_list("--op", rest, kColls);
}

// A flag that takes exactly one of `table`'s names.
template <class V>
V parse_choice(const std::string& flag, const std::string& text, const std::vector<std::pair<std::string, V>>& table) {
  const auto values = parse_list<V>(flag, text, table);
  if (values.size() != 1) throw CLI::ValidationError(flag, "takes one of " + names_of(table));
  return values.front();
}

// Converts the text flags into `o` and checks the combinations.
void apply_flags(const RawFlags& f, Options& o) {
  parse_ops(f.op, o);
  o.dtypes = parse_list("--dtype", f.dtype, kDtypes, kPldDtypes);
  o.redops = parse_list("--redop", f.redop, kRedops);
  o.modes = parse_list("--mode", f.mode, kModes);
  o.path = parse_choice<Path>("--path", f.path,
                              {{"composite", Path::Composite}, {"builtin", Path::Builtin}, {"both", Path::Both}});
  o.progress = parse_choice<Progress>(
      "--progress", f.progress, {{"auto", Progress::Auto}, {"always", Progress::Always}, {"never", Progress::Never}});
  o.min_bytes = parse_size("--minbytes", f.min_b);
  o.max_bytes = parse_size("--maxbytes", f.max_b);
  o.budget_bytes = parse_size("--budget", f.budget);
  if (!f.step_b.empty()) {
    o.step_bytes = parse_size("--stepbytes", f.step_b);
    if (o.step_bytes == 0) throw CLI::ValidationError("--stepbytes", "must be > 0");
  }
  if (o.min_bytes > o.max_bytes)
    throw CLI::ValidationError("--minbytes", fmt::format("{} exceeds --maxbytes {}", o.min_bytes, o.max_bytes));
  if (o.root >= o.nranks)
    throw CLI::ValidationError("--root", fmt::format("{} is not a rank of {} ranks", o.root, o.nranks));
  if (o.tune.enabled && pld::launcher_world_size() > 0)
    throw CLI::ValidationError("--tune", "measures forked ranks on this machine: run it without mpirun");
  if (!o.tune.enabled && (o.tune.quick || o.tune.rounds > 0))
    throw CLI::ValidationError("--quick", "--quick and --rounds go with --tune");
  for (Coll c : o.colls)
    if (one_sided(c) && o.nranks < 2)
      throw CLI::ValidationError("--op", fmt::format("{} needs at least 2 ranks (-g 2)", coll_name(c)));
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options o;
  CLI::App app{
      "pld-bench: collective and point-to-point benchmarks of pld, with nccl-tests' flags and columns\n"
      "(size count type redop root time algbw busbw #wrong). Composite path: ONE dispatch per size, the\n"
      "collective loops inside the kernel, timed with steady_clock after a barrier; time = max over ranks\n"
      "of loop time / iterations, warm-up excluded. Builtin path: every iteration is a host builtin call\n"
      "(one dispatch per rank), so its time includes the dispatch overhead. Exit status 1 if any result\n"
      "is wrong, 2 on an error.",
      "pld-bench"};
  app.get_formatter()->column_width(34);
  RawFlags f;
  add_flags(app, o, f);
  try {
    app.parse(argc, argv);
    apply_flags(f, o);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  return o;
}

}  // namespace pldbench
