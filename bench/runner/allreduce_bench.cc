// bench/runner: the runner's fused-gradient allreduce (GradientBuckets over the `mpi` backend:
// the gradients of several parameters fused into buckets of comm.bucket_mb, each summed with a
// blocking MPI_Allreduce under the communicator's watchdog, as the trainer does: the trainer
// scales the loss by 1/K before backward, so the sum is the average and no division pass is
// needed) against a raw in-place MPI_Allreduce (MPI_SUM) of one buffer of the same size, on the
// same ranks, sizes 1 KiB to 256 MiB. Bus bandwidth as nccl-tests reports it:
// busbw = bytes / seconds * 2 (n - 1) / n. Each size: warm-up, then the median over --reps timed
// rounds (the round's time is the slowest rank's, a max-allreduce of the local times).
//
//   mpirun -np 2 build/bench/runner/allreduce_bench [--max-mib 256] [--reps 9] [--bucket-mb 25]
//       [--backend mpi|gloo|nccl]   (nccl: a CUDA build; one rank per GPU)
//       [--device cpu|cuda]         (cuda: the "comm" column reduces a device buffer in place,
//                                    as a CUDA rank's gradient buckets are; cpu: a host buffer,
//                                    which nccl stages through the GPU)
//
// Prints a table on rank 0 and, per size >= 1 MiB, a JSON line for bench/run
// ({"row", "value", "baseline", "unit", ...}, bench/README.md). Exits 1 if the fused
// average is wrong (each element must equal the mean of the ranks' values).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "runner/comm/communicator.h"
#include "runner/comm/gradient_buckets.h"

