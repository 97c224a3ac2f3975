#include "base/config_check.h"

#include <fmt/format.h>

#include "base/closest_name.h"
#include "base/json_path.h"

namespace batchlab::config {
namespace {

using nlohmann::json;

std::vector<std::string> ChildNameList(const Field& parent, bool derived_allowed) {
  std::vector<std::string> out;
  for (const Field& c : parent.children) {
    if (c.reader == Reader::kOrchestrator && !derived_allowed) continue;
    out.push_back(c.name);
  }
  return out;
}

std::string ChildNames(const Field& parent, bool derived_allowed) {
  std::string out;
  for (const std::string& name : ChildNameList(parent, derived_allowed)) {
    out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

std::string Quoted(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "\"" : ", \"") + v + "\"";
  return out;
}

std::string RangeText(const Field& f) {
  auto text = [&](double x) {
    return f.type == Type::kNumber ? fmt::format("{}", x)
                                   : fmt::format("{}", static_cast<long long>(x));
  };
  return fmt::format("{} {} and {} {}", f.min_exclusive ? ">" : ">=", text(f.min),
                     f.max_exclusive ? "<" : "<=", text(f.max));
}

bool InRange(const Field& f, double v) {
  if (f.min_exclusive ? !(v > f.min) : !(v >= f.min)) return false;
  if (f.max_exclusive ? !(v < f.max) : !(v <= f.max)) return false;
  return true;
}

Status Invalid(const std::string& where, const json& value, const std::string& what) {
  return InvalidArgumentError(fmt::format("{}: {} {}", where, value.dump(), what));
}

Status CheckInt(const Field& f, const json& v, const std::string& where) {
  for (const auto& name : f.allowed) {  // a named value the integer field also accepts
    if (v.is_string() && v.get<std::string>() == name) return OkStatus();
  }
  if (!v.is_number_integer() && !f.allowed.empty()) {
    return Invalid(where, v, "is neither an integer nor one of " + Quoted(f.allowed));
  }
  if (!v.is_number_integer()) {
    return Invalid(where, v, f.min == 1 ? "is not a positive integer" : "is not an integer");
  }
  // As a double, so an integer beyond int64 (JSON allows it) is out of range, never wrapped.
  const double x = v.get<double>();
  if (f.min == 1 && x < 1) return Invalid(where, v, "is not a positive integer");
  if (!InRange(f, x)) return Invalid(where, v, "is out of range: must be " + RangeText(f));
  return OkStatus();
}

Status DerivedError(const std::string& where) {
  return InvalidArgumentError(
      fmt::format("{}: derived by the orchestrator and cannot be set (see docs/spec.md)", where));
}

Status CheckChildren(const Field& f, const json& v, const std::string& where,
                     const CheckOptions& options) {
  for (const Field& c : f.children) {
    if (options.complete && c.required && !v.contains(c.name)) {
      std::string names;
      for (const Field& r : f.children) {
        if (r.required) names += (names.empty() ? "" : ", ") + r.name;
      }
      return InvalidArgumentError(
          fmt::format("{}: missing; {} needs {}{}", JoinPath(where, c.name), where, names,
                      f.type == Type::kObjectOrNull ? " (or " + where + ": null for none)" : ""));
    }
  }
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string sub = JoinPath(where, it.key());
    const Field* child = f.Child(it.key());
    // model, data of the built-in runner: a key not declared here is a registered model's or
    // dataset's own field (runner/config/own_fields.h), judged by batchlab-runner --validate-batch.
    if (child == nullptr && f.users_own_object) continue;
    if (child == nullptr) {
      return InvalidArgumentError(
          fmt::format("{}: unknown field; allowed here: {}{}", sub,
                      ChildNames(f, options.derived_allowed),
                      DidYouMean(it.key(), ChildNameList(f, options.derived_allowed))));
    }
    if (child->reader == Reader::kOrchestrator && !options.derived_allowed) {
      return DerivedError(sub);
    }
    if (options.user_program && child->users_own_object) {
      if (!it.value().is_object()) return Invalid(sub, it.value(), "is not an object");
      continue;  // the user program's own model/data description
    }
    BATCHLAB_RETURN_IF_ERROR(CheckField(*child, it.value(), sub, {false, false, options.complete}));
  }
  return OkStatus();
}

}  // namespace

Status CheckField(const Field& f, const json& v, const std::string& where,
                  const CheckOptions& options) {
  switch (f.type) {
    case Type::kInt:
      return CheckInt(f, v, where);
    case Type::kNumber:
      if (!v.is_number()) return Invalid(where, v, "is not a number");
      if (!InRange(f, v.get<double>())) {
        return Invalid(where, v, "is out of range: must be " + RangeText(f));
      }
      return OkStatus();
    case Type::kString:
      if (!v.is_string()) return Invalid(where, v, "is not a string");
      if (!f.allowed.empty()) {
        for (const auto& a : f.allowed) {
          if (v.get<std::string>() == a) return OkStatus();
        }
        return Invalid(where, v, "is not one of " + Quoted(f.allowed));
      }
      return OkStatus();
    case Type::kBool:
      if (!v.is_boolean()) return Invalid(where, v, "is not true or false");
      return OkStatus();
    case Type::kIntArray: {
      if (!v.is_array()) return Invalid(where, v, "is not an array of integers");
      Field elem = f;
      elem.type = Type::kInt;
      for (size_t i = 0; i < v.size(); ++i) {
        BATCHLAB_RETURN_IF_ERROR(CheckInt(elem, v[i], fmt::format("{}[{}]", where, i)));
      }
      return OkStatus();
    }
    case Type::kStringArray:
      if (!v.is_array()) return Invalid(where, v, "is not an array of strings");
      for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_string()) {
          return Invalid(fmt::format("{}[{}]", where, i), v[i], "is not a string");
        }
      }
      return OkStatus();
    case Type::kAnyObject:
      if (!v.is_object()) return Invalid(where, v, "is not an object");
      return OkStatus();
    case Type::kObjectOrNull:
      if (v.is_null()) return OkStatus();
      [[fallthrough]];
    case Type::kObject:
      if (!v.is_object()) {
        return Invalid(
            where, v,
            f.type == Type::kObjectOrNull ? "is not an object or null" : "is not an object");
      }
      return CheckChildren(f, v, where, options);
  }
  return InternalError("unreachable");
}

