#include "orchestrator/launch/runner_locator.h"

#include <unistd.h>

#include <cstdlib>
#include <vector>

#include <fmt/format.h>
#include <boost/filesystem.hpp>
#include <boost/process/search_path.hpp>

#include "base/self_executable.h"
#include "orchestrator/spec/program.h"

namespace batchlab::orchestrator {
namespace {

namespace bfs = boost::filesystem;

// Looks for `name` in `dirs` (relative to the running binary's folder), then in PATH.
StatusOr<std::string> LocateBinary(const std::string& name, const std::vector<std::string>& dirs,
                                   const std::string& self_exe, std::vector<std::string>* looked) {
  auto accept = [](const bfs::path& p) { return bfs::absolute(p).lexically_normal().string(); };
  const bfs::path self = self_exe.empty() ? bfs::path(SelfExecutable()) : bfs::path(self_exe);
  if (!self.empty()) {
    for (const std::string& d : dirs) {
      bfs::path candidate = self.parent_path() / d / name;
      if (IsExecutableFile(candidate.string())) return accept(candidate);
      looked->push_back(candidate.lexically_normal().string());
    }
  }
  bfs::path found = boost::process::search_path(name);
  if (!found.empty() && IsExecutableFile(found.string())) return accept(found);
  looked->push_back("PATH");
  std::string where;
  for (const auto& l : *looked) where += (where.empty() ? "" : ", ") + l;
  return NotFoundError(fmt::format("{} not found (looked in {})", name, where));
}

}  // namespace

StatusOr<std::string> LocateRunner(const std::string& flag, const std::string& self_exe) {
  if (!flag.empty()) {
    if (IsExecutableFile(flag)) return bfs::absolute(flag).lexically_normal().string();
    return NotFoundError(fmt::format("--runner: {} is not an executable file", flag));
  }
  if (const char* env = std::getenv("BATCHLAB_RUNNER"); env != nullptr && *env != '\0') {
    if (IsExecutableFile(env)) return bfs::absolute(env).lexically_normal().string();
    return NotFoundError(fmt::format("BATCHLAB_RUNNER={} is not an executable file", env));
  }
  std::vector<std::string> looked;
  auto found = LocateBinary("batchlab-runner", {"../runner", "."}, self_exe, &looked);
  if (found.ok()) return found;
  return NotFoundError(fmt::format(
      "{}; build it (cmake --build build --target batchlab-runner), or pass --runner PATH or set "
      "BATCHLAB_RUNNER",
      found.status().message()));
}

StatusOr<std::string> LocateRankExec(const std::string& self_exe) {
  std::vector<std::string> looked;
  auto found = LocateBinary("batchlab-rank", {".", "../cli"}, self_exe, &looked);
  if (found.ok()) return found;
  return NotFoundError(
      fmt::format("{}; it is built next to `batchlab` (cmake --build build --target batchlab-rank)",
                  found.status().message()));
}

}  // namespace batchlab::orchestrator