namespace {

using batchlab::runner::CommConfig;
using batchlab::runner::GradientBuckets;

double Now() { return MPI_Wtime(); }

double SlowestRank(double local) {
  double slowest = 0;
  MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string SizeText(int64_t bytes) {
  if (bytes >= (1 << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

}  // namespace

int main(int argc, char** argv) {
  int max_mib = 256, reps = 9;
  double bucket_mb = 25;
  std::string backend = "mpi";  // nccl: CUDA builds (stages host tensors through the GPU)
  std::string device = "cpu";
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--max-mib") max_mib = std::atoi(argv[++i]);
    if (a == "--reps") reps = std::max(1, std::atoi(argv[++i]));
    if (a == "--bucket-mb") bucket_mb = std::atof(argv[++i]);
    if (a == "--backend") backend = argv[++i];
    if (a == "--device") device = argv[++i];
  }
  torch::set_num_threads(1);
  const batchlab::runner::RankInfo info = batchlab::runner::RankInfoFromEnvironment();
  CommConfig cc;
  cc.backend = backend;
  cc.bucket_mb = bucket_mb;
  auto comm = batchlab::runner::MakeCommunicator(cc, info);  // MPI_Init_thread happens here
  const int rank = comm->rank(), n = comm->size();
  const double factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;
  const auto timeout = std::chrono::seconds(600);
  bool ok = true;
  if (rank == 0) {
    std::printf("# %d ranks, backend %s, comm buffer on %s, bucket_mb %g, median of %d; "
                "busbw = bytes/s * 2(n-1)/n\n",
                n, backend.c_str(), device.c_str(), bucket_mb, reps);
    std::printf("%10s %14s %14s %8s %14s\n", "size", "fused GB/s", "MPI GB/s", "ratio",
                "comm GB/s");
  }
  for (int64_t bytes = 1024; bytes <= int64_t{max_mib} << 20; bytes *= 4) {
    const int64_t numel = bytes / 4;
    // A model-like split: 8 "parameters" of unequal sizes (as many as fit), fused by the buckets.
    std::vector<torch::Tensor> params;
    int64_t left = numel;
    for (int k = 0; k < 8 && left > 0; ++k) {
      const int64_t part = k == 7 ? left : std::max<int64_t>(1, left / 2);
      torch::Tensor p = torch::zeros({part}, torch::requires_grad());
      p.mutable_grad() = torch::full({part}, static_cast<float>(rank + 1));
      params.push_back(p);
      left -= part;
    }
    GradientBuckets buckets(params, bucket_mb);
    std::vector<float> raw(static_cast<size_t>(numel), static_cast<float>(rank + 1));
    const int rounds = bytes >= (int64_t{64} << 20) ? std::min(reps, 5) : reps;
    // The communicator's own Allreduce of one flat buffer, called even on one rank (the buckets
    // skip it there): on a single GPU this is the nccl backend's whole data path.
    torch::Tensor flat = torch::empty(
        {numel}, torch::TensorOptions().device(device == "cuda" ? torch::kCUDA : torch::kCPU));
    std::vector<double> fused_s, raw_s, comm_s;
    for (int r = -1; r < rounds; ++r) {
      flat.fill_(static_cast<float>(rank + 1));
      MPI_Barrier(MPI_COMM_WORLD);
      const double t = Now();
      comm->Allreduce(flat, batchlab::runner::ReduceOp::kAvg)->Wait(timeout);
      const double s = SlowestRank(Now() - t);
      if (r >= 0) comm_s.push_back(s);
    }
    ok = ok && torch::allclose(flat, torch::full_like(flat, static_cast<float>(n + 1) / 2.0f));
    for (int r = -1; r < rounds; ++r) {  // r = -1: warm-up
      // Rank r's gradient r + 1, already carrying the trainer's 1/n.
      for (auto& p : params) p.mutable_grad().fill_(static_cast<float>(rank + 1) / n);
      MPI_Barrier(MPI_COMM_WORLD);
      double t = Now();
      buckets.AllreduceGradients(*comm, timeout, batchlab::runner::ReduceOp::kSum);
      const double fused = SlowestRank(Now() - t);
      MPI_Barrier(MPI_COMM_WORLD);
      t = Now();
      MPI_Allreduce(MPI_IN_PLACE, raw.data(), static_cast<int>(numel), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
      const double mpi = SlowestRank(Now() - t);
      if (r >= 0) fused_s.push_back(fused), raw_s.push_back(mpi);
    }
    const float mean = static_cast<float>(n + 1) / 2.0f;  // ranks hold 1..n
    for (auto& p : params) {
      ok = ok && torch::allclose(p.grad(), torch::full_like(p.grad(), mean));
    }
    const double fused_bw = static_cast<double>(bytes) / Median(fused_s) * factor / 1e9;
    const double raw_bw = static_cast<double>(bytes) / Median(raw_s) * factor / 1e9;
    if (rank == 0) {
      const double comm_bw = static_cast<double>(bytes) / Median(comm_s) * factor / 1e9;
      std::printf("%10s %14.3f %14.3f %8.2f %14.3f\n", SizeText(bytes).c_str(), fused_bw, raw_bw,
                  fused_bw / raw_bw, comm_bw);
      if (bytes >= (1 << 20)) {
        std::vector<double> fb, rb;
        for (double s : fused_s) fb.push_back(static_cast<double>(bytes) / s * factor / 1e9);
        for (double s : raw_s) rb.push_back(static_cast<double>(bytes) / s * factor / 1e9);
        nlohmann::json row = {{"row", "fused-gradient allreduce busbw, " + SizeText(bytes) + ", " +
                                          std::to_string(n) + " ranks"},
                              {"value", fused_bw},
                              {"baseline", raw_bw},
                              {"baseline_name", "raw MPI_Allreduce"},
                              {"unit", "GB/s"},
                              {"min", *std::min_element(fb.begin(), fb.end())},
                              {"max", *std::max_element(fb.begin(), fb.end())},
                              {"baseline_min", *std::min_element(rb.begin(), rb.end())},
                              {"baseline_max", *std::max_element(rb.begin(), rb.end())},
                              {"reps", rounds},
                              {"goal", ">= 0.9x raw MPI_Allreduce"},
                              {"ok", fused_bw >= 0.9 * raw_bw}};
        std::printf("%s\n", row.dump().c_str());
      }
      std::fflush(stdout);
    }
  }
  if (!ok) std::fprintf(stderr, "rank %d: the fused average is wrong\n", rank);
  comm.reset();
  return ok ? 0 : 1;
}
