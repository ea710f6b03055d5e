// The one place tailor talks MPI: the world of `mpirun -n N tailor profile`, a
// broadcast from rank 0 and a gather to it. tailor links no MPI library: the
// calls live in the module libtailor_mpi.so (tools/mpi/mpi_module.cpp, built
// when CMake finds MPI), which World loads with dlopen, beside the binary (a
// build tree) or in bin/../lib/tailor (installed). Without it available() is
// false and World throws.
#pragma once

#include <string>
#include <vector>

namespace tailor::mpi {

struct Module;

/// Whether tailor's MPI module (libtailor_mpi.so) is where World looks for it.
bool available();

/// How many processes the launcher started this one among:
/// OMPI_COMM_WORLD_SIZE (Open MPI's mpirun), else PMI_SIZE (MPICH, Slurm's
/// PMI), else 1. Needs no MPI: a build without it uses this to say so.
int launched_size();

/// This process's rank as the launcher set it (OMPI_COMM_WORLD_RANK, else
/// PMI_RANK), 0 when neither is set. Needs no MPI.
int launched_rank();

/// MPI_COMM_WORLD for the lifetime of the object (MPI_Init … MPI_Finalize).
/// At most one per process. Messages are byte strings; collective calls must
/// be made by every rank in the same order.
class World {
 public:
  /// Loads the MPI module and calls MPI_Init. Throws Error (source "mpi", or
  /// the module's path) when the module is missing, cannot be loaded or is of
  /// another interface version, or MPI_Init fails.
  World();
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  /// Rank 0's `text`, on every rank (the others' argument is ignored).
  std::string broadcast(const std::string& text) const;

  /// Every rank's `text`, by rank, on rank 0; an empty list on the others.
  std::vector<std::string> gather(const std::string& text) const;

  /// Ends every rank of the job with `code` (MPI_Abort), for a rank that
  /// cannot go on while the others wait in a collective call.
  [[noreturn]] void abort(int code) const;

 private:
  const Module* m_;
  int rank_ = 0, size_ = 1;
};

}  // namespace tailor::mpi
