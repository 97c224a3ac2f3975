// Writing a small file that a process polls (a worker's job, a run's prune_at bound) so that the
// reader sees the old content or the new, never a part: a temporary beside it, then a rename.
//
//   if (!WriteFileAtomically(dir + "/prune_at", text)) { ... }  // false: nothing was replaced
#ifndef BATCHLAB_ORCHESTRATOR_ATOMIC_FILE_H_
#define BATCHLAB_ORCHESTRATOR_ATOMIC_FILE_H_

#include <string>

namespace batchlab::orchestrator {

bool WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_ATOMIC_FILE_H_
