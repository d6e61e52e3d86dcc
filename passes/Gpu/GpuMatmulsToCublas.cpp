//===- GpuMatmulsToCublas.cpp - rank-2 products as cuBLAS calls -----------===//
//
// On buffers: a linalg contraction c[m, n] = sum_k a[m, k] * b[k, n] (either
// operand stored transposed) whose output the previous op zero-filled is the
// runtime's cuBLAS GEMM, beta = 0. What does not match (batched products,
// strided views, mixed element types, an accumulating product) stays a loop
// nest and becomes a generated kernel: slower, never wrong.
//
//===----------------------------------------------------------------------===//

#include "passes/Gpu/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Matchers.h"

#define DEBUG_TYPE "loom-gpu-matmuls-to-cublas"

namespace loom {
#define GEN_PASS_DEF_GPUMATMULSTOCUBLASPASS
#include "passes/Gpu/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

// abi.h's loom_rt_dtype values (the runtime is not included here).
constexpr int32_t kRtF32 = 0, kRtF16 = 1, kRtBF16 = 2;

/// abi.h's dtype of `t`, or -1.
int32_t rtDtype(Type t) {
  if (t.isF32())
    return kRtF32;
  if (t.isF16())
    return kRtF16;
  if (t.isBF16())
    return kRtBF16;
  return -1;
}

bool usesValue(Operation *op, Value v) {
  bool found = false;
  op->walk([&](Operation *inner) {
    if (llvm::is_contained(inner->getOperands(), v))
      found = true;
  });
  return found;
}

/// The op that left `c` holding zeros before `op` in its block: a
/// linalg.fill of zero, or a memref.copy into `c` from a buffer holding
/// zeros then (CSE merges equal zero-filled tensors, and bufferization
/// gives each product its copy of the one filled buffer). Ops between them
/// that only read `c` (a copy from it) are passed over. Null otherwise.
Operation *zeroWriterBefore(Operation *op, Value c, bool viaCopy = true) {
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (!usesValue(prev, c))
      continue;
    if (auto copy = dyn_cast<memref::CopyOp>(prev)) {
      if (copy.getSource() == c && copy.getTarget() != c)
        continue; // read only
      if (viaCopy && copy.getTarget() == c &&
          zeroWriterBefore(copy, copy.getSource(), /*viaCopy=*/false))
        return copy;
      return nullptr;
    }
    auto fill = dyn_cast<linalg::FillOp>(prev);
    if (!fill || fill.getOutputs().front() != c)
      return nullptr;
    Attribute value;
    if (!matchPattern(fill.getInputs().front(), m_Constant(&value)))
      return nullptr;
    auto f = dyn_cast<FloatAttr>(value);
    return f && f.getValue().isZero() ? fill.getOperation() : nullptr;
  }
  return nullptr;
}

/// Whether a memref.copy reads `c` (what left its zeros is then kept).
bool copiedFrom(Value c) {
  return llvm::any_of(c.getUsers(), [&](Operation *user) {
    auto copy = dyn_cast<memref::CopyOp>(user);
    return copy && copy.getSource() == c;
  });
}

/// 0 if `map` is (row, col) of the loops `row` and `col`, 1 if it is
/// (col, row), -1 otherwise.
int transposed(AffineMap map, unsigned row, unsigned col) {
  if (map.getNumResults() != 2)
    return -1;
  auto dim = [&](unsigned i) -> int {
    auto d = dyn_cast<AffineDimExpr>(map.getResult(i));
    return d ? int(d.getPosition()) : -1;
  };
  if (dim(0) == int(row) && dim(1) == int(col))
    return 0;
  if (dim(0) == int(col) && dim(1) == int(row))
    return 1;
  return -1;
}

/// A rank-2 buffer with the identity layout; its sizes may be run-time
/// ones (the call then takes them from the buffers).
bool isPlainBuffer(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  return t && t.getLayout().isIdentity() && t.getRank() == 2;
}

Value pointerOf(OpBuilder &b, Location loc, Value memref) {
  Value idx = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), idx);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), i64);
}

