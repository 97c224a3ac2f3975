// The parts of sweeps/spec.schema.json and docs/spec.md made from the run config's declaration
// (config_fields.h), so the JSON Schema and the docs cannot drift from it. Written by
// `batchlab-config-schema --write`, compared by `--check` (a test):
//
//   nlohmann::ordered_json schema = config::JsonSchema();   // $defs/config of spec.schema.json
//   std::string table = config::MarkdownTable();            // docs/spec.md "Config fields"
#ifndef BATCHLAB_BASE_CONFIG_JSON_SCHEMA_H_
#define BATCHLAB_BASE_CONFIG_JSON_SCHEMA_H_

#include <string>

#include <nlohmann/json.hpp>

namespace batchlab::config {

// The JSON Schema (draft 2020-12) of the settable fields: types, ranges, allowed values, defaults
// and meanings; derived fields are left out (a spec may not set them).
nlohmann::ordered_json JsonSchema();

// The docs/spec.md table of every settable field: path, type, default, who reads it, meaning.
std::string MarkdownTable();

// Replaces the text between the lines `begin_marker` and `end_marker` of `document` with
// `generated` (markers kept); returns false when a marker is missing.
bool ReplaceBetween(std::string& document, const std::string& begin_marker,
                    const std::string& end_marker, const std::string& generated);

}  // namespace batchlab::config

#endif  // BATCHLAB_BASE_CONFIG_JSON_SCHEMA_H_
