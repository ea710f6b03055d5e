#include "tailor/io/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ext/stdio_filebuf.h>
#include <filesystem>
#include <optional>

#include "tailor/core/error.h"
#include "tailor/core/tensor.h"

namespace tailor {
namespace {
mode_t process_umask() {
  static const mode_t mask = [] {
    const mode_t m = ::umask(0);
    ::umask(m);
    return m;
  }();
  return mask;
}

namespace fs = std::filesystem;

std::function<void(std::string_view)>& staging_hook() {
  static std::function<void(std::string_view)> hook;
  return hook;
}

void call_hook(std::string_view point) {
  if (staging_hook()) staging_hook()(point);
}

/// The PID in a staging entry `name` of a file or folder called `target`:
/// `.T.tmp-PID`, `.T.tmp-PID.*` or `.T.old-PID`; nullopt for any other name.
std::optional<pid_t> staging_pid(const std::string& name, const std::string& target) {
  for (const char* kind : {".tmp-", ".old-"}) {
    const std::string prefix = "." + target + kind;
    if (!name.starts_with(prefix)) continue;
    size_t i = prefix.size(), digits = 0;
    long long pid = 0;
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && digits < 10; ++i, ++digits)
      pid = pid * 10 + (name[i] - '0');
    if (digits == 0 || pid <= 0 || pid > INT32_MAX) continue;
    const bool tail_ok = i == name.size() || (std::string_view(kind) == ".tmp-" && name[i] == '.');
    if (tail_ok) return static_cast<pid_t>(pid);
  }
  return std::nullopt;
}

bool process_alive(pid_t pid) {
  return pid == ::getpid() || ::kill(pid, 0) == 0 || errno == EPERM;
}

void fsync_folder(const fs::path& dir) {
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void fsync_files_in(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  }
  fsync_folder(dir);
}

/// `out` made absolute, with a symlink as its last component resolved to the
/// folder it points to.
fs::path resolve_output_folder(const std::string& out) {
  if (out.empty()) throw Error("(empty path)", "no output folder given");
  fs::path p = fs::absolute(out).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::error_code ec;
  if (!fs::is_symlink(fs::symlink_status(p, ec))) return p;
  const fs::path resolved = fs::canonical(p, ec);
  if (ec || !fs::is_directory(resolved, ec))
    throw Error(out, "is a symbolic link to something that is not a folder");
  return resolved;
}
}  // namespace

void set_staging_hook(std::function<void(std::string_view point)> hook) {
  staging_hook() = std::move(hook);
}

void clear_stale_staging(const fs::path& target) {
  const fs::path abs = fs::absolute(target).lexically_normal();
  const std::string name = abs.filename().string();
  if (name.empty()) return;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(abs.parent_path(), ec)) {
    const auto pid = staging_pid(e.path().filename().string(), name);
    if (!pid || process_alive(*pid)) continue;
    std::error_code ignored;
    fs::remove_all(e.path(), ignored);
  }
}

StagedFolder::StagedFolder(const std::string& out) : target_(resolve_output_folder(out)) {
  const fs::path parent = target_.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw Error(parent.string(), "cannot create folder: " + ec.message());
  clear_stale_staging(target_);
  staging_ = parent / fmt::format(".{}.tmp-{}", target_.filename().string(), ::getpid());
  fs::remove_all(staging_, ec);              // this process's own earlier attempt
  if (::mkdir(staging_.c_str(), 0777) != 0)  // 0777 less the umask, as mkdir(1)
    throw Error(staging_.string(),
                std::string("cannot create staging folder: ") + std::strerror(errno));
}

StagedFolder::~StagedFolder() {
  std::error_code ec;
  if (!committed_) fs::remove_all(staging_, ec);
}

void StagedFolder::commit() {
  fsync_files_in(staging_);
  call_hook("staged");
  std::error_code ec;
  const bool replacing = fs::exists(fs::symlink_status(target_, ec));
  if (replacing && !fs::is_directory(fs::symlink_status(target_, ec)))
    throw Error(target_.string(), "exists and is not a folder");
  if (!replacing) {
    if (::rename(staging_.c_str(), target_.c_str()) != 0)
      throw Error(target_.string(),
                  std::string("cannot move the staged output into place: ") + std::strerror(errno));
    committed_ = true;
    fsync_folder(target_.parent_path());
    return;
  }
  if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) == 0) {
    committed_ = true;  // staging_ now holds the previous content
    fsync_folder(target_.parent_path());
    call_hook("swapped");
    fs::remove_all(staging_, ec);
    return;
  }
  if (errno != EINVAL && errno != ENOSYS)
    throw Error(target_.string(),
                std::string("cannot replace the existing folder: ") + std::strerror(errno));
  // A file system without RENAME_EXCHANGE: two renames. A kill between them
  // leaves `target` absent and its previous content in .NAME.old-PID, which
  // the next run clears.
  const fs::path old =
      target_.parent_path() / fmt::format(".{}.old-{}", target_.filename().string(), ::getpid());
  fs::remove_all(old, ec);
  if (::rename(target_.c_str(), old.c_str()) != 0)
    throw Error(target_.string(),
                std::string("cannot replace the existing folder: ") + std::strerror(errno));
  if (::rename(staging_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    ::rename(old.c_str(), target_.c_str());
    throw Error(target_.string(),
                std::string("cannot move the staged output into place: ") + std::strerror(err));
  }
  committed_ = true;
  fsync_folder(target_.parent_path());
  call_hook("swapped");
  fs::remove_all(old, ec);
}

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write) {
  const fs::path target(path);
  clear_stale_staging(target);
  std::string tmpl = (target.parent_path() /
                      fmt::format(".{}.tmp-{}.XXXXXX", target.filename().string(), ::getpid()))
                         .string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0)
    throw Error(path, std::string("cannot create temporary file: ") + std::strerror(errno));
  bool ok = false;
  try {
    {
      __gnu_cxx::stdio_filebuf<char> buf(fd, std::ios::out | std::ios::binary, 1 << 20);
      std::ostream os(&buf);
      write(os);
      os.flush();
      if (!os) throw Error(path, "write failed (disk full?)");
      if (::fsync(fd) != 0) throw Error(path, std::string("fsync failed: ") + std::strerror(errno));
    }                                                // buf's destructor closes fd
    ::chmod(tmpl.c_str(), 0666 & ~process_umask());  // mkstemp made it 0600
    if (::rename(tmpl.c_str(), path.c_str()) != 0)
      throw Error(path, std::string("cannot rename temporary file: ") + std::strerror(errno));
    ok = true;
    fsync_folder(target.parent_path());  // make the rename itself durable
  } catch (...) {
    if (!ok) ::unlink(tmpl.c_str());
    throw;
  }
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, [&](std::ostream& os) { os.write(bytes.data(), bytes.size()); });
}

std::string read_file(const std::string& path) {
  // Through a mapping: refuses FIFOs and devices without blocking (map_file).
  const auto storage = Storage::map_file(path);
  return std::string(reinterpret_cast<const char*>(storage->data()), storage->size());
}

}  // namespace tailor
