// IDX reader over zlib's gzread (which also reads uncompressed files transparently).
#include "runner/data/idx_file.h"

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <vector>

#include <sys/stat.h>

#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

RunnerError DataError(const std::string& path, const std::string& what) {
  return RunnerError(RunnerError::Kind::kData, "data file \"" + path + "\": " + what);
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

// Reads exactly `n` bytes or throws.
void ReadExactly(gzFile file, const std::string& path, void* out, size_t n) {
  auto* dst = static_cast<unsigned char*>(out);
  size_t done = 0;
  while (done < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    const int got = gzread(file, dst + done, chunk);
    if (got < 0) {
      int errnum = 0;
      const char* msg = gzerror(file, &errnum);
      throw DataError(path, std::string("corrupt or unreadable (zlib: ") + msg +
                                "); reinstall or re-download it");
    }
    if (got == 0) {
      throw DataError(path, "truncated: expected " + std::to_string(n) + " bytes of data, got " +
                                std::to_string(done) + "; reinstall or re-download it");
    }
    done += static_cast<size_t>(got);
  }
}

}  // namespace

std::string FindIdxFile(const std::string& stem) {
  if (Exists(stem + ".gz")) return stem + ".gz";
  if (Exists(stem)) return stem;
  return "";
}

torch::Tensor ReadIdxFile(const std::string& path) {
  if (!Exists(path)) throw DataError(path, "does not exist");
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) throw DataError(path, "cannot be opened");
  gzbuffer(file.get(), 1 << 20);

  unsigned char magic[4];
  ReadExactly(file.get(), path, magic, 4);
  if (magic[0] != 0 || magic[1] != 0) throw DataError(path, "not an IDX file (bad magic)");
  if (magic[2] != 0x08) {
    throw DataError(path, "IDX value type " + std::to_string(magic[2]) +
                              " is not supported; only unsigned bytes (0x08)");
  }
  const int rank = magic[3];
  if (rank < 1 || rank > 4) throw DataError(path, "IDX rank " + std::to_string(rank) + " is odd");
  std::vector<int64_t> dims(rank);
  int64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    unsigned char b[4];
    ReadExactly(file.get(), path, b, 4);
    dims[i] = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | b[3];
    if (dims[i] <= 0) throw DataError(path, "IDX dimension " + std::to_string(i) + " is 0");
    count *= dims[i];
  }
  if (count > (int64_t{1} << 34)) throw DataError(path, "IDX dimensions are implausibly large");
  torch::Tensor out = torch::empty(dims, torch::kUInt8);
  ReadExactly(file.get(), path, out.data_ptr<uint8_t>(), static_cast<size_t>(count));
  unsigned char extra;
  if (gzread(file.get(), &extra, 1) != 0) {
    throw DataError(path, "has trailing bytes after the values its header declares; corrupt?");
  }
  return out;
}

}  // namespace batchlab::runner
