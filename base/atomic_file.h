// Writing a file so that a reader sees the old content or the new, never a part: the content goes
// to a temporary beside it (`path` + `temp_suffix`), which is renamed over `path` once written and
// closed. On any failure `path` is left as it was and the temporary is removed.
//
// Used for the files a process polls (a run's prune_at bound and resume.json, a worker's job), the
// report's files and `batchlab results export --out`. The runner keeps its own copy
// (runner/worker_loop.cc: the pid in the temporary's name, for ranks sharing a folder).
//
//   BATCHLAB_RETURN_IF_ERROR(WriteFileAtomically(dir + "/prune_at", text));
//   BATCHLAB_RETURN_IF_ERROR(WriteFileAtomically(
//       out, [&](std::FILE* f) { return WriteRows(rows, f); }, ".partial"));
//
// Errors: kFailedPrecondition when the temporary cannot be created (no such folder, no
// permission); kInternal when writing, closing or renaming it fails; or the error `write` returns.
#ifndef BATCHLAB_BASE_ATOMIC_FILE_H_
#define BATCHLAB_BASE_ATOMIC_FILE_H_

#include <cstdio>
#include <functional>
#include <string>

#include "base/status.h"

namespace batchlab {

Status WriteFileAtomically(const std::string& path, const std::string& text,
                           const std::string& temp_suffix = ".tmp");

// The same with the content streamed by `write` into the open temporary.
Status WriteFileAtomically(const std::string& path, const std::function<Status(std::FILE*)>& write,
                           const std::string& temp_suffix = ".tmp");

}  // namespace batchlab

#endif  // BATCHLAB_BASE_ATOMIC_FILE_H_
