#include "tailor/profile/shard_mpi.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <limits>

#include "tailor/core/error.h"

#ifdef TAILOR_HAVE_MPI
#include <mpi.h>
#endif

namespace tailor::mpi {
namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : 0;
}

#ifdef TAILOR_HAVE_MPI
void ok(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error("mpi", fmt::format("{} failed: {}", what, std::string(text, len)));
}

int as_count(size_t n) {
  if (n > size_t(std::numeric_limits<int>::max()))
    throw Error("mpi", fmt::format("a message of {} bytes is past MPI's int count", n));
  return static_cast<int>(n);
}
#endif

}  // namespace

bool available() {
#ifdef TAILOR_HAVE_MPI
  return true;
#else
  return false;
#endif
}

int launched_size() {
  if (const int n = env_int("OMPI_COMM_WORLD_SIZE"); n > 0) return n;
  if (const int n = env_int("PMI_SIZE"); n > 0) return n;
  return 1;
}

#ifdef TAILOR_HAVE_MPI

World::World() {
  int ready = 0;
  MPI_Initialized(&ready);
  if (ready) throw Error("mpi", "MPI is already initialised (one World per process)");
  ok(MPI_Init(nullptr, nullptr), "MPI_Init");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

World::~World() {
  MPI_Finalize();
}

std::string World::broadcast(const std::string& text) const {
  uint64_t n = rank_ == 0 ? text.size() : 0;
  ok(MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
  std::string out = rank_ == 0 ? text : std::string(n, '\0');
  ok(MPI_Bcast(out.data(), as_count(n), MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return out;
}

std::vector<std::string> World::gather(const std::string& text) const {
  const int mine = as_count(text.size());
  std::vector<int> counts(rank_ == 0 ? size_ : 0), offsets(counts.size());
  ok(MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  size_t total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = as_count(total);
    total += counts[r];
  }
  as_count(total);
  std::string all(total, '\0');
  ok(MPI_Gatherv(text.data(), mine, MPI_CHAR, all.data(), counts.data(), offsets.data(), MPI_CHAR,
                 0, MPI_COMM_WORLD),
     "MPI_Gatherv");
  std::vector<std::string> out;
  for (size_t r = 0; r < counts.size(); ++r) out.push_back(all.substr(offsets[r], counts[r]));
  return out;
}

void World::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return
}

#else

World::World() {
  throw Error("mpi", fmt::format("started by mpirun with {} ranks, but this tailor was built "
                                 "without MPI (install libopenmpi-dev and rebuild), or use "
                                 "`tailor profile --shard I/N` and `tailor profile-merge`",
                                 launched_size()));
}

World::~World() = default;

std::string World::broadcast(const std::string& text) const {
  return text;
}

std::vector<std::string> World::gather(const std::string& text) const {
  return {text};
}

void World::abort(int code) const {
  std::exit(code);
}

#endif

}  // namespace tailor::mpi
