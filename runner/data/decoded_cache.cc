// The cache file (native byte order; the cache is a machine's own):
//
//   offset 0   "BLTENS01"                      8 bytes
//              u64 file_size, u64 data_offset   (data_offset: page-aligned start of the data)
//              u32 header_crc                   CRC-32 of bytes [0, data_offset) with this field 0
//              u32 data_crc                     CRC-32 of bytes [data_offset, file_size)
//              u32 key_size, key bytes
//              u32 count, per tensor: u32 dtype (c10::ScalarType), u32 rank, i64 sizes[rank],
//                                     u64 offset (from data_offset, 64-aligned), u64 bytes
//   data_offset  the tensors' bytes
#include "runner/data/decoded_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "base/atomic_file.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

constexpr char kMagic[8] = {'B', 'L', 'T', 'E', 'N', 'S', '0', '1'};
constexpr size_t kFixed = 8 + 8 + 8 + 4 + 4;  // magic, sizes, CRCs
constexpr size_t kHeaderCrcAt = 24;
constexpr uint64_t kPage = 4096;

uint64_t RoundUp(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

uint32_t Crc(const void* data, size_t n) {
  return static_cast<uint32_t>(crc32_z(0L, static_cast<const Bytef*>(data), n));
}

bool Supported(c10::ScalarType t) {
  return t == c10::ScalarType::Float || t == c10::ScalarType::Long || t == c10::ScalarType::Byte;
}

// A read-only view of a mapped file with bounds-checked reads of the header.
class Mapping {
 public:
  Mapping(void* base, size_t size) : base_(static_cast<char*>(base)), size_(size) {}
  ~Mapping() { munmap(base_, size_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  char* base() const { return base_; }
  size_t size() const { return size_; }

 private:
  char* base_;
  size_t size_;
};

struct Cursor {
  const char* p;
  const char* end;
  template <class T>
  bool Take(T* out) {
    if (static_cast<size_t>(end - p) < sizeof(T)) return false;
    std::memcpy(out, p, sizeof(T));
    p += sizeof(T);
    return true;
  }
};

template <class T>
void Put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

std::string SourceKey(const std::vector<std::string>& files, const std::string& conversion) {
  std::string key;
  for (const std::string& f : files) {
    struct stat st {};
    if (::stat(f.c_str(), &st) != 0) {
      throw RunnerError(RunnerError::Kind::kData, "data file \"" + f + "\": cannot be read");
    }
    const int64_t mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
    key += std::filesystem::absolute(f).string() + " " + std::to_string(st.st_size) + " " +
           std::to_string(mtime_ns) + "\n";
  }
  return key + conversion;
}

DecodedCache DecodedCache::FromEnvironment() {
  if (const char* v = std::getenv("BATCHLAB_DATA_CACHE")) {
    const std::string dir = v;
    return DecodedCache(dir == "off" ? "" : dir);
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return DecodedCache(std::string(xdg) + "/batchlab");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return DecodedCache(std::string(home) + "/.cache/batchlab");
  }
  return DecodedCache("");
}

std::string DecodedCache::PathFor(const std::string& key) const {
  char name[32];
  std::snprintf(name, sizeof(name), "%016llx.tensors", static_cast<unsigned long long>(Fnv1a(key)));
  return dir_ + "/" + name;
}

std::optional<std::vector<torch::Tensor>> DecodedCache::Read(const std::string& key,
                                                             std::string* why) const {
  const std::string path = PathFor(key);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = "absent";
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(kFixed)) {
    ::close(fd);
    *why = "truncated (shorter than its header)";
    return std::nullopt;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  // Private and writable: pages stay shared with every other reader until someone writes one.
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) {
    *why = std::string("cannot be mapped: ") + std::strerror(errno);
    return std::nullopt;
  }
  auto map = std::make_shared<Mapping>(base, size);
  const char* b = map->base();
  auto fail = [&](const std::string& what) {
    *why = what;
    return std::nullopt;
  };
  if (std::memcmp(b, kMagic, sizeof(kMagic)) != 0) return fail("corrupt (bad magic)");
  Cursor c{b + sizeof(kMagic), b + size};
  uint64_t file_size = 0, data_offset = 0;
  uint32_t header_crc = 0, data_crc = 0;
  c.Take(&file_size), c.Take(&data_offset), c.Take(&header_crc), c.Take(&data_crc);
  if (file_size != size) {
    return fail("truncated (" + std::to_string(size) + " of " + std::to_string(file_size) +
                " bytes)");
  }
  if (data_offset < kFixed || data_offset > size) return fail("corrupt (header size)");
  {
    std::string header(b, data_offset);
    std::memset(header.data() + kHeaderCrcAt, 0, 4);
    if (Crc(header.data(), header.size()) != header_crc) return fail("corrupt (header CRC)");
  }
  c.end = b + data_offset;
  uint32_t key_size = 0;
  if (!c.Take(&key_size) || key_size > static_cast<size_t>(c.end - c.p)) {
    return fail("corrupt (key)");
  }
  if (std::string(c.p, key_size) != key) return fail("stale (another key)");
  c.p += key_size;
  uint32_t count = 0;
  if (!c.Take(&count)) return fail("corrupt (count)");
  const uint64_t data_size = size - data_offset;
  struct Entry {
    c10::ScalarType dtype;
    std::vector<int64_t> sizes;
    uint64_t offset, bytes;
  };
  std::vector<Entry> entries;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t dtype = 0, rank = 0;
    if (!c.Take(&dtype) || !c.Take(&rank) || rank > 8) return fail("corrupt (tensor header)");
    Entry e{static_cast<c10::ScalarType>(dtype), std::vector<int64_t>(rank), 0, 0};
    if (!Supported(e.dtype)) return fail("corrupt (dtype)");
    uint64_t numel = 1;
    for (auto& s : e.sizes) {
      if (!c.Take(&s) || s < 0) return fail("corrupt (sizes)");
      numel *= static_cast<uint64_t>(s);
    }
    if (!c.Take(&e.offset) || !c.Take(&e.bytes)) return fail("corrupt (tensor header)");
    if (e.bytes != numel * c10::elementSize(e.dtype) || e.offset > data_size ||
        e.bytes > data_size - e.offset) {
      return fail("corrupt (tensor bounds)");
    }
    entries.push_back(std::move(e));
  }
  if (Crc(b + data_offset, data_size) != data_crc) return fail("corrupt (data CRC)");
  std::vector<torch::Tensor> out;
  for (const Entry& e : entries) {
    out.push_back(torch::from_blob(
        map->base() + data_offset + e.offset, e.sizes, [map](void*) {},
        torch::TensorOptions().dtype(e.dtype)));
  }
  return out;
}

bool DecodedCache::Write(const std::string& key, const std::vector<torch::Tensor>& tensors,
                         std::string* why) const {
  std::string header(kMagic, sizeof(kMagic));
  header.append(kFixed - sizeof(kMagic), '\0');  // sizes and CRCs, filled in below
  Put<uint32_t>(header, static_cast<uint32_t>(key.size()));
  header += key;
  Put<uint32_t>(header, static_cast<uint32_t>(tensors.size()));
  uint64_t data_size = 0;
  for (const torch::Tensor& t : tensors) {
    if (!t.is_contiguous() || !t.device().is_cpu() || !Supported(t.scalar_type())) {
      *why = "only contiguous CPU float32/int64/uint8 tensors can be cached";
      return false;
    }
    Put<uint32_t>(header, static_cast<uint32_t>(t.scalar_type()));
    Put<uint32_t>(header, static_cast<uint32_t>(t.dim()));
    for (int64_t s : t.sizes()) Put<int64_t>(header, s);
    data_size = RoundUp(data_size, 64);
    Put<uint64_t>(header, data_size);
    Put<uint64_t>(header, static_cast<uint64_t>(t.nbytes()));
    data_size += t.nbytes();
  }
  const uint64_t data_offset = RoundUp(header.size(), kPage);
  header.resize(data_offset, '\0');
  const uint64_t file_size = data_offset + data_size;
  // The data CRC, over the tensors and the zero padding between them, as they will be written.
  static const char kZeros[64] = {};
  uLong data_crc = crc32_z(0L, Z_NULL, 0);
  uint64_t at = 0;
  for (const torch::Tensor& t : tensors) {
    data_crc = crc32_z(data_crc, reinterpret_cast<const Bytef*>(kZeros), RoundUp(at, 64) - at);
    at = RoundUp(at, 64);
    data_crc = crc32_z(data_crc, static_cast<const Bytef*>(t.data_ptr()), t.nbytes());
    at += t.nbytes();
  }
  const auto data_crc32 = static_cast<uint32_t>(data_crc);
  std::memcpy(header.data() + 8, &file_size, 8);
  std::memcpy(header.data() + 16, &data_offset, 8);
  std::memcpy(header.data() + 28, &data_crc32, 4);
  const uint32_t header_crc = Crc(header.data(), header.size());  // its own field still 0
  std::memcpy(header.data() + kHeaderCrcAt, &header_crc, 4);

  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  // Readers see all of it or none; every rank may write the same file at once, each through a
  // temporary of its own.
  AtomicWrite how;
  how.unique_temp = true;
  const Status written = WriteFileAtomically(
      PathFor(key),
      [&](std::FILE* file) {
        std::fwrite(header.data(), 1, header.size(), file);  // a short write shows in ferror
        uint64_t offset = 0;
        for (const torch::Tensor& t : tensors) {
          std::fwrite(kZeros, 1, RoundUp(offset, 64) - offset, file);
          offset = RoundUp(offset, 64);
          std::fwrite(t.data_ptr(), 1, t.nbytes(), file);
          offset += t.nbytes();
        }
        return OkStatus();
      },
      how);
  if (!written.ok()) *why = written.message();
  return written.ok();
}

}  // namespace batchlab::runner
