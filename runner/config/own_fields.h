// The own config fields of a registered model or dataset (model_registry.h, dataset_registry.h):
// keys of the `model` or `data` object that only that model or dataset reads, e.g. res_mlp's
// model.blocks. The parser keeps every key it does not know in ModelConfig::own / DataConfig::own;
// CheckOwnFields accepts exactly the chosen entry's fields there, each of the declared kind.
//
// Own fields have no default: the orchestrator writes every default into the resolved config so
// that the run id covers it, and it does not know a registered entry's fields. So an own field is
// required whenever its model or dataset is chosen (a spec states it; the run id covers it). A
// field every run should get with a default belongs in base/config_fields.cc instead.
//
//   const std::vector<OwnField> kFields = {
//       {"blocks", OwnField::Kind::kInt, 1, "residual blocks (each: Linear, ReLU, Linear +
//       skip)"}};
//   CheckOwnFields("model", "model \"res_mlp\"", kFields, config.own, "name, hidden, ...");
//   const int64_t blocks = config.own.at("blocks").get<int64_t>();
#ifndef BATCHLAB_RUNNER_CONFIG_OWN_FIELDS_H_
#define BATCHLAB_RUNNER_CONFIG_OWN_FIELDS_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace batchlab::runner {

struct OwnField {
  enum class Kind { kInt, kNumber, kBool, kString, kIntArray };
  std::string name;  // the key under `model` or `data`
  Kind kind = Kind::kInt;
  double min = 0;       // kInt, kNumber, kIntArray elements: the smallest value accepted
  std::string meaning;  // one line, for messages, `batchlab-runner --list` and docs
};

// Throws BadConfig naming `object`.KEY: a key of `own` that is not one of `fields` (the message
// lists `common`, the fields every entry reads, and the entry's own), a value of the wrong kind or
// below its min, a field missing.
void CheckOwnFields(const std::string& object, const std::string& who,
                    const std::vector<OwnField>& fields, const nlohmann::json& own,
                    const std::string& common);

// "blocks (integer >= 1: residual blocks ...)" for listings.
std::string DescribeOwnField(const OwnField& field);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_CONFIG_OWN_FIELDS_H_
