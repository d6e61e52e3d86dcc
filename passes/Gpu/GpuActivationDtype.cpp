//===- GpuActivationDtype.cpp - f16/bf16 activations on the device --------===//
//
// loomc --target=cuda --gpu-dtype=f16|bf16 (docs/GPU.md "Activation
// dtype"): tensors are stored in the narrow type where a product reads or
// writes them, and all arithmetic stays f32. On the loom program, before
// it is lowered, every op falls in one of three classes:
//  - products (loom.matmul going to cuBLAS, loom.qmatmul with f16, the fused
//    attention and its KV cache) take their float operands in the narrow
//    type and give narrow results: cuBLAS and the generated kernels
//    accumulate in f32, the attention keeps f32 accumulators;
//  - data movement (reshape, transpose, slice, concat, broadcast, gather,
//    embedding, select, all_gather, all_to_all) keeps the type of what it
//    moves: narrow when every float operand is one this pass narrowed;
//  - every other op (elementwise math, norms, softmax, reductions, rotary
//    tables, convolutions, all_reduce, anything not listed) computes in
//    f32: a narrow operand is widened first. The widening is a cast that the
//    GPU's elementwise fusion puts into the consuming kernel, so a kernel loads
//    f16 and computes in f32 registers.
// Entry inputs and outputs keep their types (the bundle's ABI: f32 .npy
// in, f32 logits out): an f32 input becomes narrow where a product needs
// it, an output is widened before the return; a product whose result is
// only returned (an LM head) stays f32. A `loom.state` argument (a KV
// cache) read only by fused attentions takes the narrow type: the cache is
// half the bytes, and the runtime sizes it from the signature.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/IR/LoomDialect.h"
#include "passes/Gpu/Passes.h"
#include "passes/Lowering/LoweringUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#define DEBUG_TYPE "loom-gpu-activation-dtype"

namespace loom {
#define GEN_PASS_DEF_GPUACTIVATIONDTYPEPASS
#include "passes/Gpu/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

constexpr StringLiteral kStateArgAttr = "loom.state";

bool isF32Tensor(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && r.getElementType().isF32();
}

enum class Kind { Product, Movement, Compute };

struct Converter {
  Type narrow; // f16 or bf16
  bool cublas, fusedAttention;
  /// The values this pass made narrow (an f16 tensor of the input program,
  /// e.g. an ONNX float16 model's, is not one: it keeps its type and ops).
  llvm::DenseSet<Value> narrowed;

  bool ours(Value v) const { return narrowed.contains(v); }
  void makeNarrow(Value v) {
    v.setType(cast<RankedTensorType>(v.getType()).clone(narrow));
    narrowed.insert(v);
  }

  /// f32 `v` in the narrow type: the input of a widening cast (exact),
  /// else a new loom.cast just before `user`.
  Value narrowedValue(OpBuilder &b, Value v, Operation *user) {
    auto t = cast<RankedTensorType>(v.getType());
    if (auto c = v.getDefiningOp<loom::CastOp>())
      if (c.getInput().getType() == t.clone(narrow))
        return c.getInput();
    b.setInsertionPoint(user);
    Value n = loom::CastOp::create(b, user->getLoc(), t.clone(narrow), v);
    narrowed.insert(n);
    return n;
  }
  /// `v` widened to f32 just before `user`.
  static Value widened(OpBuilder &b, Value v, Operation *user) {
    auto t = cast<RankedTensorType>(v.getType());
    b.setInsertionPoint(user);
    return loom::CastOp::create(b, user->getLoc(), t.clone(b.getF32Type()), v);
  }
  /// Every operand of `op` that this pass made narrow, widened back.
  void widenOurs(OpBuilder &b, Operation *op) const {
    for (OpOperand &use : op->getOpOperands())
      if (ours(use.get()))
        use.set(widened(b, use.get(), op));
  }

  /// Whether `v` reaches nothing but the entry's results (through data
  /// movement): an LM head's logits. Such a product stays f32 (a narrow
  /// result would be widened into a second, f32 copy of the largest
  /// tensor of a prefill).
  static bool onlyReturned(Value v) {
    return llvm::all_of(v.getUsers(), [](Operation *user) {
      if (isa<func::ReturnOp>(user))
        return true;
      return isa<loom::ReshapeOp, loom::TransposeOp, loom::SliceOp>(user) &&
             llvm::all_of(user->getResults(), onlyReturned);
    });
  }

  /// What a product needs to run narrow; otherwise it computes in f32.
  Kind classify(Operation *op) const {
    if (isa<loom::MatmulOp, loom::QMatmulOp>(op) &&
        onlyReturned(op->getResult(0)))
      return Kind::Compute;
    if (auto mm = dyn_cast<loom::MatmulOp>(op)) {
      // cuBLAS takes rank-2 products (loom-gpu-matmuls-to-cublas; x
      // [..., M, K] times a weight is one, ContractionPatterns.cpp); one
      // that stays generated accumulates in f32 all the same
      // (GpuMatmulsToCublas.cpp).
      return cublas && loom::lowering::lowersAsRank2Product(mm) ? Kind::Product
                                                                : Kind::Compute;
    }
    if (isa<loom::QMatmulOp>(op))
      // The generated kernels take f32 or f16 activations, not bf16.
      return narrow.isF16() ? Kind::Product : Kind::Compute;
    if (auto att = dyn_cast<loom::AttentionOp>(op)) {
      // The fused lowering (f32 accumulators; AttentionPatterns.cpp) under
      // its own conditions; the unfused one accumulates in its type.
      auto out = att.getOutput().getType();
      bool fused =
          fusedAttention && !att.getPastKey() &&
          !ShapedType::isDynamic(out.getDimSize(3)) &&
          (!att.getMask() ||
           cast<RankedTensorType>(att.getMask().getType()).getRank() <= 4);
      return fused ? Kind::Product : Kind::Compute;
    }
    if (isa<loom::ReshapeOp, loom::TransposeOp, loom::SliceOp, loom::ConcatOp,
            loom::BroadcastOp, loom::GatherOp, loom::EmbeddingOp,
            loom::SelectOp, loom::LocalSliceOp, loom::ShardOp,
            loom::AllGatherOp, loom::AllToAllOp>(op))
      return Kind::Movement;
    // Everything else: all_reduce and reduce_scatter (their sums in f32),
    // send/recv (a recv's type is its own, so the matching send keeps f32).
    return Kind::Compute;
  }

