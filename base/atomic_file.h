// Writing a file so that a reader sees the old content or the new, never a part: the content goes
// to a temporary beside it (`path` + `temp_suffix`), which is renamed over `path` once written and
// closed. On any failure `path` is left as it was and the temporary is removed.
//
// Used for the files a process polls (a run's prune_at bound and resume.json, a worker's job and
// its answers), the report's files, `batchlab results export --out`, the runner's checkpoints
// (durable) and its decoded-dataset cache (a unique temporary: several ranks write the same file).
//
//   BATCHLAB_RETURN_IF_ERROR(WriteFileAtomically(dir + "/prune_at", text));
//   AtomicWrite partial;  partial.temp_suffix = ".partial";
//   BATCHLAB_RETURN_IF_ERROR(WriteFileAtomically(
//       out, [&](std::FILE* f) { return WriteRows(rows, f); }, partial));
//   AtomicWrite how;  how.durable = true;
//   BATCHLAB_RETURN_IF_ERROR(WriteFileAtomically(path, write_shards, how));
//
// Errors: kFailedPrecondition when the temporary cannot be created (no such folder, no
// permission, a unique temporary that exists); kInternal when writing, syncing, closing or
// renaming it fails; or the error `write` returns.
#ifndef BATCHLAB_BASE_ATOMIC_FILE_H_
#define BATCHLAB_BASE_ATOMIC_FILE_H_

#include <cstdio>
#include <functional>
#include <string>

#include "base/status.h"

namespace batchlab {

// How the temporary is named and how far the write is made to last.
struct AtomicWrite {
  std::string temp_suffix = ".tmp";  // the temporary is `path` + temp_suffix
  // + "-<pid>-<n>", created exclusively: writers of the same path in other processes (ranks on
  // one folder) or threads never share a temporary.
  bool unique_temp = false;
  // fsync the file before the rename and its folder after: the new content survives a crash of
  // the machine, not only of the process.
  bool durable = false;
};

Status WriteFileAtomically(const std::string& path, const std::function<Status(std::FILE*)>& write,
                           const AtomicWrite& how = {});
Status WriteFileAtomically(const std::string& path, const std::string& text,
                           const AtomicWrite& how = {});

}  // namespace batchlab

#endif  // BATCHLAB_BASE_ATOMIC_FILE_H_
