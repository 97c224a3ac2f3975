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

#include <optional>
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

// The same message for a word that is not a command where one is expected (`batchlab analyze
// lr`), if `args` has one; nullopt otherwise. Help asked after such a word (`batchlab analyze lr
// --help`) is this error, exit 2, not the help of the group above it: CLI11 answers the help
// flag before it looks at the words it could not place. A mistyped flag met first is left to
// the help of the command it follows (which lists the right one).
std::optional<std::string> UnknownCommandMessage(const CLI::App& app,
                                                 const std::vector<std::string>& args);

}  // namespace batchlab::cli

#endif  // BATCHLAB_CLI_USAGE_ERROR_H_
