#include "orchestrator/process/captured_command.h"

#include <future>

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>

namespace batchlab::orchestrator {

namespace bp = boost::process;

StatusOr<CommandResult> RunCapturedCommand(const std::vector<std::string>& argv,
                                           const std::map<std::string, std::string>& env,
                                           const std::string& workdir) {
  if (argv.empty()) return InternalError("RunCapturedCommand: empty argv");
  boost::filesystem::path exe = argv[0];
  if (argv[0].find('/') == std::string::npos) {
    exe = bp::search_path(argv[0]);
    if (exe.empty()) return UnavailableError(fmt::format("`{}` is not in PATH", argv[0]));
  }
  bp::environment e = boost::this_process::environment();
  // set(), not operator[]: Boost 1.74's environment::find reads past shorter entries (ASan).
  for (const auto& [k, v] : env) e.set(k, v);
  std::vector<std::string> args(argv.begin() + 1, argv.end());
  try {
    boost::asio::io_context ios;
    std::future<std::string> out, err;
    bp::child child(exe, bp::args(args), e, bp::std_in<bp::null, bp::std_out> out,
                    bp::std_err > err, bp::start_dir(workdir.empty() ? "." : workdir), ios);
    ios.run();
    child.wait();
    CommandResult r;
    r.exit_code = child.exit_code();
    r.out = out.get();
    r.err = err.get();
    return r;
  } catch (const std::exception& ex) {
    return UnavailableError(fmt::format("cannot run {}: {}", argv[0], ex.what()));
  }
}

}  // namespace batchlab::orchestrator
