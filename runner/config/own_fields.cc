// CheckOwnFields (see own_fields.h).
#include "runner/config/own_fields.h"

#include <cmath>
#include <sstream>

#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

std::string KindText(const OwnField& f) {
  std::ostringstream os;
  os << f.min;
  switch (f.kind) {
    case OwnField::Kind::kInt:
      return "an integer >= " + os.str();
    case OwnField::Kind::kNumber:
      return "a finite number >= " + os.str();
    case OwnField::Kind::kBool:
      return "true or false";
    case OwnField::Kind::kString:
      return "a string";
    case OwnField::Kind::kIntArray:
      return "an array of integers >= " + os.str();
  }
  return "";
}

bool IntAtLeast(const nlohmann::json& v, double min) {
  return v.is_number_integer() && static_cast<double>(v.get<int64_t>()) >= min;
}

bool Fits(const OwnField& f, const nlohmann::json& v) {
  switch (f.kind) {
    case OwnField::Kind::kInt:
      return IntAtLeast(v, f.min);
    case OwnField::Kind::kNumber:
      return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= f.min;
    case OwnField::Kind::kBool:
      return v.is_boolean();
    case OwnField::Kind::kString:
      return v.is_string();
    case OwnField::Kind::kIntArray:
      if (!v.is_array()) return false;
      for (const auto& e : v) {
        if (!IntAtLeast(e, f.min)) return false;
      }
      return true;
  }
  return false;
}

}  // namespace

std::string DescribeOwnField(const OwnField& field) {
  return field.name + " (" + KindText(field) + ": " + field.meaning + ")";
}

void CheckOwnFields(const std::string& object, const std::string& who,
                    const std::vector<OwnField>& fields, const nlohmann::json& own,
                    const std::string& common) {
  std::string names;
  for (const OwnField& f : fields) names += (names.empty() ? "" : ", ") + f.name;
  if (own.is_object()) {
    for (auto it = own.begin(); it != own.end(); ++it) {
      const OwnField* field = nullptr;
      for (const OwnField& f : fields) {
        if (f.name == it.key()) field = &f;
      }
      if (field == nullptr) {
        throw BadConfig(object + "." + it.key() + ": unknown field; remove it (" + object +
                        " fields: " + common + "; " + who +
                        (names.empty() ? " has none of its own" : " also reads " + names) + ")");
      }
      if (!Fits(*field, it.value())) {
        throw BadConfig(object + "." + it.key() + ": " + it.value().dump() + " must be " +
                        KindText(*field) + " (" + field->meaning + ")");
      }
    }
  }
  for (const OwnField& f : fields) {
    if (!own.is_object() || !own.contains(f.name)) {
      throw BadConfig(object + "." + f.name + ": missing; " + who + " needs it (" + KindText(f) +
                      ": " + f.meaning +
                      "); a registered model's or dataset's own field has no default, so state it "
                      "in the spec");
    }
  }
}

}  // namespace batchlab::runner
