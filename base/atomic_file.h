// Small POSIX file helpers shared by the plugin's state writers (CDI specs, checkpoint): an
// atomic replace (temp file, fsync, rename, fsync of the directory), directory creation and whole-
// file reads. Errors read "<operation> <path>: <OS cause>"; callers add what the file is.
// Thread-compatible: two writers of one path must be serialised by the caller (they share the
// temp file name).
#ifndef XPU_BASE_ATOMIC_FILE_H_
#define XPU_BASE_ATOMIC_FILE_H_

#include <sys/types.h>

#include <string>
#include <string_view>

#include "base/status.h"

namespace xpu {

// Replaces `path` with `contents`: writes "<path>.tmp" (O_CREAT|O_TRUNC|O_CLOEXEC, then chmod to
// exactly `mode`), fsyncs it, renames it over `path` and fsyncs the directory. On failure the
// temp file is removed and `path` is unchanged.
Status WriteFileAtomically(const std::string& path, std::string_view contents, mode_t mode);

// The whole file. NotFound when it does not exist; other failures with the OS cause.
StatusOr<std::string> ReadWholeFile(const std::string& path);

// Removes `path`; a missing file is success. Fsyncs the directory when something was removed.
Status RemoveFileDurably(const std::string& path);

// Creates `dir` and any missing parents with `mode`; an existing directory is success.
Status MakeDirectories(const std::string& dir, mode_t mode);

// fsync of a directory, so that a rename or unlink inside it survives a crash.
Status SyncDirectory(const std::string& dir);

// The directory part of `path` ("a/b" for "a/b/c", "." for "c", "/" for "/c").
std::string DirectoryOf(const std::string& path);

}  // namespace xpu

#endif  // XPU_BASE_ATOMIC_FILE_H_