  /// The float operands a product takes narrow (an attention's mask and
  /// positions keep their types).
  bool productOperand(Operation *op, unsigned i) const {
    if (auto att = dyn_cast<loom::AttentionOp>(op)) {
      Value v = op->getOperand(i);
      return v == att.getQuery() || v == att.getKey() || v == att.getValue() ||
             v == att.getCacheKey() || v == att.getCacheValue();
    }
    return true;
  }

  void convert(OpBuilder &b, Operation *op) {
    switch (classify(op)) {
    case Kind::Product:
      for (OpOperand &use : op->getOpOperands())
        if (isF32Tensor(use.get().getType()) &&
            productOperand(op, use.getOperandNumber()))
          use.set(narrowedValue(b, use.get(), op));
      for (Value r : op->getResults())
        if (isF32Tensor(r.getType()))
          makeNarrow(r);
      return;
    case Kind::Movement: {
      bool anyOurs = false, anyF32 = false;
      for (Value v : op->getOperands()) {
        anyOurs |= ours(v);
        anyF32 |= isF32Tensor(v.getType());
      }
      if (anyOurs && !anyF32) {
        for (Value r : op->getResults())
          if (isF32Tensor(r.getType()))
            makeNarrow(r);
        return;
      }
      // Mixed, or nothing of ours: f32, as written.
      widenOurs(b, op);
      return;
    }
    case Kind::Compute:
      widenOurs(b, op);
      return;
    }
  }

  /// Whether every use of a state argument is a fused attention's cache
  /// operand, so that the cache is written narrow and in place; otherwise
  /// it stays f32 (a widened copy would take the writes).
  bool narrowState(BlockArgument arg) const {
    return llvm::all_of(arg.getUses(), [&](OpOperand &use) {
      auto att = dyn_cast<loom::AttentionOp>(use.getOwner());
      return att && classify(att) == Kind::Product &&
             (use.get() == att.getCacheKey() ||
              use.get() == att.getCacheValue());
    });
  }

  LogicalResult run(func::FuncOp f) {
    if (f.isExternal())
      return success();
    OpBuilder b(f.getContext());
    Block &body = f.getBody().front();
    // A KV cache in the narrow type.
    SmallVector<Type> inputs(f.getArgumentTypes());
    for (BlockArgument arg : body.getArguments())
      if (f.getArgAttr(arg.getArgNumber(), kStateArgAttr) &&
          isF32Tensor(arg.getType()) && narrowState(arg)) {
        makeNarrow(arg);
        inputs[arg.getArgNumber()] = arg.getType();
      }
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        SmallVector<Type> results(f.getResultTypes());
        for (OpOperand &use : ret->getOpOperands()) {
          unsigned i = use.getOperandNumber();
          if (!ours(use.get()))
            continue;
          // A returned cache keeps the narrow type; any other result its
          // declared type.
          auto arg = dyn_cast<BlockArgument>(use.get());
          if (arg && f.getArgAttr(arg.getArgNumber(), kStateArgAttr)) {
            results[i] = use.get().getType();
            continue;
          }
          use.set(widened(b, use.get(), ret));
        }
        f.setFunctionType(b.getFunctionType(inputs, results));
        continue;
      }
      // A conversion takes any type, a size query reads no elements.
      if (isa<loom::CastOp, tensor::DimOp>(op))
        continue;
      if (op.getNumRegions() != 0) {
        // Nothing in a loom program before lowering has regions; refuse
        // rather than leave a body typed for the other dtype.
        return op.emitError()
               << "--gpu-dtype: an op with regions in an entry is not "
                  "converted; compile with --gpu-dtype=f32";
      }
      if (op.getDialect() &&
          op.getDialect()->getNamespace() !=
              loom::LoomDialect::getDialectNamespace() &&
          !isa<func::CallOp>(op)) {
        // Not a loom op (tensor/arith from an earlier pass): computes in
        // f32 as it was written.
        widenOurs(b, &op);
        continue;
      }
      convert(b, &op);
    }
    return success();
  }
};

struct GpuActivationDtypePass
    : loom::impl::GpuActivationDtypePassBase<GpuActivationDtypePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp m = getOperation();
    Builder b(m.getContext());
    Type narrow;
    std::string name = dtype;
    if (name == "f32")
      return;
    if (name == "f16")
      narrow = b.getF16Type();
    else if (name == "bf16")
      narrow = b.getBF16Type();
    else {
      m.emitError() << "--gpu-dtype=" << name
                    << ": unknown; expected f32, f16 or bf16";
      return signalPassFailure();
    }
    for (auto f : llvm::make_early_inc_range(m.getOps<func::FuncOp>())) {
      Converter c{narrow, bool(cublas), bool(fusedAttention), {}};
      if (failed(c.run(f)))
        return signalPassFailure();
    }
  }
};

} // namespace
