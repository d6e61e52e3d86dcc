//===- KernelCall.td - the loom_cpu dialect ----------------*- tablegen -*-===//
//
// The lowering's one internal dialect: `loom_cpu.kernel`, runtime calls on
// buffers while the program is still on tensors (KernelCall.h).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_LOWERING_KERNELCALL_TD
#define LOOM_PASSES_LOWERING_KERNELCALL_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"

def LoomCpu_Dialect : Dialect {
  let name = "loom_cpu";
  let cppNamespace = "::loom::lowering";
  let summary = "The CPU lowering's runtime calls before bufferization";
  let description = [{
    Internal to the CPU lowering: made by `loom-convert-loom-to-linalg` and
    gone after `loom-bufferize`; never in a phase's input.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def LoomCpu_KernelOp : Op<LoomCpu_Dialect, "kernel", [
    AttrSizedOperandSegments, SingleBlock, NoTerminator,
    DestinationStyleOpInterface]> {
  let summary = "runtime calls on the buffers of tensors, in destination style";
  let description = [{
    Stands for runtime calls (the GEMM, the quantized kernels) that read and
    write memory, while the program is still on tensors. The `ins` operands
    are read; the `outs` operands are destinations, fully written and not
    read; result `i` is destination `i`. The body's arguments are the
    identity-layout memrefs of the operands, inputs first; the body holds the
    calls on them.

    ```mlir
    %y = loom_cpu.kernel ins(%a, %b : tensor<64x256xf32>, tensor<512x256xf32>)
                         outs(%init : tensor<64x512xf32>) {
    ^bb0(%ma: memref<64x256xf32>, %mb: memref<512x256xf32>, %mc: memref<64x512xf32>):
      ... func.call @loom_rt_sgemm(..pointers of %ma, %mb, %mc..) ...
    } -> tensor<64x512xf32>
    ```

    Its `BufferizableOpInterface` model (`loom-bufferize`) inlines the body
    on the buffers the one-shot analysis gives (contiguous row-major copies
    of strided ones), so the analysis sees every read and write. It has no
    memory-effect interface, so CSE never merges two of them.

    **Constraints:**
    - operands are ranked tensors; one result per destination, of its type;
    - one body argument per operand: the operand's identity-layout memref.
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       Variadic<AnyRankedTensor>:$inits);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$region);
  let assemblyFormat = [{
    (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    `outs` `(` $inits `:` type($inits) `)` $region attr-dict
    `->` type($results)
  }];
  let hasVerifier = 1;
  let builders = [
    // A kernel reading `inputs` and writing `inits` (each a tensor.empty or
    // any tensor to overwrite); `body` fills the block, whose arguments are
    // the operands' memrefs.
    OpBuilder<(ins "::mlir::ValueRange":$inputs, "::mlir::ValueRange":$inits,
                   "::loom::lowering::KernelBodyFn":$body)>
  ];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getInitsMutable();
    }
  }];
}

#endif // LOOM_PASSES_LOWERING_KERNELCALL_TD
