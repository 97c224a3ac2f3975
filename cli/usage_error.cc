// Usage-error messages with suggestions (see usage_error.h).
#include "cli/usage_error.h"

#include <optional>

#include <fmt/format.h>

#include "base/closest_name.h"

namespace batchlab::cli {
namespace {

std::vector<const CLI::App*> Subcommands(const CLI::App& app) {
  std::vector<const CLI::App*> out;
  // CLI11 2.1 offers the filtered listing on a non-const App only; it changes nothing.
  for (CLI::App* s : const_cast<CLI::App&>(app).get_subcommands([](CLI::App*) { return true; })) {
    out.push_back(s);
  }
  return out;
}

std::vector<std::string> SubcommandNames(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::App* s : Subcommands(app)) out.push_back(s->get_name());
  return out;
}

// The long flags of `app` and of every command above it (global options fall through).
std::vector<std::string> FlagNames(const CLI::App* app) {
  std::vector<std::string> out;
  for (; app != nullptr; app = app->get_parent()) {
    for (const CLI::Option* o : app->get_options()) {
      for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
    }
  }
  return out;
}

const CLI::Option* FindFlag(const CLI::App* app, const std::string& name) {
  for (; app != nullptr; app = app->get_parent()) {
    if (const CLI::Option* o = app->get_option_no_throw(name); o != nullptr && o->nonpositional()) {
      return o;
    }
  }
  return nullptr;
}

int Positionals(const CLI::App& app) {
  return static_cast<int>(
      app.get_options([](const CLI::Option* o) { return o->get_positional(); }).size());
}

bool LooksLikeNumber(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

std::string Join(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, ", ")); }

// Where a walk of `args` over the command tree stopped: the message for the first mistyped word
// (a command or a flag), if any, whether it was a command, and the command reached.
struct Walk {
  std::optional<std::string> mistyped;
  bool mistyped_command = false;
  const CLI::App* cur;
  std::string path;
};

Walk WalkArgs(const CLI::App& app, const std::vector<std::string>& args) {
  Walk w{std::nullopt, false, &app, "batchlab"};  // not argv[0], which may be a long path
  int positionals_seen = 0;
  auto help = [&] { return fmt::format("\nRun `{} --help` for usage.", w.path); };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& t = args[i];
    if (t == "--") break;
    if (t.size() > 1 && t[0] == '-') {
      const size_t eq = t.find('=');
      const std::string name = t.substr(0, eq);
      const CLI::Option* o = FindFlag(w.cur, name);
      if (o == nullptr) {
        w.mistyped = fmt::format("unknown flag '{}' for `{}`{}", name, w.path,
                                 DidYouMean(name, FlagNames(w.cur))) +
                     help();
        return w;
      }
      if (eq != std::string::npos || o->get_type_size_max() == 0) continue;
      const bool has_next = i + 1 < args.size();
      if (o->get_expected_min() > 0) {
        ++i;  // the flag's value
      } else if (has_next && LooksLikeNumber(args[i + 1])) {
        ++i;  // an optional value given (--watch 2)
      }
      continue;
    }
    const CLI::App* sub = nullptr;
    for (const CLI::App* s : Subcommands(*w.cur)) {
      if (s->check_name(t)) sub = s;
    }
    if (sub != nullptr) {
      w.cur = sub;
      w.path += " " + t;
      positionals_seen = 0;
      continue;
    }
    if (positionals_seen < Positionals(*w.cur)) {
      ++positionals_seen;
      continue;
    }
    const std::vector<std::string> names = SubcommandNames(*w.cur);
    if (!names.empty()) {
      w.mistyped = fmt::format("unknown command '{}' for `{}`{} (commands: {})", t, w.path,
                               DidYouMean(t, names), Join(names)) +
                   help();
      w.mistyped_command = true;
      return w;
    }
    break;
  }
  return w;
}

}  // namespace

std::string UsageErrorMessage(const CLI::App& app, const CLI::ParseError& error,
                              const std::vector<std::string>& args) {
  const Walk w = WalkArgs(app, args);
  if (w.mistyped) return *w.mistyped;
  // Nothing mistyped on the way: a command left out, or CLI11's own reason.
  const std::vector<std::string> names = SubcommandNames(*w.cur);
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr && !names.empty() &&
      std::string(error.what()).find("subcommand") != std::string::npos) {
    return fmt::format("`{}` needs a subcommand: {}", w.path, Join(names)) +
           fmt::format("\nRun `{} --help` for usage.", w.path);
  }
  return std::string(error.what()) + fmt::format("\nRun `{} --help` for usage.", w.path);
}

std::optional<std::string> UnknownCommandMessage(const CLI::App& app,
                                                 const std::vector<std::string>& args) {
  Walk w = WalkArgs(app, args);
  if (!w.mistyped_command) return std::nullopt;
  return w.mistyped;
}

}  // namespace batchlab::cli
