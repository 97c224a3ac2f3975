// GlooCommunicator (see gloo_communicator.h).
#include "runner/comm/gloo_communicator.h"

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

RunnerError CommError(int rank, const std::string& what, const std::string& detail) {
  std::ostringstream msg;
  msg << "gloo: " << what << " failed on rank " << rank << ": " << detail;
  return RunnerError(RunnerError::Kind::kComm, msg.str());
}

// "host:port" (no '/', digits after the last ':') selects a TCPStore; anything else is a path.
bool SplitHostPort(const std::string& s, std::string* host, int* port) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) return false;
  if (s.find('/') != std::string::npos) return false;
  for (size_t i = colon + 1; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  *host = s.substr(0, colon);
  *port = std::atoi(s.c_str() + colon + 1);
  return true;
}

// Without a configured rendezvous: a FileStore in $TMPDIR named after the launcher's job id
// (the same on every rank of one launch, different across launches). Single node only.
std::string TempRendezvous() {
  std::string job;
  for (const char* var : {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "SLURM_JOB_ID"}) {
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') {
      job = v;
      break;
    }
  }
  if (job.empty()) {
    throw BadConfig(
        "comm.rendezvous: the gloo backend on several ranks needs a rendezvous (a FileStore "
        "path every rank can see, or host:port of a TCPStore), and no launcher job id was found "
        "to derive one");
  }
  if (const char* step = std::getenv("SLURM_STEP_ID");
      step != nullptr && job.find('.') == std::string::npos) {
    job += std::string(".") + step;
  }
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/batchlab-gloo-" + job;
}

c10::intrusive_ptr<c10d::Store> MakeStore(const CommConfig& config, const RankInfo& rank,
                                          std::chrono::milliseconds timeout) {
  if (rank.world_size == 1 && config.rendezvous.empty()) {
    return c10::make_intrusive<c10d::HashStore>();
  }
  std::string host;
  int port = 0;
  if (SplitHostPort(config.rendezvous, &host, &port)) {
    if (port <= 0 || port > 65535) {
      throw BadConfig("comm.rendezvous: port " + std::to_string(port) +
                      " is out of range; use host:port with a port in 1..65535");
    }
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<std::uint16_t>(port);
    opts.isServer = rank.rank == 0;
    opts.numWorkers = static_cast<std::size_t>(rank.world_size);
    opts.waitWorkers = true;
    opts.timeout = timeout;
    return c10::make_intrusive<c10d::TCPStore>(host, opts);
  }
  const std::string path = config.rendezvous.empty() ? TempRendezvous() : config.rendezvous;
  auto store = c10::make_intrusive<c10d::FileStore>(path, rank.world_size);
  store->setTimeout(timeout);
  return store;
}

std::shared_ptr<::gloo::transport::Device> MakeDevice() {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

class GlooWork : public Work {
 public:
  GlooWork(c10::intrusive_ptr<c10d::Work> work, const char* what, int rank, torch::Tensor tensor,
           double divide_by)
      : work_(std::move(work)),
        what_(what),
        rank_(rank),
        tensor_(std::move(tensor)),
        divide_by_(divide_by) {}

  void Wait(std::chrono::milliseconds timeout) override {
    if (done_) return;
    try {
      work_->wait(timeout);
    } catch (const std::exception& e) {
      throw CommError(rank_,
                      std::string(what_) + " (timeout " + std::to_string(timeout.count()) + " ms)",
                      e.what());
    }
    Finish();
  }

  bool Test() override {
    if (!done_ && work_->isCompleted()) Wait(std::chrono::milliseconds(0));
    return done_;
  }

 private:
  void Finish() {
    done_ = true;
    if (divide_by_ != 1.0) tensor_.div_(divide_by_);
  }

  bool done_ = false;
  c10::intrusive_ptr<c10d::Work> work_;
  const char* what_;
  int rank_;
  torch::Tensor tensor_;
  double divide_by_;
};

void CheckGlooTensor(const torch::Tensor& t, const char* call) {
  if (!t.defined() || !t.device().is_cpu() || !t.is_contiguous()) {
    throw RunnerError(RunnerError::Kind::kInternal,
                      std::string("gloo: ") + call + " needs a defined, contiguous CPU tensor");
  }
}

}  // namespace

GlooCommunicator::GlooCommunicator(const CommConfig& config, const RankInfo& rank)
    : rank_(rank.rank), size_(rank.world_size) {
  const std::chrono::milliseconds timeout(static_cast<int64_t>(config.timeout_seconds) * 1000);
  try {
    store_ = MakeStore(config, rank, timeout);
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(MakeDevice());
    options->threads = 2;
    group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store_, rank_, size_, options);
  } catch (const RunnerError&) {
    throw;
  } catch (const std::exception& e) {
    throw CommError(rank_, "rendezvous at \"" + config.rendezvous + "\"", e.what());
  }
}

GlooCommunicator::~GlooCommunicator() = default;

std::unique_ptr<Work> GlooCommunicator::Allreduce(torch::Tensor& tensor, ReduceOp op) {
  CheckGlooTensor(tensor, "allreduce");
  std::vector<at::Tensor> tensors{tensor};
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::SUM;
  try {
    const double divide_by = op == ReduceOp::kAvg ? static_cast<double>(size_) : 1.0;
    return std::make_unique<GlooWork>(group_->allreduce(tensors, opts), "allreduce", rank_, tensor,
                                      divide_by);
  } catch (const std::exception& e) {
    throw CommError(rank_, "allreduce", e.what());
  }
}

std::unique_ptr<Work> GlooCommunicator::Broadcast(torch::Tensor& tensor, int root) {
  CheckGlooTensor(tensor, "broadcast");
  std::vector<at::Tensor> tensors{tensor};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  try {
    return std::make_unique<GlooWork>(group_->broadcast(tensors, opts), "broadcast", rank_, tensor,
                                      1.0);
  } catch (const std::exception& e) {
    throw CommError(rank_, "broadcast", e.what());
  }
}

std::unique_ptr<Work> GlooCommunicator::Barrier() {
  try {
    return std::make_unique<GlooWork>(group_->barrier(), "barrier", rank_, torch::Tensor(), 1.0);
  } catch (const std::exception& e) {
    throw CommError(rank_, "barrier", e.what());
  }
}

}  // namespace batchlab::runner
