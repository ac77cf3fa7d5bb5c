// What an MPI launcher announces in the environment, readable before (and without) MPI_Init:
// pld chooses the mpi backend from it (BackendKind::Auto) and tutorials take their rank count
// from it.
#pragma once

namespace pld::detail {

/// The world size announced by an MPI launcher (Open MPI's mpirun, a PMIx launcher), or 0 when
/// the process was not started by one.
int launcher_size();
/// This process's rank announced by the launcher, or -1.
int launcher_rank();
/// How many of the launcher's processes run on this machine (launcher_size() when unknown).
int launcher_local_size();

}  // namespace pld::detail
