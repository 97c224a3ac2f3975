#include "base/json_path.h"

#include <nlohmann/json.hpp>

namespace batchlab {

std::string JoinPath(const std::string& parent, const std::string& key) {
  const bool plain = !key.empty() && key.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_.$-") == std::string::npos;
  if (plain) return parent.empty() ? key : parent + "." + key;
  return parent + "[" + Escaped(key) + "]";
}

std::string Escaped(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace batchlab