Status CheckValue(const std::string& dotted_path, const json& value, const std::string& where,
                  const CheckOptions& options) {
  const Field* f = &Root();
  std::string walked;
  size_t start = 0;
  while (true) {
    size_t dot = dotted_path.find('.', start);
    std::string part =
        dotted_path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const Field* child = f->Child(part);
    if (child == nullptr && f->users_own_object) {
      return OkStatus();  // a registered model's or dataset's own field: the runner judges it
    }
    if (child == nullptr) {
      return InvalidArgumentError(
          fmt::format("{}: {} is not a config field; allowed {}: {}{}", where,
                      Escaped(dotted_path), walked.empty() ? "at the top level" : "under " + walked,
                      ChildNames(*f, options.derived_allowed),
                      DidYouMean(part, ChildNameList(*f, options.derived_allowed))));
    }
    if (child->reader == Reader::kOrchestrator && !options.derived_allowed) {
      return InvalidArgumentError(fmt::format(
          "{}: \"{}\" is derived by the orchestrator and cannot be set (see docs/spec.md)", where,
          dotted_path));
    }
    walked = walked.empty() ? part : walked + "." + part;
    f = child;
    // The user's own fields: anything goes below `params` (and below `model` / `data` of a user
    // program), but a path into them must still be all objects.
    if (f->type == Type::kAnyObject || (options.user_program && f->users_own_object)) {
      if (dot == std::string::npos && !value.is_object()) {
        return Invalid(where, value, "is not an object");
      }
      return OkStatus();
    }
    if (dot == std::string::npos) break;
    if (!f->IsObject()) {
      return InvalidArgumentError(fmt::format("{}: \"{}\" is not an object, so {} has no fields",
                                              where, walked, Escaped(dotted_path)));
    }
    start = dot + 1;
  }
  // An optional object (batch_schedule, program) swept as null: left out of that point.
  if (value.is_null() && f->optional_object) return OkStatus();
  return CheckField(*f, value, where);
}

Status CheckObject(const json& config, const std::string& where, const CheckOptions& options) {
  if (!config.is_object())
    return Invalid(where.empty() ? "config" : where, config, "is not an object");
  return CheckChildren(Root(), config, where, options);
}

}  // namespace batchlab::config
