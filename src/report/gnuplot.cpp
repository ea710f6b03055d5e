#include "tailor/report/gnuplot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "tailor/core/error.h"
#include "tailor/io/atomic_file.h"

extern char** environ;

namespace tailor::report {
namespace {

namespace fs = std::filesystem;

/// A temporary folder removed on scope exit.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "tailor-gnuplot-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw Error("gnuplot",
                  std::string("cannot create a temporary folder: ") + std::strerror(errno));
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_plain(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw Error("gnuplot", "cannot write " + path.string());
}

/// The last three non-empty lines of `text`, joined by "; " (gnuplot's error
/// is at the end, often after the warning that explains it).
std::string last_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    if (line.find_first_not_of(" \r\t") != std::string::npos) lines.push_back(line);
    begin = end + 1;
  }
  std::string out;
  for (size_t i = lines.size() > 3 ? lines.size() - 3 : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : "; ") + lines[i];
  return out;
}

/// Length of the valid UTF-8 sequence at s[i], or 0 when invalid.
size_t utf8_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = 0;
  uint32_t cp = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0)
    n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0)
    n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0)
    n = 4, cp = c & 0x07;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::string run_gnuplot(const std::string& script, const std::vector<DataFile>& data) {
  ScratchDir dir;
  for (const auto& [name, bytes] : data) {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      throw Error("gnuplot", "bad data file name \"" + name + "\"");
    write_plain(dir.path() / name, bytes);
  }
  write_plain(dir.path() / "plot.gp", script);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string log = (dir.path() / "gnuplot.log").string();
  posix_spawn_file_actions_addchdir_np(&actions, dir.path().c_str());
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  char arg0[] = "gnuplot", arg1[] = "plot.gp";
  char* argv[] = {arg0, arg1, nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw Error("gnuplot", rc == ENOENT
                               ? std::string("not found on PATH; install it (Debian: gnuplot-nox, "
                                             "see scripts/install-deps.sh)")
                               : std::string("cannot start: ") + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error("gnuplot", std::string("waitpid: ") + std::strerror(errno));
  std::string messages;
  if (fs::exists(log)) messages = read_file(log);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    // posix_spawnp reports a missing program as exit code 127 on some libcs.
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && messages.empty())
      throw Error("gnuplot", "not found on PATH; install it (Debian: gnuplot-nox)");
    throw Error("gnuplot",
                "failed (" +
                    (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                       : "signal " + std::to_string(WTERMSIG(status))) +
                    "): " + last_lines(messages));
  }
  const fs::path out = dir.path() / "out.svg";
  if (!fs::exists(out)) throw Error("gnuplot", "wrote no out.svg: " + last_lines(messages));
  std::string svg = read_file(out.string());
  if (svg.find("<svg") == std::string::npos)
    throw Error("gnuplot", "out.svg holds no <svg> element");
  return svg;
}

std::string gnuplot_quote(std::string_view s, size_t max_chars) {
  std::string out = "'";
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (chars == max_chars) {
      out += "...";
      break;
    }
    const char c = s[i];
    if (c == '\'')
      out += "''";
    else if (c >= 0x20 && c < 0x7f)
      out += c;
    else
      out += '?';
    ++chars;
  }
  return out + "'";
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    const char c = s[i++];
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\t':
      case '\n':
        out += c;
        break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) out += c;
    }
  }
  return out;
}

}  // namespace tailor::report
