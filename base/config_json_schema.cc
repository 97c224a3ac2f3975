#include "base/config_json_schema.h"

#include <fmt/format.h>

#include "base/config_fields.h"
#include "base/spec_bounds.h"

namespace batchlab::config {
namespace {

using nlohmann::ordered_json;

// The generic bounds (base/spec_bounds.h) are left out of the schema and the table: they hold for
// every number.
bool GenericMin(const Field& f) {
  return f.min == -kMaxSpecNumber || f.min == -static_cast<double>(kMaxSpecInteger);
}
bool GenericMax(const Field& f) {
  return f.max == kMaxSpecNumber || f.max == static_cast<double>(kMaxSpecInteger);
}

// A bound as JSON: whole numbers as integers (0, not 0.0).
ordered_json Bound(const Field&, double x) {
  if (x == static_cast<double>(static_cast<long long>(x))) return static_cast<long long>(x);
  return x;
}

void AddRange(const Field& f, ordered_json& node) {
  if (!GenericMin(f)) node[f.min_exclusive ? "exclusiveMinimum" : "minimum"] = Bound(f, f.min);
  if (!GenericMax(f)) node[f.max_exclusive ? "exclusiveMaximum" : "maximum"] = Bound(f, f.max);
}

ordered_json SchemaOf(const Field& f) {
  ordered_json node = ordered_json::object();
  switch (f.type) {
    case Type::kInt:
      node["type"] = "integer";
      AddRange(f, node);
      if (!f.allowed.empty()) {  // an integer or one of the names
        ordered_json names = ordered_json::object();
        names["enum"] = f.allowed;
        node = ordered_json{{"oneOf", ordered_json::array({node, names})}};
      }
      break;
    case Type::kNumber:
      node["type"] = "number";
      AddRange(f, node);
      break;
    case Type::kString:
      node["type"] = "string";
      if (!f.allowed.empty()) node["enum"] = f.allowed;
      break;
    case Type::kBool:
      node["type"] = "boolean";
      break;
    case Type::kIntArray: {
      ordered_json items = {{"type", "integer"}};
      AddRange(f, items);
      node["type"] = "array";
      node["items"] = items;
      break;
    }
    case Type::kStringArray:
      node["type"] = "array";
      node["items"] = {{"type", "string"}};
      break;
    case Type::kAnyObject:
      node["type"] = "object";
      break;
    case Type::kObject:
    case Type::kObjectOrNull: {
      if (f.type == Type::kObject) {
        node["type"] = "object";
      } else {
        node["type"] = ordered_json::array({"object", "null"});
      }
      // model, data: other keys are a registered model's or dataset's own fields (the runner's).
      node["additionalProperties"] = f.users_own_object;
      ordered_json props = ordered_json::object();
      ordered_json required = ordered_json::array();
      for (const Field& c : f.children) {
        if (c.reader != Reader::kOrchestrator) props[c.name] = SchemaOf(c);
        if (c.required) required.push_back(c.name);
      }
      node["properties"] = props;
      if (!required.empty()) node["required"] = required;
      break;
    }
  }
  if (!f.meaning.empty()) node["description"] = f.meaning;
  if (f.default_value.has_value()) node["default"] = ordered_json::parse(f.default_value->dump());
  return node;
}

std::string Number(const Field& f, double x) {
  return f.type == Type::kNumber ? fmt::format("{}", x)
                                 : fmt::format("{}", static_cast<long long>(x));
}

std::string RangeSuffix(const Field& f) {
  const bool lo = !GenericMin(f), hi = !GenericMax(f);
  if (lo && hi) {
    return fmt::format(" in {}{}, {}{}", f.min_exclusive ? "(" : "[", Number(f, f.min),
                       Number(f, f.max), f.max_exclusive ? ")" : "]");
  }
  if (lo) return fmt::format(" {} {}", f.min_exclusive ? ">" : "≥", Number(f, f.min));
  if (hi) return fmt::format(" {} {}", f.max_exclusive ? "<" : "≤", Number(f, f.max));
  return "";
}

std::string TypeText(const Field& f) {
  switch (f.type) {
    case Type::kInt: {
      std::string names;
      for (const auto& a : f.allowed) names += " or `" + a + "`";
      return "int" + RangeSuffix(f) + names;
    }
    case Type::kNumber:
      return "number" + RangeSuffix(f);
    case Type::kString: {
      if (f.allowed.empty()) return "string";
      std::string out;
      for (const auto& a : f.allowed) out += (out.empty() ? "`" : " \\| `") + a + "`";
      return out;
    }
    case Type::kBool:
      return "bool";
    case Type::kIntArray:
      return "int array (each" + RangeSuffix(f) + ")";
    case Type::kStringArray:
      return "string array";
    case Type::kObject:
      return "object";
    case Type::kObjectOrNull:
      return "object or null";
    case Type::kAnyObject:
      return "any object";
  }
  return "";
}

std::string Escaped(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

ordered_json JsonSchema() {
  ordered_json schema = SchemaOf(Root());
  std::string derived;
  for (const Field& c : Root().children) {
    if (c.reader == Reader::kOrchestrator) derived += (derived.empty() ? "" : ", ") + c.name;
  }
  schema.erase("description");
  ordered_json out = {{"type", "object"}, {"additionalProperties", false}};
  out["description"] =
      "a partial resolved config (docs/protocol.md), made from base/config_fields.cc; "
      "derived fields (" +
      derived + ") cannot be set";
  out["properties"] = schema["properties"];
  return out;
}

std::string MarkdownTable() {
  std::string out =
      "| path | type | default | read by | meaning |\n| --- | --- | --- | --- | --- |\n";
  for (const Field* f : AllFields()) {
    if (f->reader == Reader::kOrchestrator) continue;
    std::string def = f->default_value.has_value() ? "`" + f->default_value->dump() + "`" : "—";
    const char* reader = f->reader == Reader::kBuiltinRunner ? "built-in runner" : "every program";
    const std::string type = TypeText(*f) + (f->required ? " (required)" : "");
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", f->path, type, Escaped(def), reader,
                       Escaped(f->meaning));
  }
  return out;
}

bool ReplaceBetween(std::string& document, const std::string& begin_marker,
                    const std::string& end_marker, const std::string& generated) {
  size_t begin = document.find(begin_marker);
  if (begin == std::string::npos) return false;
  size_t body = document.find('\n', begin);
  if (body == std::string::npos) return false;
  ++body;
  size_t end = document.find(end_marker, body);
  if (end == std::string::npos) return false;
  document.replace(body, end - body, generated);
  return true;
}

}  // namespace batchlab::config
