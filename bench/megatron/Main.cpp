//===- Main.cpp - Megatron-LM SC'21 Table 1 against the cost model --------===//
//
// Part of the Loom project.
//
// For the rows of Megatron-LM's Table 1 with p = 1, prints the predicted
// TFLOP/s per GPU of one training step for the paper's (t, d) and for the
// best layout the search finds under the 80 GB limit, next to the paper's
// measured figure. Exit status 1 when a prediction for the paper's layout is
// off by more than 15% or the search is predicted slower than the paper.
//
//===----------------------------------------------------------------------===//

#include "loom/Cost/Transformer.h"

#include <cmath>
#include <cstdio>

using namespace loom::cost;

int main() {
  DeviceSpec dev = megatronDevice();
  LinkSpec intra = megatronIntraNode(), inter = megatronInterNode();
  Efficiency e = defaultEfficiency();
  std::printf("Megatron-LM SC'21 Table 1 (p = 1), A100 80 GB, %s %.0f GB/s, "
              "%s %.0f GB/s per GPU\n",
              intra.name.c_str(), intra.bandwidth / 1e9, inter.name.c_str(),
              inter.bandwidth / 1e9);
  std::printf("efficiency: gemm %.2f of 312 TFLOP/s, memory %.2f of HBM, "
              "network %.2f of link\n\n",
              e.gemm, e.memory, e.network);
  std::printf("| model | paper (t,d) | measured | predicted | error | b | "
              "mem GB | step s | matmul | elemwise | tp comm | dp comm | "
              "best (t,d,b,zero) | best pred. | best mem GB |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  bool ok = true;
  for (const MegatronRow &row : megatronTable1PipelineFree()) {
    auto paper = bestForLayout(row.model, row.tp, row.pp, row.dp, dev, intra,
                               inter);
    auto best = searchLayouts(row.model, row.tp * row.pp * row.dp, dev, intra,
                              inter);
    if (!paper || !best) {
      std::printf("| %s | error: %s |\n", row.name,
                  !paper ? paper.error().message.c_str()
                         : best.error().message.c_str());
      ok = false;
      continue;
    }
    const TrainingEstimate &p = paper->estimate;
    double err = (p.tflopsPerDevice - row.measuredTflops) / row.measuredTflops;
    const ParallelConfig &bp = best->best;
    std::printf("| %s | (%lld,%lld) | %.0f | %.1f | %+.1f%% | %lld | %.1f | "
                "%.2f | %.2f | %.2f | %.2f | %.2f | (%lld,%lld,%lld,%u) | "
                "%.1f | %.1f |\n",
                row.name, (long long)row.tp, (long long)row.dp,
                row.measuredTflops, p.tflopsPerDevice, 100 * err,
                (long long)paper->best.microBatch, p.memory.total() / 1e9,
                p.stepTime, p.matmulTime, p.elementwiseTime, p.tpCommTime,
                p.dpCommTime, (long long)bp.tp, (long long)bp.dp,
                (long long)bp.microBatch, bp.zeroStage,
                best->estimate.tflopsPerDevice,
                best->estimate.memory.total() / 1e9);
    if (std::fabs(err) > 0.15)
      ok = false;
    if (best->estimate.stepTime > p.stepTime * (1 + 1e-12))
      ok = false;
  }
  std::printf("\n%s\n", ok ? "OK: every paper layout within 15%, search never "
                             "slower"
                           : "FAIL");
  return ok ? 0 : 1;
}
