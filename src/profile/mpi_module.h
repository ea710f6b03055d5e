// The C interface of libtailor_mpi.so, the module that holds tailor's only
// MPI calls (tools/mpi/mpi_module.cpp). tailor itself links no MPI library:
// `tailor profile` dlopens the module only when a launcher (mpirun) started
// it, so that no other command pays for loading MPI (shard_mpi.cpp).
// Every function returns an MPI error code (0 = MPI_SUCCESS); on failure
// tailor_mpi_error_string gives its text.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

/// Version of this interface; the loader refuses a module of another one.
int tailor_mpi_version();
/// MPI_Init, then this process's rank and the world's size.
int tailor_mpi_init(int* rank, int* size);
int tailor_mpi_finalize();
/// MPI_Bcast of `bytes` bytes at `data` from rank 0 (bytes ≤ INT_MAX).
int tailor_mpi_broadcast(void* data, int bytes);
/// MPI_Gather of one int per rank to rank 0 (`all` has size() ints there).
int tailor_mpi_gather_int(int mine, int* all);
/// MPI_Gatherv of `bytes` bytes per rank to rank 0, at `offsets` in `all`.
int tailor_mpi_gatherv(const char* data, int bytes, char* all, const int* counts,
                       const int* offsets);
/// MPI_Abort of every rank with `code`.
int tailor_mpi_abort(int code);
/// The text of error `code` (MPI_Error_string), at most `capacity` − 1 bytes, NUL-terminated.
void tailor_mpi_error_string(int code, char* text, size_t capacity);
}

/// The interface version tailor_mpi_version returns.
inline constexpr int kTailorMpiVersion = 1;
