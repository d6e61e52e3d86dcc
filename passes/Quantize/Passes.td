//===- Passes.td - the quantize phase's passes -------------*- tablegen -*-===//

#ifndef LOOM_PASSES_QUANTIZE_PASSES_TD
#define LOOM_PASSES_QUANTIZE_PASSES_TD

include "mlir/Pass/PassBase.td"

def QuantizeWeightsPass : Pass<"loom-quantize", "mlir::ModuleOp"> {
  let summary = "Quantize f32/f16/bf16 matmul weights to int4/int8 blocks";
  let description = [{
    Every rank-2 float `loom.weight` whose uses are all the right operand of
    `loom.matmul` (directly or through a `loom.cast` to f32) is read from its
    file (memory-mapped), quantized block-wise along K (the reduction
    dimension; a `[K, N]` weight is transposed to `[N, K]`), written to the
    file `output` (to a temporary name, renamed when complete), and the
    matmuls become `loom.qmatmul` on a `!loom.qtensor` weight that refers to
    that file. GGUF Q4_0/Q4_1/Q8_0 weights are kept as they are (never
    re-quantised). The scheme of a tensor is the first `rules` entry whose
    glob matches its name, else none when a `skip` glob matches, else
    `scheme`. A weight without storage (planned from a config alone) gets
    the quantized type and stays without storage: nothing is computed.
    `report` receives a JSON error report per tensor (RMSE, max
    error, worst block). `scheme=none` quantizes no weight (with
    `activations=int8`: only mark the qmatmuls). docs/QUANTIZE.md.
  }];
  let options = [
    Option<"scheme", "scheme", "std::string", "\"int4:32\"",
           "default scheme: FORMAT[:BLOCK][:sym|min][:f16|bf16|f32] (int4:32, int8:128:min)">,
    Option<"rules", "rules", "std::string", "\"\"",
           "per-tensor schemes, first match wins: 'GLOB=SCHEME;GLOB=skip;...'">,
    Option<"skip", "skip", "std::string", "\"default\"",
           "tensors kept in float: comma-separated globs, 'default' (embeddings and the LM head) or 'none'">,
    Option<"output", "output", "std::string", "\"\"",
           "file the quantized blocks are written to">,
    Option<"report", "report", "std::string", "\"\"",
           "JSON error report per tensor (none when empty)">,
    Option<"outputName", "output-name", "std::string", "\"\"",
           "how the report names the output file (default: its absolute path)">,
    Option<"baseDir", "base-dir", "std::string", "\"\"",
           "directory that relative weight files are resolved against">,
    Option<"verbose", "verbose", "bool", "false",
           "print one line per tensor to stderr">,
    Option<"activations", "activations", "std::string", "\"auto\"",
           "activations of the generated kernels: auto (no mark: the lowering picks int8x3 where the module's loom.target has integer dot products, else f32), f32 (accurate), int8 (per block, faster; the compiling host's VNNI when it has it), int8x3 (three int8 levels per block: about f32's accuracy at integer-dot speed), or int8-portable / int8x3-portable (no host-specific instructions); marks every loom.qmatmul">
  ];
}

#endif // LOOM_PASSES_QUANTIZE_PASSES_TD
