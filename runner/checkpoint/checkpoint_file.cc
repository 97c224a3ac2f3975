// Checkpoint files (see checkpoint_file.h).
#include "runner/checkpoint/checkpoint_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>

#include <fmt/core.h>

#include "base/atomic_file.h"

namespace batchlab::runner {
namespace {

constexpr char kMagic[8] = {'B', 'L', 'C', 'K', 'P', 'T', '\0', '\1'};

struct DtypeName {
  torch::ScalarType type;
  const char* name;
};
constexpr DtypeName kDtypes[] = {
    {torch::kFloat32, "f32"}, {torch::kFloat64, "f64"}, {torch::kInt64, "i64"},
    {torch::kUInt8, "u8"},    {torch::kBFloat16, "bf16"}, {torch::kInt32, "i32"},
};

const char* NameOf(torch::ScalarType t) {
  for (const DtypeName& d : kDtypes) {
    if (d.type == t) return d.name;
  }
  throw std::runtime_error(fmt::format("checkpoint: cannot store tensors of type {}",
                                       c10::toString(t)));
}

std::optional<torch::ScalarType> TypeOf(const std::string& name) {
  for (const DtypeName& d : kDtypes) {
    if (name == d.name) return d.type;
  }
  return std::nullopt;
}

void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}


AtomicWrite Durable() {
  AtomicWrite how;
  how.durable = true;
  return how;
}

}  // namespace

uint64_t Fnv1a64(const void* data, size_t size, uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

const torch::Tensor& CheckpointFile::Tensor(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw CheckpointRejected("it holds no tensor \"" + name + "\"");
  return it->second;
}

int64_t CheckpointStepOf(const std::string& name) {
  constexpr std::string_view prefix = "step-", suffix = ".rank-0.ckpt";
  if (name.size() != prefix.size() + 8 + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(prefix.size() + 8, suffix.size(), suffix) != 0) {
    return -1;
  }
  int64_t step = 0;
  for (size_t i = prefix.size(); i < prefix.size() + 8; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

int64_t WriteCheckpointFile(const std::string& path, nlohmann::json header,
                            const NamedTensors& tensors) {
  std::vector<torch::Tensor> data;
  data.reserve(tensors.size());
  nlohmann::json list = nlohmann::json::array();
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
    const uint64_t bytes = t.numel() * t.element_size();
    list.push_back({{"name", name},
                    {"dtype", NameOf(t.scalar_type())},
                    {"shape", t.sizes().vec()},
                    {"offset", offset},
                    {"bytes", bytes}});
    offset += bytes;
    data.push_back(std::move(t));
  }
  header["format"] = kCheckpointFormat;
  header["data_bytes"] = offset;  // so that a cut file reads as truncated, not only corrupt
  header["tensors"] = std::move(list);
  const std::string text = header.dump();
  std::string head(kMagic, sizeof(kMagic));
  PutU64(head, text.size());
  head += text;

  // The header, every tensor's bytes and the hash of all of them; durable (fsync'ed, and the
  // rename too): a checkpoint must outlive the machine's crash, not only the run's.
  std::string tail;
  const Status written = WriteFileAtomically(
      path,
      [&](std::FILE* file) {
        uint64_t hash = Fnv1a64(head.data(), head.size());
        std::fwrite(head.data(), 1, head.size(), file);  // a short write shows in ferror
        for (const torch::Tensor& t : data) {
          const auto* p = static_cast<const char*>(t.data_ptr());
          const size_t n = t.numel() * t.element_size();
          hash = Fnv1a64(p, n, hash);
          std::fwrite(p, 1, n, file);
        }
        PutU64(tail, hash);
        std::fwrite(tail.data(), 1, tail.size(), file);
        return OkStatus();
      },
      Durable());
  if (!written.ok()) throw std::runtime_error(written.message());
  return static_cast<int64_t>(head.size() + offset + tail.size());
}

CheckpointFile ReadCheckpointFile(const std::string& path, const std::string& run_id,
                                  const std::string& config_hash) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointRejected("unreadable: " + std::string(std::strerror(errno)));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof(kMagic) + 16) {
    throw CheckpointRejected(fmt::format("truncated ({} bytes)", bytes.size()));
  }
  if (bytes.compare(0, sizeof(kMagic), std::string(kMagic, sizeof(kMagic))) != 0) {
    throw CheckpointRejected("not a batchlab checkpoint (bad magic)");
  }
  const uint64_t header_size = GetU64(bytes.data() + 8);
  if (header_size > bytes.size() - 24) {
    throw CheckpointRejected(fmt::format("truncated (header of {} bytes in a file of {})",
                                         header_size, bytes.size()));
  }
  nlohmann::json header = nlohmann::json::parse(bytes.begin() + 16,
                                                bytes.begin() + 16 + static_cast<int64_t>(header_size),
                                                nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) throw CheckpointRejected("corrupt (the header is not JSON)");
  const int format = header.value("format", 0);
  if (format > kCheckpointFormat) {
    throw CheckpointRejected(fmt::format(
        "format {} is newer than this runner's {}; resume with a newer batchlab", format,
        kCheckpointFormat));
  }
  if (header.value("run_id", std::string()) != run_id) {
    throw CheckpointRejected(fmt::format("it belongs to run \"{}\", not \"{}\"",
                                         header.value("run_id", std::string()), run_id));
  }
  if (!config_hash.empty() && header.value("config_hash", std::string()) != config_hash) {
    throw CheckpointRejected(fmt::format("its config hash {} differs from this run's {}",
                                         header.value("config_hash", std::string()),
                                         config_hash));
  }
  const uint64_t expected = 16 + header_size + header.value("data_bytes", uint64_t{0}) + 8;
  if (bytes.size() < expected) {
    throw CheckpointRejected(fmt::format("truncated ({} of {} bytes)", bytes.size(), expected));
  }
  const size_t body = bytes.size() - 8;
  if (Fnv1a64(bytes.data(), body) != GetU64(bytes.data() + body)) {
    throw CheckpointRejected("corrupt (checksum mismatch)");
  }
  CheckpointFile file;
  const size_t data_start = 16 + header_size;
  const auto list = header.find("tensors");
  if (list == header.end() || !list->is_array()) throw CheckpointRejected("corrupt (no tensors)");
  for (const auto& t : *list) {
    const std::optional<torch::ScalarType> type = TypeOf(t.value("dtype", std::string()));
    const uint64_t offset = t.value("offset", uint64_t{0}), size = t.value("bytes", uint64_t{0});
    if (!type || offset + size > body - data_start) {
      throw CheckpointRejected("corrupt (a tensor outside the file)");
    }
    const std::vector<int64_t> shape = t.value("shape", std::vector<int64_t>{});
    torch::Tensor v = torch::empty(shape, torch::TensorOptions().dtype(*type));
    if (static_cast<uint64_t>(v.numel() * v.element_size()) != size) {
      throw CheckpointRejected("corrupt (a tensor's size disagrees with its shape)");
    }
    std::memcpy(v.data_ptr(), bytes.data() + data_start + offset, size);
    file.tensors.emplace(t.value("name", std::string()), std::move(v));
  }
  header.erase("tensors");
  file.header = std::move(header);
  return file;
}

}  // namespace batchlab::runner
