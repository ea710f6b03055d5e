#include "tailor/profile/shard_mpi.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "mpi_module.h"
#include "tailor/core/error.h"

#ifndef TAILOR_MPI_MODULE_DIR
#define TAILOR_MPI_MODULE_DIR "../lib/tailor"
#endif

namespace tailor::mpi {

/// The functions of libtailor_mpi.so (mpi_module.h), resolved by dlopen.
struct Module {
  int (*init)(int*, int*) = nullptr;
  int (*finalize)() = nullptr;
  int (*broadcast)(void*, int) = nullptr;
  int (*gather_int)(int, int*) = nullptr;
  int (*gatherv)(const char*, int, char*, const int*, const int*) = nullptr;
  int (*abort)(int) = nullptr;
  void (*error_string)(int, char*, size_t) = nullptr;
};

namespace {

constexpr const char* kModuleName = "libtailor_mpi.so";

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : 0;
}

/// Where the module may be, in order: beside the running binary (a build
/// tree) and in the install layout's TAILOR_MPI_MODULE_DIR relative to it
/// (bin/../lib/tailor).
std::vector<std::filesystem::path> module_candidates() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const std::filesystem::path dir = exe.parent_path();
  return {dir / kModuleName, (dir / TAILOR_MPI_MODULE_DIR / kModuleName).lexically_normal()};
}

std::filesystem::path find_module() {
  for (const auto& p : module_candidates()) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) return p;
  }
  return {};
}

template <typename F>
void resolve(void* handle, const char* name, F& f, const std::filesystem::path& path) {
  void* symbol = ::dlsym(handle, name);
  if (!symbol)
    throw Error(path.string(), fmt::format("not a tailor MPI module: no symbol {}", name));
  f = reinterpret_cast<F>(symbol);
}

/// Loads the module once per process (it stays loaded: MPI cannot be
/// initialised twice anyway).
const Module& load_module() {
  static const Module module = [] {
    const std::filesystem::path path = find_module();
    if (path.empty()) {
      std::string looked;
      for (const auto& p : module_candidates()) looked += (looked.empty() ? "" : ", ") + p.string();
      throw Error("mpi", fmt::format("started by mpirun with {} ranks, but tailor's MPI module "
                                     "{} is not installed (looked in {}); build tailor with MPI "
                                     "(libopenmpi-dev), or use `tailor profile --shard I/N` and "
                                     "`tailor profile-merge`",
                                     launched_size(), kModuleName, looked));
    }
    // RTLD_GLOBAL: Open MPI's own plugins resolve symbols of libmpi it loads.
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle) throw Error(path.string(), fmt::format("cannot load: {}", ::dlerror()));
    int (*version)() = nullptr;
    resolve(handle, "tailor_mpi_version", version, path);
    if (version() != kTailorMpiVersion)
      throw Error(path.string(), fmt::format("MPI module of interface {}, this tailor needs {} "
                                             "(a module from another build)",
                                             version(), kTailorMpiVersion));
    Module m;
    resolve(handle, "tailor_mpi_init", m.init, path);
    resolve(handle, "tailor_mpi_finalize", m.finalize, path);
    resolve(handle, "tailor_mpi_broadcast", m.broadcast, path);
    resolve(handle, "tailor_mpi_gather_int", m.gather_int, path);
    resolve(handle, "tailor_mpi_gatherv", m.gatherv, path);
    resolve(handle, "tailor_mpi_abort", m.abort, path);
    resolve(handle, "tailor_mpi_error_string", m.error_string, path);
    return m;
  }();
  return module;
}

void ok(const Module& m, int rc, const char* what) {
  if (rc == 0) return;
  char text[512];
  m.error_string(rc, text, sizeof text);
  throw Error("mpi", fmt::format("{} failed: {}", what, text));
}

int as_count(size_t n) {
  if (n > size_t(std::numeric_limits<int>::max()))
    throw Error("mpi", fmt::format("a message of {} bytes is past MPI's int count", n));
  return static_cast<int>(n);
}

}  // namespace

bool available() {
  return !find_module().empty();
}

int launched_size() {
  if (const int n = env_int("OMPI_COMM_WORLD_SIZE"); n > 0) return n;
  if (const int n = env_int("PMI_SIZE"); n > 0) return n;
  return 1;
}

int launched_rank() {
  if (const char* v = std::getenv("OMPI_COMM_WORLD_RANK"); v && *v) return std::atoi(v);
  return env_int("PMI_RANK");
}

World::World() : m_(&load_module()) {
  static bool started = false;
  if (started) throw Error("mpi", "MPI is already initialised (one World per process)");
  started = true;
  ok(*m_, m_->init(&rank_, &size_), "MPI_Init");
  // The launcher's environment promised more ranks than MPI sees: the
  // variables were set by hand or the launch broke, and every process would
  // profile every layer and write the same file.
  if (const int promised = launched_size(); promised != size_) {
    m_->finalize();
    throw Error("mpi", fmt::format("the environment says {} ranks (OMPI_COMM_WORLD_SIZE / "
                                   "PMI_SIZE) but MPI sees {}: start tailor with mpirun",
                                   promised, size_));
  }
}

World::~World() {
  m_->finalize();
}

std::string World::broadcast(const std::string& text) const {
  uint64_t n = rank_ == 0 ? text.size() : 0;
  ok(*m_, m_->broadcast(&n, sizeof n), "MPI_Bcast");
  std::string out = rank_ == 0 ? text : std::string(n, '\0');
  ok(*m_, m_->broadcast(out.data(), as_count(n)), "MPI_Bcast");
  return out;
}

std::vector<std::string> World::gather(const std::string& text) const {
  const int mine = as_count(text.size());
  std::vector<int> counts(rank_ == 0 ? size_ : 0), offsets(counts.size());
  ok(*m_, m_->gather_int(mine, counts.data()), "MPI_Gather");
  size_t total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = as_count(total);
    total += counts[r];
  }
  as_count(total);
  std::string all(total, '\0');
  ok(*m_, m_->gatherv(text.data(), mine, all.data(), counts.data(), offsets.data()), "MPI_Gatherv");
  std::vector<std::string> out;
  for (size_t r = 0; r < counts.size(); ++r) out.push_back(all.substr(offsets[r], counts[r]));
  return out;
}

void World::abort(int code) const {
  m_->abort(code);
  std::abort();  // MPI_Abort does not return
}

}  // namespace tailor::mpi
