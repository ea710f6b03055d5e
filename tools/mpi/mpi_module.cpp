// libtailor_mpi.so: tailor's MPI calls behind the C interface of mpi_module.h.
// Built only when CMake finds MPI; loaded by src/profile/shard_mpi.cpp under
// mpirun. It lives outside src/profile so that tailor_profile never compiles it.
#include "profile/mpi_module.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>

extern "C" {

int tailor_mpi_version() {
  return kTailorMpiVersion;
}

int tailor_mpi_init(int* rank, int* size) {
  if (const int rc = MPI_Init(nullptr, nullptr); rc != MPI_SUCCESS) return rc;
  if (const int rc = MPI_Comm_rank(MPI_COMM_WORLD, rank); rc != MPI_SUCCESS) return rc;
  return MPI_Comm_size(MPI_COMM_WORLD, size);
}

int tailor_mpi_finalize() {
  return MPI_Finalize();
}

int tailor_mpi_broadcast(void* data, int bytes) {
  return MPI_Bcast(data, bytes, MPI_CHAR, 0, MPI_COMM_WORLD);
}

int tailor_mpi_gather_int(int mine, int* all) {
  return MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
}

int tailor_mpi_gatherv(const char* data, int bytes, char* all, const int* counts,
                       const int* offsets) {
  return MPI_Gatherv(data, bytes, MPI_CHAR, all, counts, offsets, MPI_CHAR, 0, MPI_COMM_WORLD);
}

int tailor_mpi_abort(int code) {
  return MPI_Abort(MPI_COMM_WORLD, code);
}

void tailor_mpi_error_string(int code, char* text, size_t capacity) {
  if (capacity == 0) return;
  char buffer[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buffer, &len) != MPI_SUCCESS) len = 0;
  const size_t n = std::min(static_cast<size_t>(len), capacity - 1);
  std::memcpy(text, buffer, n);
  text[n] = '\0';
}
}
