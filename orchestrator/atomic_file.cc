// WriteFileAtomically (see atomic_file.h).
#include "orchestrator/atomic_file.h"

#include <cstdio>
#include <fstream>

namespace batchlab::orchestrator {

bool WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.close();
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace batchlab::orchestrator
