// A failed run's reason from its stderr (see failure_reason.h).
#include "orchestrator/execute/failure_reason.h"

#include <regex>
#include <vector>

namespace batchlab::orchestrator {
namespace {

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Lines that never say what went wrong: markers (^^^^, ~~~~, -----), traceback headers and
// frames, and mpirun's notices about how the job ended (the exit code is recorded anyway).
bool IsNoise(std::string_view line) {
  const std::string_view t = TrimLeft(line);
  if (t.empty()) return true;
  if (t.find_first_not_of("^~-=*+ ") == std::string_view::npos) return true;
  for (std::string_view p :
       {"Traceback (most recent call last)", "File \"", "During handling of the above exception",
        "The above exception was the direct cause", "Primary job", "a non-zero exit code",
        "mpirun ", "prterun ", "the job to be terminated", "job to be terminated",
        "Process name:", "Exit code:", "Per user-direction", "--------"}) {
    if (StartsWith(t, p)) return true;
  }
  return false;
}

}  // namespace

std::string FailureReason(std::string_view stderr_text) {
  std::vector<std::string_view> lines;
  while (!stderr_text.empty()) {
    const size_t nl = stderr_text.find('\n');
    lines.push_back(TrimRight(stderr_text.substr(0, nl)));
    if (nl == std::string_view::npos) break;
    stderr_text.remove_prefix(nl + 1);
  }
  // An exception's line ("ValueError: ...", "torch.distributed.DistBackendError: ..."), C++'s
  // "what():  ...", or a line that says error; else the last line that is not noise.
  static const std::regex kException(
      R"(^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Failure|Fault)\b(:.*)?$)");
  static const std::regex kSaysError(R"((^|\W)(error|fatal|abort(ed)?)(\W|$))", std::regex::icase);
  std::string_view chosen;
  for (int pass = 0; pass < 3 && chosen.empty(); ++pass) {
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
      if (IsNoise(*it)) continue;
      const std::string s(TrimLeft(*it));
      const bool match = pass == 0   ? std::regex_match(s, kException) ||
                                         StartsWith(TrimLeft(*it), "what():")
                         : pass == 1 ? std::regex_search(s, kSaysError)
                                     : true;
      // Indented lines of a traceback are source code, not the reason.
      if (pass > 0 && it->size() != TrimLeft(*it).size()) continue;
      if (match) {
        chosen = TrimLeft(*it);
        break;
      }
    }
  }
  std::string out(chosen);
  if (out.size() > 300) out = out.substr(0, 297) + "...";
  return out;
}

}  // namespace batchlab::orchestrator
