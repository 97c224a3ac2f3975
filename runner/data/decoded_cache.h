// A file of decoded tensors, so that a process maps a dataset instead of decompressing and
// converting it again (issue 12: every runner process used to spend ~2 CPU-seconds and ~400 MiB
// on Fashion-MNIST before its first step). The file lives in the cache folder under a name
// derived from its key; the key names the source files (path, size, mtime) and the conversion,
// so a changed source or conversion never reads a stale file. Written atomically (a temporary
// file renamed into place); read by mapping it copy-on-write, so every process of a machine
// shares the same page-cache pages. A truncated, corrupt or stale file is detected (size, magic,
// key, CRC-32 of the data) and reported as a miss, after which the caller rebuilds it.
//
//   DecodedCache cache = DecodedCache::FromEnvironment();      // BATCHLAB_DATA_CACHE
//   const std::string key = SourceKey({train_images, ...}, "idx-u8/255-f32 v1");
//   std::string why;
//   if (auto tensors = cache.Read(key, &why)) { ... }          // mapped, read-only in spirit
//   else { tensors = Decode(); cache.Write(key, tensors); }    // never throws on a cache problem
#ifndef BATCHLAB_RUNNER_DATA_DECODED_CACHE_H_
#define BATCHLAB_RUNNER_DATA_DECODED_CACHE_H_

#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace batchlab::runner {

// The part of a cache key that names source files: "path size mtime_ns" per file, then the
// conversion's name. Throws RunnerError kData if a file cannot be stat'ed.
std::string SourceKey(const std::vector<std::string>& files, const std::string& conversion);

class DecodedCache {
 public:
  // The folder from BATCHLAB_DATA_CACHE: unset = $XDG_CACHE_HOME/batchlab (or
  // $HOME/.cache/batchlab); "off" or empty = disabled.
  static DecodedCache FromEnvironment();
  explicit DecodedCache(std::string dir) : dir_(std::move(dir)) {}

  bool enabled() const { return !dir_.empty(); }
  // Where the file for `key` lives (dir/<16 hex digits of the key's hash>.tensors).
  std::string PathFor(const std::string& key) const;

  // The tensors stored under `key` (contiguous CPU tensors backed by the mapped file), or
  // nullopt with `*why` set: "absent", or what is wrong with the file (truncated, corrupt, stale).
  std::optional<std::vector<torch::Tensor>> Read(const std::string& key, std::string* why) const;

  // Stores contiguous CPU tensors under `key`; returns false with `*why` on any failure (a cache
  // that cannot be written is not an error: the data was decoded anyway).
  bool Write(const std::string& key, const std::vector<torch::Tensor>& tensors,
             std::string* why) const;

 private:
  std::string dir_;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_DATA_DECODED_CACHE_H_
