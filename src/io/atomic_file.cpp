#include "tailor/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ext/stdio_filebuf.h>
#include <fstream>
#include <sstream>

#include "tailor/core/error.h"

namespace tailor {

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
    }  // buf's destructor closes fd
    ::chmod(tmpl.c_str(), 0644);
    if (::rename(tmpl.c_str(), path.c_str()) != 0)
      throw Error(path, std::string("cannot rename temporary file: ") + std::strerror(errno));
    ok = true;
  } catch (...) {
    if (!ok) ::unlink(tmpl.c_str());
    throw;
  }
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic(path, [&](std::ostream& os) { os.write(bytes.data(), bytes.size()); });
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path, std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(path, "read failed");
  return ss.str();
}

}  // namespace tailor
