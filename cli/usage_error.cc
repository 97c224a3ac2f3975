// Usage-error messages with suggestions (see usage_error.h).
#include "cli/usage_error.h"

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

}  // namespace

std::string UsageErrorMessage(const CLI::App& app, const CLI::ParseError& error,
                              const std::vector<std::string>& args) {
  const CLI::App* cur = &app;
  std::string path = "batchlab";  // not argv[0], which may be a long path
  int positionals_seen = 0;
  auto help = [&] { return fmt::format("\nRun `{} --help` for usage.", path); };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& t = args[i];
    if (t == "--") break;
    if (t.size() > 1 && t[0] == '-') {
      const size_t eq = t.find('=');
      const std::string name = t.substr(0, eq);
      const CLI::Option* o = FindFlag(cur, name);
      if (o == nullptr) {
        return fmt::format("unknown flag '{}' for `{}`{}", name, path,
                           DidYouMean(name, FlagNames(cur))) +
               help();
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
    for (const CLI::App* s : Subcommands(*cur)) {
      if (s->check_name(t)) sub = s;
    }
    if (sub != nullptr) {
      cur = sub;
      path += " " + t;
      positionals_seen = 0;
      continue;
    }
    if (positionals_seen < Positionals(*cur)) {
      ++positionals_seen;
      continue;
    }
    const std::vector<std::string> names = SubcommandNames(*cur);
    if (!names.empty()) {
      return fmt::format("unknown command '{}' for `{}`{} (commands: {})", t, path,
                         DidYouMean(t, names), Join(names)) +
             help();
    }
    break;
  }
  // Nothing mistyped on the way: a command left out, or CLI11's own reason.
  const std::vector<std::string> names = SubcommandNames(*cur);
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr && !names.empty() &&
      std::string(error.what()).find("subcommand") != std::string::npos) {
    return fmt::format("`{}` needs a subcommand: {}", path, Join(names)) + help();
  }
  return std::string(error.what()) + help();
}

}  // namespace batchlab::cli