struct GpuMatmulsToCublasPass
    : loom::impl::GpuMatmulsToCublasPassBase<GpuMatmulsToCublasPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> products;
    module.walk([&](linalg::LinalgOp op) {
      if (op->getParentOfType<gpu::GPUModuleOp>() ||
          !op.hasPureBufferSemantics() ||
          !linalg::isaContractionOpInterface(op))
        return;
      products.push_back(op);
    });
    if (products.empty())
      return;
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    Type i32 = b.getI32Type(), i64 = b.getI64Type();
    func::FuncOp gemm = module.lookupSymbol<func::FuncOp>(loom::kGpuGemmFn);
    if (!gemm) {
      b.setInsertionPointToEnd(module.getBody());
      gemm = func::FuncOp::create(
          b, module.getLoc(), loom::kGpuGemmFn,
          b.getFunctionType({ptr, i32, i32, i32, i64, i64, i64, ptr, ptr, ptr},
                            {}));
      gemm.setPrivate();
    }
    for (linalg::LinalgOp op : products) {
      FailureOr<linalg::ContractionDimensions> dims =
          linalg::inferContractionDims(op);
      if (failed(dims) || !dims->batch.empty() || dims->m.size() != 1 ||
          dims->n.size() != 1 || dims->k.size() != 1 ||
          op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
        continue;
      Value a = op.getDpsInputOperand(0)->get();
      Value bm = op.getDpsInputOperand(1)->get();
      Value c = op.getDpsInitOperand(0)->get();
      if (!isPlainBuffer(a) || !isPlainBuffer(bm) || !isPlainBuffer(c))
        continue;
      Type elem = cast<MemRefType>(c.getType()).getElementType();
      int32_t dtype = rtDtype(elem);
      if (dtype < 0 || cast<MemRefType>(a.getType()).getElementType() != elem ||
          cast<MemRefType>(bm.getType()).getElementType() != elem)
        continue;
      unsigned m = dims->m[0], n = dims->n[0], k = dims->k[0];
      SmallVector<AffineMap> maps = op.getIndexingMapsArray();
      int ta = transposed(maps[0], m, k), tb = transposed(maps[1], k, n);
      if (ta < 0 || tb < 0 || transposed(maps[2], m, n) != 0)
        continue;
      Operation *zeros = zeroWriterBefore(op, c);
      if (!zeros)
        continue;
      Location loc = op.getLoc();
      b.setInsertionPoint(op);
      // m, n, k: constants, or run-time sizes read from the buffers.
      SmallVector<Range> ranges = op.createLoopRanges(b, loc);
      auto sizeOf = [&](unsigned loop) -> Value {
        std::optional<int64_t> c = getConstantIntValue(ranges[loop].size);
        if (c)
          return arith::ConstantIntOp::create(b, loc, i64, *c);
        Value v = getValueOrCreateConstantIndexOp(b, loc, ranges[loop].size);
        return arith::IndexCastOp::create(b, loc, i64, v);
      };
      auto i32c = [&](int64_t v) -> Value {
        return arith::ConstantIntOp::create(b, loc, i32, v);
      };
      // The stream: a placeholder until loom-gpu-host-program chains the
      // call on the program's stream.
      Value stream = LLVM::ZeroOp::create(b, loc, ptr);
      func::CallOp::create(
          b, loc, gemm,
          ValueRange{stream, i32c(dtype), i32c(ta), i32c(tb), sizeOf(m),
                     sizeOf(n), sizeOf(k), pointerOf(b, loc, a),
                     pointerOf(b, loc, bm), pointerOf(b, loc, c)});
      op->erase();
      // beta = 0: the zeros are not needed, unless a copy still reads them.
      if (!copiedFrom(c))
        zeros->erase();
    }
    // What stays a generated product accumulates in f32 even when its
    // buffers are f16/bf16 (--gpu-dtype: accumulation is never narrow).
    SmallVector<linalg::LinalgOp> narrow;
    module.walk([&](linalg::LinalgOp op) {
      if (op->getParentOfType<gpu::GPUModuleOp>() ||
          !op.hasPureBufferSemantics() ||
          !linalg::isaContractionOpInterface(op) || op.getNumDpsInputs() != 2 ||
          op.getNumDpsInits() != 1)
        return;
      auto isNarrow = [](Value v) {
        Type e = cast<MemRefType>(v.getType()).getElementType();
        return e.isF16() || e.isBF16();
      };
      if (isNarrow(op.getDpsInputOperand(0)->get()) &&
          isNarrow(op.getDpsInputOperand(1)->get()) &&
          isNarrow(op.getDpsInitOperand(0)->get()))
        narrow.push_back(op);
    });
    for (linalg::LinalgOp op : narrow)
      accumulateInF32(b, op);
  }

  /// c[...] += a * b with narrow buffers as: t = f32(c); t += f32(a) *
  /// f32(b); c = narrow(t), t an f32 buffer of c's sizes.
  static void accumulateInF32(OpBuilder &b, linalg::LinalgOp op) {
    Location loc = op.getLoc();
    b.setInsertionPoint(op);
    Value a = op.getDpsInputOperand(0)->get();
    Value bm = op.getDpsInputOperand(1)->get();
    Value c = op.getDpsInitOperand(0)->get();
    auto ct = cast<MemRefType>(c.getType());
    Type f32 = b.getF32Type(), narrow = ct.getElementType();
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < ct.getRank(); ++d)
      if (ct.isDynamicDim(d))
        sizes.push_back(memref::DimOp::create(b, loc, c, d));
    Value t = memref::AllocOp::create(
        b, loc, MemRefType::get(ct.getShape(), f32), sizes);
    AffineMap id = b.getMultiDimIdentityMap(ct.getRank());
    SmallVector<utils::IteratorType> parallel(ct.getRank(),
                                              utils::IteratorType::parallel);
    auto convert = [&](Value from, Value to, Type type) {
      linalg::GenericOp::create(
          b, loc, ValueRange{from}, ValueRange{to}, ArrayRef<AffineMap>{id, id},
          parallel, [&](OpBuilder &bb, Location l, ValueRange v) {
            Value r = type == f32
                          ? Value(arith::ExtFOp::create(bb, l, f32, v[0]))
                          : Value(arith::TruncFOp::create(bb, l, type, v[0]));
            linalg::YieldOp::create(bb, l, r);
          });
    };
    convert(c, t, f32);
    linalg::GenericOp::create(
        b, loc, ValueRange{a, bm}, ValueRange{t}, op.getIndexingMapsArray(),
        op.getIteratorTypesArray(),
        [&](OpBuilder &bb, Location l, ValueRange v) {
          Value x = arith::ExtFOp::create(bb, l, f32, v[0]);
          Value y = arith::ExtFOp::create(bb, l, f32, v[1]);
          Value p = arith::MulFOp::create(bb, l, x, y);
          linalg::YieldOp::create(bb, l,
                                  Value(arith::AddFOp::create(bb, l, v[2], p)));
        });
    convert(t, c, narrow);
    memref::DeallocOp::create(b, loc, t);
    op->erase();
  }
};

} // namespace
