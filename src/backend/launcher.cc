#include "backend/launcher.h"

#include <pld/host.hpp>
#include <pld/info.hpp>

#include <cstdlib>

namespace pld::detail {

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return (end && *end == '\0') ? static_cast<int>(n) : fallback;
}

}  // namespace

int launcher_size() {
  if (int n = env_int("OMPI_COMM_WORLD_SIZE", 0); n > 0) return n;  // Open MPI's mpirun / orted
  if (std::getenv("PMIX_RANK")) return env_int("PMIX_SIZE", env_int("PMI_SIZE", 0));
  return 0;
}

int launcher_rank() {
  if (int r = env_int("OMPI_COMM_WORLD_RANK", -1); r >= 0) return r;
  return env_int("PMIX_RANK", -1);
}

int launcher_local_size() {
  return env_int("OMPI_COMM_WORLD_LOCAL_SIZE", launcher_size());
}

}  // namespace pld::detail

#ifndef PLD_HAVE_MPI
namespace pld::detail {
void gather_slices(void*, std::uint64_t, Index, int) {}  // no mpi backend: the ranks wrote host memory
}  // namespace pld::detail
#endif

namespace pld {

int launcher_world_size() {
  return detail::launcher_size();
}

bool is_output_rank() {
  return detail::launcher_size() == 0 || detail::launcher_rank() <= 0;
}

bool has_mpi_backend() {
#ifdef PLD_HAVE_MPI
  return true;
#else
  return false;
#endif
}

}  // namespace pld
