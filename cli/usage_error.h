// The message of a command-line usage error, in the one style of every batchlab error
// ("batchlab: error: ..."), naming the command it concerns and, for a mistyped command or flag,
// the closest valid one:
//
//   $ batchlab swep list
//   batchlab: error: unknown command 'swep' for `batchlab`; did you mean 'sweep'? (commands:
//   sweep, results, analyze, report, ui)
//   Run `batchlab --help` for usage.
#ifndef BATCHLAB_CLI_USAGE_ERROR_H_
#define BATCHLAB_CLI_USAGE_ERROR_H_

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace batchlab::cli {

// The message for `error`, raised by `app` parsing `args` (argv without the program name).
// Walks `args` over the command tree: the first word that is not a command where one is
// expected, or the first flag no command on the way knows, is named with a suggestion; a
// missing command lists the choices; anything else keeps CLI11's own words. Several lines,
// no trailing newline, without the "batchlab: error: " prefix.
std::string UsageErrorMessage(const CLI::App& app, const CLI::ParseError& error,
                              const std::vector<std::string>& args);

}  // namespace batchlab::cli

#endif  // BATCHLAB_CLI_USAGE_ERROR_H_
