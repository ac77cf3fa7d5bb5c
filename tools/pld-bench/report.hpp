// pld-bench: output. The table follows nccl-tests (size count type redop root | time algbw busbw
// #wrong per column group, "# Out of bounds values" and "# Avg bus bandwidth" footers); the JSON file
// (-J) holds the same numbers plus the settings and iteration counts.
#pragma once

#include "options.hpp"
#include "runner.hpp"
#include "sweep.hpp"

#include <cstdio>
#include <string>

namespace pldbench {

void print_header(std::FILE* out, const Options& o, const Plan& plan);
void print_table(std::FILE* out, const Options& o, const TableResult& t);
void print_footer(std::FILE* out, const Results& r);
/// Throws std::runtime_error when the file cannot be written.
void write_json(const std::string& path, const Options& o, const Plan& plan, const Results& r);

/// Bandwidths of a row in GB/s (1e9 bytes/s), as nccl-tests defines them.
double algbw(const Point& p, const Measure& m);
double busbw(const Point& p, const Measure& m, int nranks);

}  // namespace pldbench
