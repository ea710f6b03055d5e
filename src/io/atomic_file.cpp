#include "tailor/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ext/stdio_filebuf.h>
#include <filesystem>

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
}  // namespace

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write) {
  std::string tmpl = path + ".tmp.XXXXXX";
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
    // Make the rename itself durable.
    const std::string dir = std::filesystem::path(path).parent_path().string();
    const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
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
