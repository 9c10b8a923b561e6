#pragma once
// Where this process sits in its launch (rank, number of ranks), read from the launcher's
// environment before MPI is initialised: for log lines and files named per rank, and for the
// UCX defaults (comm/mpi/ucx_defaults.hpp).
//
// PMI first (MPICH's hydra sets PMI_RANK/PMI_SIZE, and so does `srun --mpi=pmi2`), then PMIx
// and Open MPI, then Slurm's own SLURM_PROCID/SLURM_NTASKS. The order matters under Slurm:
// in `sbatch --wrap 'mpiexec.mpich -n 4 prog'` hydra starts its proxies through srun, so every
// rank sees SLURM_PROCID=0, SLURM_LOCALID=0 and the allocation's SLURM_NTASKS; only PMI's
// values are the ranks'. Slurm's are right only for a plain `srun -n N prog`.
#include <functional>

namespace taskwire::runtime {

/// Looks an environment variable up (nullptr when unset).
using EnvLookup = std::function<const char*(const char*)>;

struct LaunchPosition {
  int rank = 0;   ///< this process's rank, 0 outside a launch
  int size = 1;   ///< ranks in the launch, 1 outside one
  bool launched = false;  ///< some launcher's variables were found
};

/// The position `env` describes: each of rank and size from the first family above that sets
/// it as a non-negative number (size positive); malformed values are skipped.
LaunchPosition launch_position(const EnvLookup& env);

/// The variable `name` as a whole non-negative number; -1 when unset or anything else.
int env_number(const EnvLookup& env, const char* name);

/// launch_position() of this process's environment.
LaunchPosition launch_position();

}  // namespace taskwire::runtime
