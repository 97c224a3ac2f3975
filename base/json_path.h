// JSON paths and strings in messages, safe for hostile keys: shared by the spec parser
// (orchestrator/spec/json_guard.h) and the run config's checks (config_check.h).
//
//   JoinPath("base", "lr")      // base.lr
//   JoinPath("base", "a\nb")    // base["a\nb"]
//   Escaped("x\"y")             // "x\"y"
#ifndef BATCHLAB_BASE_JSON_PATH_H_
#define BATCHLAB_BASE_JSON_PATH_H_

#include <string>

namespace batchlab {

// The JSON path of `key` inside `parent` for messages: parent.key, or parent["k\u0000y"] (JSON
// escaped) when the key is empty or holds anything but letters, digits and _ . $ -, so a
// hostile key never puts control characters or a misleading path into a message.
std::string JoinPath(const std::string& parent, const std::string& key);

// `s` as a JSON string literal for messages: quoted, control characters escaped, invalid UTF-8
// replaced.
std::string Escaped(const std::string& s);

}  // namespace batchlab

#endif  // BATCHLAB_BASE_JSON_PATH_H_
