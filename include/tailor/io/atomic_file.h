// Writing files and folders so a failure or a kill never leaves a half-written
// output, and the debris a killed run leaves is cleared by the next one.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace tailor {

/// Writes `path` atomically: `write` fills a temporary file `.NAME.tmp-PID.XXXXXX`
/// in the same folder, which is flushed, fsync'ed and renamed over `path`
/// (then the folder is fsync'ed; permissions 0666 less the umask) only when
/// `write` returns and every byte reached the disk. On any failure (an
/// exception from `write`, a full disk) the temporary file is removed, the
/// previous `path` is untouched, and the exception propagates (I/O failures as
/// Error naming `path`). Temporary files of `path` left by processes that no
/// longer run (killed mid-write) are removed first (clear_stale_staging).
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write);

/// write_file_atomic with a ready buffer.
void write_file_atomic(const std::string& path, std::string_view bytes);

/// Whole file into memory. Throws Error naming the file when it cannot be read
/// or is not a regular file (FIFOs and devices are refused, never waited on).
std::string read_file(const std::string& path);

/// Removes the staging debris of `target` left by processes that no longer
/// run: entries of target's folder named `.NAME.tmp-PID`, `.NAME.tmp-PID.*`
/// or `.NAME.old-PID` (NAME = target's file name) whose PID is not a live
/// process. Staging of live processes (a concurrent run) is left alone.
/// Failures to remove are ignored (the next run tries again).
void clear_stale_staging(const std::filesystem::path& target);

/// An output folder written in full under a staging name and then put in
/// place in one step, so `out` is always either the previous folder or the
/// new one, complete, even when the process is killed at any point.
///
/// The constructor resolves `out` (a symlink to a folder stands for its
/// target: the link is kept and the folder it points to is replaced), clears
/// stale staging of dead processes (clear_stale_staging), creates the parent
/// folders and an empty staging folder `.NAME.tmp-PID` beside the target
/// (permissions 0777 less the umask). commit() fsyncs the staged files and
/// swaps the staging folder with an existing target in one
/// renameat2(RENAME_EXCHANGE) (a plain rename when there is none), then
/// removes the previous content, now under the staging name. A StagedFolder
/// destroyed without commit() removes its staging folder. Throws Error naming
/// the folder when a folder cannot be created or moved.
class StagedFolder {
 public:
  explicit StagedFolder(const std::string& out);
  ~StagedFolder();
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;

  /// Path of `name` inside the staging folder.
  std::string file(const std::string& name) const { return (staging_ / name).string(); }
  /// The folder that commit() replaces (absolute, symlinks of `out` resolved).
  const std::filesystem::path& target() const { return target_; }
  /// Puts the staged folder in place; after it, target() holds the new content.
  void commit();

 private:
  std::filesystem::path target_, staging_;
  bool committed_ = false;
};

/// Test hook: when set, called with "staged" just before commit() swaps the
/// folders and with "swapped" just after (the previous content still under
/// the staging name), so a test can kill the process at those points. Not
/// for production use; pass nullptr to clear.
void set_staging_hook(std::function<void(std::string_view point)> hook);

}  // namespace tailor
