//===- GpuHostProgram.cpp - device buffers, one stream, the memory plan ---===//
//
// After kernel outlining an entry point is host code: allocations, launches
// and cuBLAS calls on buffers. This pass puts the buffers on the device
// (inputs copied in per call, weights and constants made device-resident
// once through the runtime, results copied out), chains every device
// operation on one stream and computes the memory plan: every buffer of a
// call at an offset of one workspace per entry, from the buffers' live
// intervals in program order (docs/GPU.md "The memory plan"), so that a
// call allocates and frees nothing and the peak is known here. Dynamic
// dimensions of the inputs are run-time sizes: buffers are views and
// copies of them, and the plan takes every one at the bound `max-dim`
// (each buffer's size bounded through the arithmetic that computes it from
// the inputs' sizes), so the peak is a bound.
//
//===----------------------------------------------------------------------===//

#include "passes/Gpu/Passes.h"
#include "passes/Lowering/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "loom-gpu-host-program"

namespace loom {
#define GEN_PASS_DEF_GPUHOSTPROGRAMPASS
#include "passes/Gpu/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

/// Bytes of a statically shaped buffer, or -1.
int64_t bytesOf(Type type) {
  auto t = dyn_cast<MemRefType>(type);
  if (!t || !t.hasStaticShape())
    return -1;
  return t.getNumElements() *
         int64_t(llvm::divideCeil(t.getElementTypeBitWidth(), 8));
}

/// `pointer` (device memory) as a memref of `type`: the LLVM descriptor
/// {allocated, aligned, offset 0, sizes, strides} cast back to `type`.
/// `sizes` are i64, one per dimension; `strides` too, or empty for the
/// row-major strides of `sizes`.
Value descriptorView(OpBuilder &b, Location loc, MemRefType type, Value pointer,
                     ArrayRef<Value> sizes, ArrayRef<Value> strides = {}) {
  MLIRContext *ctx = b.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = b.getI64Type();
  int64_t rank = type.getRank();
  SmallVector<Type> fields = {ptr, ptr, i64};
  if (rank > 0) {
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
  }
  Value desc = LLVM::PoisonOp::create(
      b, loc, LLVM::LLVMStructType::getLiteral(ctx, fields));
  auto set = [&](Value v, ArrayRef<int64_t> at) {
    desc = LLVM::InsertValueOp::create(b, loc, desc, v, at);
  };
  set(pointer, {0});
  set(pointer, {1});
  set(LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(0)), {2});
  Value stride =
      strides.empty()
          ? Value(LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(1)))
          : Value();
  for (int64_t d = rank - 1; d >= 0; --d) {
    set(sizes[size_t(d)], {3, d});
    set(strides.empty() ? stride : strides[size_t(d)], {4, d});
    if (strides.empty() && d > 0)
      stride = LLVM::MulOp::create(b, loc, stride, sizes[size_t(d)]);
  }
  return UnrealizedConversionCastOp::create(b, loc, type, desc).getResult(0);
}

/// Upper bounds of the sizes in host code: every dynamic dimension of an
/// entry's input is at most `maxDim`; a size computed from them by
/// constants, + - * / ceildiv, min, max, casts and affine maps with
/// non-negative coefficients is bounded through that arithmetic (sizes are
/// never negative). Anything else has no bound (std::nullopt).
struct SizeBounds {
  int64_t maxDim = 0;
  /// Bounds of the dynamic sizes of the buffers made here.
  DenseMap<Value, int64_t> known;
  /// Views made here of an entry's state arguments (the device KV caches):
  /// their context is the caller's, at most `maxDim` as an input's (the
  /// runtime refuses a larger --ctx for the bundle).
  llvm::SmallPtrSet<Value, 8> stateViews;

  std::optional<int64_t> of(Value v, int depth = 0) {
    if (depth > 64)
      return std::nullopt;
    if (auto it = known.find(v); it != known.end())
      return it->second;
    APInt c;
    if (matchPattern(v, m_ConstantInt(&c)))
      return c.getSExtValue();
    Operation *def = v.getDefiningOp();
    if (!def)
      return std::nullopt;
    auto sub = [&](Value x) { return of(x, depth + 1); };
    auto both = [&](auto fn) -> std::optional<int64_t> {
      std::optional<int64_t> a = sub(def->getOperand(0)),
                             b = sub(def->getOperand(1));
      if (!a || !b)
        return std::nullopt;
      return fn(*a, *b);
    };
    auto cst = [&](Value x) -> std::optional<int64_t> {
      APInt k;
      if (matchPattern(x, m_ConstantInt(&k)))
        return k.getSExtValue();
      return std::nullopt;
    };
    if (auto dim = dyn_cast<memref::DimOp>(def)) {
      std::optional<int64_t> i = dim.getConstantIndex();
      auto type = dyn_cast<MemRefType>(dim.getSource().getType());
      if (!i || !type)
        return std::nullopt;
      if (!type.isDynamicDim(*i))
        return type.getDimSize(*i);
      return ofDim(dim.getSource(), *i, depth + 1);
    }
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtUIOp,
            arith::ExtSIOp, arith::TruncIOp>(def))
      return sub(def->getOperand(0));
    if (isa<arith::AddIOp>(def))
      return both([](int64_t a, int64_t b) { return a + b; });
    if (isa<arith::MulIOp>(def))
      return both([](int64_t a, int64_t b) { return a * b; });
    if (isa<arith::MaxSIOp, arith::MaxUIOp>(def))
      return both([](int64_t a, int64_t b) { return std::max(a, b); });
    if (isa<arith::MinSIOp, arith::MinUIOp>(def)) {
      std::optional<int64_t> a = sub(def->getOperand(0)),
                             b = sub(def->getOperand(1));
      if (a && b)
        return std::min(*a, *b);
      return a ? a : b;
    }
    if (isa<arith::SubIOp>(def)) {
      // x - c, c a constant: at most bound(x) - c (and at least 0).
      std::optional<int64_t> a = sub(def->getOperand(0)),
                             k = cst(def->getOperand(1));
      if (!a || !k)
        return std::nullopt;
      return std::max<int64_t>(0, *a - *k);
    }
    if (isa<arith::DivUIOp, arith::DivSIOp, arith::CeilDivUIOp,
            arith::CeilDivSIOp>(def)) {
      std::optional<int64_t> a = sub(def->getOperand(0)),
                             k = cst(def->getOperand(1));
      if (!a || !k || *k <= 0)
        return std::nullopt;
      return isa<arith::DivUIOp, arith::DivSIOp>(def) ? *a / *k
                                                      : (*a + *k - 1) / *k;
    }
    if (auto select = dyn_cast<arith::SelectOp>(def)) {
      std::optional<int64_t> a = sub(select.getTrueValue()),
                             b = sub(select.getFalseValue());
      if (!a || !b)
        return std::nullopt;
      return std::max(*a, *b);
    }
    if (auto apply = dyn_cast<affine::AffineApplyOp>(def))
      return ofMap(apply.getAffineMap(), apply.getMapOperands(), depth,
                   /*min=*/false);
    if (auto min = dyn_cast<affine::AffineMinOp>(def))
      return ofMap(min.getAffineMap(), min.getMapOperands(), depth,
                   /*min=*/true);
    if (auto max = dyn_cast<affine::AffineMaxOp>(def))
      return ofMap(max.getAffineMap(), max.getMapOperands(), depth,
                   /*min=*/false);
    return std::nullopt;
  }

  /// The bound of dimension `i` of the buffer `v` (dynamic in its type).
  std::optional<int64_t> ofDim(Value v, int64_t i, int depth) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (maxDim > 0 && arg.getOwner()->isEntryBlock() &&
          isa<func::FuncOp>(arg.getOwner()->getParentOp()))
        return maxDim;
      return std::nullopt;
    }
    if (maxDim > 0 && stateViews.contains(v))
      return maxDim;
    Operation *def = v.getDefiningOp();
    auto type = cast<MemRefType>(v.getType());
    auto ofSize = [&](OpFoldResult s) -> std::optional<int64_t> {
      if (std::optional<int64_t> c = getConstantIntValue(s))
        return *c;
      return of(cast<Value>(s), depth + 1);
    };
    // A view: its size of that dimension.
    auto dimOf = [&](Value src, int64_t d) -> std::optional<int64_t> {
      auto t = cast<MemRefType>(src.getType());
      if (!t.isDynamicDim(d))
        return t.getDimSize(d);
      return ofDim(src, d, depth + 1);
    };
    if (auto expand = dyn_cast_or_null<memref::ExpandShapeOp>(def))
      return ofSize(expand.getMixedOutputShape()[i]);
    if (auto collapse = dyn_cast_or_null<memref::CollapseShapeOp>(def)) {
      int64_t n = 1;
      for (int64_t d : collapse.getReassociationIndices()[i]) {
        std::optional<int64_t> b = dimOf(collapse.getSrc(), d);
        if (!b)
          return std::nullopt;
        n *= *b;
      }
      return n;
    }
    if (auto cast = dyn_cast_or_null<memref::CastOp>(def))
      return dimOf(cast.getSource(), i);
    if (auto re = dyn_cast_or_null<memref::ReinterpretCastOp>(def))
      return ofSize(re.getMixedSizes()[i]);
    // The alloc's dynamic size of that dimension.
    ValueRange sizes;
    if (auto a = dyn_cast_or_null<memref::AllocOp>(def))
      sizes = a.getDynamicSizes();
    else if (auto a = dyn_cast_or_null<gpu::AllocOp>(def))
      sizes = a.getDynamicSizes();
    else
      return std::nullopt;
    unsigned k = 0;
    for (int64_t d = 0; d < i; ++d)
      k += type.isDynamicDim(d);
    return k < sizes.size() ? of(sizes[k], depth + 1) : std::nullopt;
  }

  /// The max (or, `min`, the min) over `map`'s results at the operands'
  /// bounds; each result must grow with its operands.
  std::optional<int64_t> ofMap(AffineMap map, ValueRange operands, int depth,
                               bool min) {
    SmallVector<std::optional<int64_t>> at;
    for (Value x : operands)
      at.push_back(of(x, depth + 1));
    std::optional<int64_t> best;
    for (AffineExpr e : map.getResults()) {
      std::optional<int64_t> r = ofExpr(e, map.getNumDims(), at);
      if (!r) {
        if (!min)
          return std::nullopt;
        continue;
      }
      best = !best ? r : min ? std::min(*best, *r) : std::max(*best, *r);
    }
    return best;
  }

  std::optional<int64_t> ofExpr(AffineExpr e, unsigned numDims,
                                ArrayRef<std::optional<int64_t>> at) {
    if (auto c = dyn_cast<AffineConstantExpr>(e))
      return c.getValue();
    if (auto d = dyn_cast<AffineDimExpr>(e))
      return at[d.getPosition()];
    if (auto s = dyn_cast<AffineSymbolExpr>(e))
      return at[numDims + s.getPosition()];
    auto bin = cast<AffineBinaryOpExpr>(e);
    auto rhsConst = dyn_cast<AffineConstantExpr>(bin.getRHS());
    std::optional<int64_t> l = ofExpr(bin.getLHS(), numDims, at);
    switch (e.getKind()) {
    case AffineExprKind::Add: {
      std::optional<int64_t> r = ofExpr(bin.getRHS(), numDims, at);
      // x + c with c < 0 (e.g. x - 1): still at most bound(x) + c.
      if (!l || !r)
        return std::nullopt;
      return std::max<int64_t>(0, *l + *r);
    }
    case AffineExprKind::Mul:
      if (!l || !rhsConst || rhsConst.getValue() < 0)
        return std::nullopt;
      return *l * rhsConst.getValue();
    case AffineExprKind::FloorDiv:
    case AffineExprKind::CeilDiv:
      if (!l || !rhsConst || rhsConst.getValue() <= 0)
        return std::nullopt;
      return e.getKind() == AffineExprKind::FloorDiv
                 ? *l / rhsConst.getValue()
                 : (*l + rhsConst.getValue() - 1) / rhsConst.getValue();
    case AffineExprKind::Mod:
      if (!rhsConst || rhsConst.getValue() <= 0)
        return std::nullopt;
      return rhsConst.getValue() - 1;
    default:
      return std::nullopt;
    }
  }

  /// Bytes of a buffer of `type` with `sizes` for its dynamic dimensions,
  /// at their bounds; std::nullopt if one has none.
  std::optional<int64_t> bytes(MemRefType type, ValueRange sizes) {
    int64_t n = int64_t(llvm::divideCeil(type.getElementTypeBitWidth(), 8));
    unsigned k = 0;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d)) {
        n *= type.getDimSize(d);
        continue;
      }
      std::optional<int64_t> b =
          k < sizes.size() ? of(sizes[k]) : std::optional<int64_t>();
      ++k;
      if (!b)
        return std::nullopt;
      n *= *b;
    }
    return n;
  }
};

/// A buffer of the memory plan: live from the top-level op `start` to the
/// top-level op `end` (both included; -1: from the call's start), `bytes` at
/// the bound, placed at `offset` in the entry's workspace.
struct PlannedBuffer {
  int64_t start = 0, end = 0, bytes = 0, offset = 0;
};

/// Offsets of the workspace's buffers, aligned to kWorkspaceAlign, such that
/// two buffers whose intervals overlap do not overlap in memory; the
/// workspace's bytes. Greedy by size: the largest buffer first (then the
/// earliest), each at the lowest offset that fits between the buffers
/// already placed whose intervals overlap its own (first fit).
constexpr int64_t kWorkspaceAlign = 256;
int64_t assignOffsets(MutableArrayRef<PlannedBuffer> buffers) {
  SmallVector<size_t> order;
  for (size_t i = 0; i < buffers.size(); ++i)
    order.push_back(i);
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].start < buffers[b].start;
  });
  int64_t total = 0;
  SmallVector<size_t> placed, clash;
  for (size_t i : order) {
    PlannedBuffer &x = buffers[i];
    clash.clear();
    for (size_t j : placed)
      if (buffers[j].start <= x.end && x.start <= buffers[j].end)
        clash.push_back(j);
    llvm::sort(clash, [&](size_t a, size_t b) {
      return buffers[a].offset < buffers[b].offset;
    });
    int64_t at = 0;
    for (size_t j : clash) {
      if (at + x.bytes <= buffers[j].offset)
        break;
      at = std::max(at,
                    int64_t(llvm::alignTo(buffers[j].offset + buffers[j].bytes,
                                          kWorkspaceAlign)));
    }
    x.offset = at;
    total = std::max(total, at + x.bytes);
    placed.push_back(i);
  }
  return total;
}

/// A host read of the values of a device-side id check
/// (loom-gpu-device-index-check): every user is the check's call.
bool isIndexCheckRead(Operation *op) {
  return isa<memref::LoadOp>(op) && !op->use_empty() &&
         llvm::all_of(op->getUsers(), [](Operation *u) {
           auto c = dyn_cast<func::CallOp>(u);
           return c && c.getCallee() == loom::kGpuIndexCheckFn;
         });
}

bool isHostInputRead(Operation *op);

/// An entry argument that is state (a KV cache, docs/DIALECT.md).
constexpr StringLiteral kStateArgAttrName = "loom.state";

/// True for host operations that may stay: they touch no buffer's contents.
/// The runtime's context queries (loom/runtime/abi.h: the rank, the mesh,
/// a group's size and this rank's index in it): host scalars from the
/// context and integers, no buffer read; a partitioned program computes
/// its slices' offsets from them.
bool isContextQuery(func::CallOp call) {
  static constexpr llvm::StringLiteral kQueries[] = {
      "loom_rt_rank",       "loom_rt_world_size", "loom_rt_mesh_rank",
      "loom_rt_mesh_dim",   "loom_rt_coord",      "loom_rt_group_size",
      "loom_rt_group_index"};
  return llvm::is_contained(kQueries, call.getCallee()) &&
         llvm::none_of(call.getOperandTypes(),
                       [](Type t) { return isa<BaseMemRefType>(t); });
}

bool isHostSafe(Operation *op) {
  if (isa<gpu::GPUDialect>(op->getDialect()) ||
      op->hasTrait<OpTrait::ConstantLike>() ||
      isa<func::ReturnOp, memref::AllocOp, memref::DeallocOp, memref::CopyOp,
          memref::GetGlobalOp, memref::ExtractAlignedPointerAsIndexOp,
          memref::ExtractStridedMetadataOp, ViewLikeOpInterface>(op))
    return true;
  if (auto call = dyn_cast<func::CallOp>(op))
    return call->hasAttr(loom::kGpuHostSyncAttr) || isContextQuery(call) ||
           call.getCallee() == loom::kGpuGemmFn ||
           call.getCallee() == loom::kGpuResidentFn ||
           call.getCallee() == loom::kGpuStateFn ||
           call.getCallee() == loom::kGpuIndexCheckFn;
  // The values of a device-side id check: copied back and read after the
  // step's synchronisation (below).
  if (isa<memref::LoadOp>(op))
    return isIndexCheckRead(op) || isHostInputRead(op);
  // Scalar arithmetic (launch sizes, pointers) has no memory effects.
  return isMemoryEffectFree(op) && op->getNumRegions() == 0;
}

/// Whether argument `i` of `f` has the argument attribute `name`, or
/// (bufferization drops argument attributes) had it in the module's
/// `loom.entry_points` record (loom-record-entry-points).
bool hasRecordedArgAttr(func::FuncOp f, unsigned i, StringRef name) {
  if (f.getArgAttr(i, name))
    return true;
  auto m = f->getParentOfType<ModuleOp>();
  auto entries = m ? m->getAttrOfType<ArrayAttr>("loom.entry_points") : nullptr;
  if (!entries)
    return false;
  for (auto entry : entries.getAsRange<DictionaryAttr>()) {
    auto n = entry.getAs<StringAttr>("name");
    auto args = entry.getAs<ArrayAttr>("arg_attrs");
    if (!n || n.getValue() != f.getName() || !args || i >= args.size())
      continue;
    auto attrs = dyn_cast<DictionaryAttr>(args[i]);
    return attrs && attrs.get(name);
  }
  return false;
}

/// Whether argument `i` of `f` is a weight (`loom.weight`).
bool isWeightArg(func::FuncOp f, unsigned i) {
  return hasRecordedArgAttr(f, i, loom::kWeightArgAttrName);
}

/// Whether argument `i` of `f` is a state (`loom.state`: a KV cache).
bool isStateArg(func::FuncOp f, unsigned i) {
  return hasRecordedArgAttr(f, i, kStateArgAttrName);
}

/// A host read of an input argument's host memory (e.g. a decode step's
/// position, which places the cache write): the input is the caller's host
/// buffer, unchanged during the call, so the read stays on the host and
/// needs no device copy.
bool isHostInputRead(Operation *op) {
  auto load = dyn_cast<memref::LoadOp>(op);
  if (!load)
    return false;
  auto arg = dyn_cast<BlockArgument>(load.getMemRef());
  if (!arg)
    return false;
  auto f = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return f && arg.getOwner() == &f.getBody().front() &&
         !isWeightArg(f, arg.getArgNumber()) &&
         !isStateArg(f, arg.getArgNumber());
}

struct GpuHostProgramPass
    : loom::impl::GpuHostProgramPassBase<GpuHostProgramPass> {
  using Base::Base;
  LogicalResult runOnFunction(func::FuncOp f);

  void runOnOperation() override {
    // In kernels, math ops that NVVM would turn into calls to libdevice
    // (__nv_fmaf, __nv_sqrtf, __nv_floorf, ...: libdevice is not linked) become
    // one instruction each: llvm.fma, the NVPTX intrinsic of a rounded
    // square root (in f32), a select.
    getOperation().walk([](Operation *op) {
      if (!op->getParentOfType<gpu::GPUModuleOp>() ||
          !isa<math::FmaOp, math::SqrtOp, math::RsqrtOp, math::AbsFOp,
               math::FloorOp, math::CeilOp, math::TruncOp>(op))
        return;
      OpBuilder b(op);
      Location loc = op->getLoc();
      Type type = op->getResult(0).getType();
      Type f32 = b.getF32Type();
      // An f32 NVPTX intrinsic (f16 through f32: exact for these).
      auto nvvm = [&](StringRef name, Value x) -> Value {
        if (type != f32)
          x = arith::ExtFOp::create(b, loc, f32, x);
        Value r = LLVM::CallIntrinsicOp::create(
                      b, loc, Type(f32), b.getStringAttr(name), ValueRange{x})
                      .getResult(0);
        return type == f32 ? r : arith::TruncFOp::create(b, loc, type, r);
      };
      Value r;
      if (auto fma = dyn_cast<math::FmaOp>(op))
        r = LLVM::FMAOp::create(b, loc, fma.getA(), fma.getB(), fma.getC());
      else if (isa<math::SqrtOp>(op))
        r = nvvm("llvm.nvvm.sqrt.rn.f", op->getOperand(0));
      else if (isa<math::FloorOp>(op))
        r = nvvm("llvm.nvvm.floor.f", op->getOperand(0));
      else if (isa<math::CeilOp>(op))
        r = nvvm("llvm.nvvm.ceil.f", op->getOperand(0));
      else if (isa<math::TruncOp>(op))
        r = nvvm("llvm.nvvm.trunc.f", op->getOperand(0));
      else if (isa<math::RsqrtOp>(op))
        r = arith::DivFOp::create(
            b, loc,
            arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 1.0)),
            nvvm("llvm.nvvm.sqrt.rn.f", op->getOperand(0)));
      else {
        Value x = op->getOperand(0);
        Value zero =
            arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 0.0));
        Value neg =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, zero);
        r = arith::SelectOp::create(b, loc, neg,
                                    arith::NegFOp::create(b, loc, x), x);
      }
      op->getResult(0).replaceAllUsesWith(r);
      op->erase();
    });
    for (auto f : llvm::to_vector(getOperation().getOps<func::FuncOp>()))
      if (!f.isDeclaration() && failed(runOnFunction(f)))
        return signalPassFailure();
    buildUploadConstants();
    // The id checks' calls became host code after the synchronisation.
    if (auto check =
            getOperation().lookupSymbol<func::FuncOp>(loom::kGpuIndexCheckFn);
        check && check.symbolKnownUseEmpty(getOperation()))
      check.erase();
  }

  /// `loom_gpu_upload_constants()`: every global an entry reads, made
  /// resident. The executor calls it once when it opens the bundle, so the
  /// entries' own loom_cuda_mgpu_resident calls find the copies and no call
  /// uploads a constant (without it, the first call would).
  void buildUploadConstants();

  /// The globals the entries read, in first-use order.
  llvm::SetVector<memref::GlobalOp> globals;
};

/// The declaration of the runtime's `name`(ptr, i64) -> ptr (made once).
func::FuncOp ptrI64FnOf(ModuleOp m, StringRef name) {
  if (auto fn = m.lookupSymbol<func::FuncOp>(name))
    return fn;
  OpBuilder mb(m.getBodyRegion());
  mb.setInsertionPointToEnd(m.getBody());
  Type ptr = LLVM::LLVMPointerType::get(m.getContext());
  auto fn = func::FuncOp::create(
      mb, m.getLoc(), name, mb.getFunctionType({ptr, mb.getI64Type()}, {ptr}));
  fn.setPrivate();
  return fn;
}

/// The declaration of loom_cuda_mgpu_resident(host, bytes) -> device.
func::FuncOp residentFnOf(ModuleOp m) {
  return ptrI64FnOf(m, loom::kGpuResidentFn);
}

/// The declaration of loom_cuda_mgpu_workspace(key, bytes) -> device.
func::FuncOp workspaceFnOf(ModuleOp m) {
  return ptrI64FnOf(m, loom::kGpuWorkspaceFn);
}

/// The key of `f`'s workspace: a private byte of the bundle, one per entry,
/// whose address is unique in the process and the same at every call.
LLVM::GlobalOp workspaceKeyOf(func::FuncOp f) {
  ModuleOp m = f->getParentOfType<ModuleOp>();
  std::string name = ("__loom_gpu_workspace_" + f.getName()).str();
  if (auto g = m.lookupSymbol<LLVM::GlobalOp>(name))
    return g;
  OpBuilder mb(m.getBodyRegion());
  mb.setInsertionPointToEnd(m.getBody());
  Type i8 = mb.getI8Type();
  return LLVM::GlobalOp::create(mb, f.getLoc(), i8, /*isConstant=*/false,
                                LLVM::Linkage::Internal, name,
                                mb.getIntegerAttr(i8, 0));
}

/// The declaration of loom_cuda_mgpu_state(host, bytes) -> device.
func::FuncOp stateFnOf(ModuleOp m) { return ptrI64FnOf(m, loom::kGpuStateFn); }

/// The host address of `host` as a pointer, and its device copy.
Value callResident(OpBuilder &b, Location loc, Value host, int64_t bytes,
                   Operation **aligned) {
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto p = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, host);
  if (aligned)
    *aligned = p;
  Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), p);
  Value address = LLVM::IntToPtrOp::create(b, loc, ptr, asInt);
  Value size = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(bytes));
  ModuleOp m = host.getParentRegion()->getParentOfType<ModuleOp>();
  return func::CallOp::create(b, loc, residentFnOf(m),
                              ValueRange{address, size})
      .getResult(0);
}

void GpuHostProgramPass::buildUploadConstants() {
  ModuleOp m = getOperation();
  if (globals.empty() ||
      m.lookupSymbol<func::FuncOp>(loom::kGpuUploadConstantsFn))
    return;
  OpBuilder b(m.getBodyRegion());
  b.setInsertionPointToEnd(m.getBody());
  auto fn = func::FuncOp::create(b, m.getLoc(), loom::kGpuUploadConstantsFn,
                                 b.getFunctionType({}, {}));
  b.setInsertionPointToStart(fn.addEntryBlock());
  for (memref::GlobalOp g : globals) {
    Location loc = g.getLoc();
    Value host = memref::GetGlobalOp::create(b, loc, g.getType(), g.getName());
    callResident(b, loc, host, bytesOf(g.getType()), nullptr);
  }
  func::ReturnOp::create(b, m.getLoc());
}

LogicalResult GpuHostProgramPass::runOnFunction(func::FuncOp f) {
  if (!f.getBody().hasOneBlock())
    return f.emitError() << "'" << f.getName()
                         << "' has control flow on the host: the GPU lowering "
                            "needs straight-line host code";
  Block &body = f.getBody().front();
  for (Operation &op : body) {
    if (isHostSafe(&op))
      continue;
    InFlightDiagnostic diag = op.emitError()
                              << "'" << op.getName()
                              << "' has no GPU lowering (it would run on the "
                                 "host and read device memory)";
    if (auto call = dyn_cast<func::CallOp>(op))
      diag << ": calls '" << call.getCallee()
           << "'; layer calls are not built for CUDA yet (collectives go "
              "through loom-gpu-sync-collectives)";
    return diag;
  }

  MLIRContext *ctx = f.getContext();
  OpBuilder b(ctx);
  Type tokenType = gpu::AsyncTokenType::get(ctx);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Type i64 = b.getI64Type();
  int64_t uploaded = 0, residentBytes = 0;

  SizeBounds bounds;
  bounds.maxDim = maxDim;
  // Whether an input has a dynamic dimension (the plan is then a bound).
  bool dynamicInputs = false;
  auto noBound = [&](Location loc, Type type) {
    InFlightDiagnostic d = emitError(loc) << "buffer of type " << type;
    if (maxDim <= 0)
      d << " has a run-time size and no bound was given: give the largest "
           "size of the dynamic dimensions (loomc --gpu-max-tokens N, "
           "loom-lower-gpu-pipeline max-dim=N)";
    else
      d << " has a run-time size with no compile-time bound from the "
           "inputs' bound "
        << int64_t(maxDim)
        << " (its size is not computed from the inputs' sizes by "
           "arithmetic the memory plan can bound)";
    return d;
  };

  // The memory plan (before anything is rewritten): every buffer of a call
  // (the allocations of the body and the device copies of the inputs) gets
  // an offset in one workspace per entry, computed here from the buffers'
  // live intervals in program order (docs/GPU.md "The memory plan").
  auto uploads = [&](BlockArgument arg) {
    return isa<MemRefType>(arg.getType()) && !arg.use_empty() &&
           !isStateArg(f, arg.getArgNumber()) &&
           !isWeightArg(f, arg.getArgNumber()) &&
           !llvm::all_of(arg.getUsers(), isHostInputRead);
  };
  SmallVector<PlannedBuffer> planned;
  DenseMap<Value, size_t> plannedIndex;
  {
    DenseMap<Operation *, int64_t> position;
    int64_t n = 0;
    for (Operation &op : body)
      position[&op] = n++;
    // The last top-level op that uses `root` or a value made from it (its
    // views, casts, pointer): a use in a region counts at its ancestor.
    auto lastUse = [&](Value root) {
      int64_t last = -1;
      SmallVector<Value> work = {root};
      DenseSet<Value> seen;
      while (!work.empty()) {
        Value v = work.pop_back_val();
        if (!seen.insert(v).second)
          continue;
        for (Operation *user : v.getUsers()) {
          // A size, a deallocation (gone) or a read of the host input
          // (a position) uses no device memory.
          if (isa<memref::DimOp, memref::DeallocOp>(user) ||
              (isa<BlockArgument>(root) && isHostInputRead(user)))
            continue;
          if (Operation *top = body.findAncestorOpInBlock(*user))
            last = std::max(last, position.lookup(top));
          if (auto meta = dyn_cast<memref::ExtractStridedMetadataOp>(user)) {
            work.push_back(meta.getBaseBuffer());
            continue;
          }
          // Anything else made from it may carry its address (a view, a
          // cast, its pointer as an index or an !llvm.ptr).
          for (Value r : user->getResults())
            work.push_back(r);
        }
      }
      return last;
    };
    auto add = [&](Value v, int64_t start, int64_t bytes) {
      plannedIndex[v] = planned.size();
      planned.push_back({start, std::max(start, lastUse(v)), bytes, 0});
    };
    for (BlockArgument arg : f.getArguments()) {
      if (!uploads(arg))
        continue;
      auto type = cast<MemRefType>(arg.getType());
      int64_t bytes =
          int64_t(llvm::divideCeil(type.getElementTypeBitWidth(), 8));
      for (int64_t d = 0; d < type.getRank(); ++d) {
        if (type.isDynamicDim(d) && maxDim <= 0)
          return noBound(f.getLoc(), type);
        bytes *= type.isDynamicDim(d) ? int64_t(maxDim) : type.getDimSize(d);
      }
      add(arg, /*start=*/-1, bytes);
    }
    for (Operation &op : body) {
      auto alloc = dyn_cast<memref::AllocOp>(op);
      if (!alloc)
        continue;
      if (!alloc.getType().getLayout().isIdentity())
        return alloc.emitError()
               << "buffer of type " << alloc.getType()
               << " has a strided layout: the memory plan places identity "
                  "layouts only";
      std::optional<int64_t> bytes =
          bounds.bytes(alloc.getType(), alloc.getDynamicSizes());
      if (!bytes)
        return noBound(alloc.getLoc(), alloc.getType());
      add(alloc.getResult(), position.lookup(&op), *bytes);
    }
  }
  int64_t workspaceBytes = assignOffsets(planned);

  b.setInsertionPointToStart(&body);
  Value token =
      gpu::WaitOp::create(b, f.getLoc(), tokenType, {}).getAsyncToken();
  // The workspace: allocated by the runtime at the first call and kept
  // (loom_cuda_mgpu_workspace, keyed by the address of this entry's
  // global), the same device address at every call.
  Value base;
  if (workspaceBytes > 0) {
    ModuleOp m = f->getParentOfType<ModuleOp>();
    Value key = LLVM::AddressOfOp::create(b, f.getLoc(), workspaceKeyOf(f));
    Value bytes = LLVM::ConstantOp::create(b, f.getLoc(), i64,
                                           b.getI64IntegerAttr(workspaceBytes));
    base = func::CallOp::create(b, f.getLoc(), workspaceFnOf(m),
                                ValueRange{key, bytes})
               .getResult(0);
  }
  // The views of the workspace that replace the buffers.
  DenseSet<Value> inWorkspace;
  // The planned buffer `v` as a memref descriptor at base + its offset
  // with its run-time sizes (`dynamicSizes`, index) and row-major strides.
  auto workspaceView = [&](Value v, MemRefType type, ValueRange dynamicSizes,
                           Location loc) -> Value {
    int64_t offset = planned[plannedIndex.lookup(v)].offset;
    Value at = base;
    if (offset)
      at = LLVM::GEPOp::create(
          b, loc, ptr, b.getI8Type(), base,
          ArrayRef<LLVM::GEPArg>{Value(LLVM::ConstantOp::create(
              b, loc, i64, b.getI64IntegerAttr(offset)))});
    SmallVector<Value> sizes;
    unsigned k = 0;
    for (int64_t d = 0; d < type.getRank(); ++d)
      sizes.push_back(
          type.isDynamicDim(d)
              ? Value(
                    arith::IndexCastOp::create(b, loc, i64, dynamicSizes[k++]))
              : Value(LLVM::ConstantOp::create(
                    b, loc, i64, b.getI64IntegerAttr(type.getDimSize(d)))));
    Value view = descriptorView(b, loc, type, at, sizes);
    inWorkspace.insert(view);
    return view;
  };
  // Id checks: their reads and calls run after the synchronisation, on
  // host copies (freed after them) of the device values.
  SmallVector<Operation *> deferred;
  SmallVector<Value> checkCopies;
  // Host memory used by device code: a device copy replaces every use.
  auto upload = [&](Value host, Location loc) -> LogicalResult {
    auto type = cast<MemRefType>(host.getType());
    if (!type.getLayout().isIdentity())
      return emitError(loc) << "buffer of type " << host.getType()
                            << " has a strided layout: the GPU lowering "
                               "copies identity layouts only";
    // Run-time sizes: the host buffer's, each at most the bound.
    SmallPtrSet<Operation *, 4> dims;
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d)) {
        auto dim = memref::DimOp::create(b, loc, host, d);
        dims.insert(dim);
        sizes.push_back(dim);
        dynamicInputs = true;
      }
    // Its place in the workspace (the plan took it at the bound).
    Value device = workspaceView(host, type, sizes, loc);
    auto copy = gpu::MemcpyOp::create(b, loc, tokenType, {token}, device, host);
    token = copy.getAsyncToken();
    host.replaceUsesWithIf(device, [&](OpOperand &use) {
      return use.getOwner() != copy && !isHostInputRead(use.getOwner()) &&
             !dims.contains(use.getOwner());
    });
    uploaded += planned[plannedIndex.lookup(host)].bytes;
    return success();
  };
  // Memory that is the same at every call (weights, constants): a device
  // copy made once by the runtime (loom_cuda_mgpu_resident, keyed by the
  // host address) and never freed here, as a memref descriptor over the
  // returned device address.
  auto makeResident = [&](Value host, Location loc) -> LogicalResult {
    int64_t bytes = bytesOf(host.getType());
    auto type = cast<MemRefType>(host.getType());
    if (bytes < 0 || !type.getLayout().isIdentity())
      return emitError(loc) << "buffer of type " << host.getType()
                            << " has a dynamic shape or a strided layout: the "
                               "GPU lowering needs static shapes";
    Operation *aligned = nullptr;
    Value device = callResident(b, loc, host, bytes, &aligned);
    SmallVector<int64_t> layout = type.getStridesAndOffset().first;
    SmallVector<Value> sizes, strides;
    for (int64_t i = 0; i < type.getRank(); ++i) {
      sizes.push_back(LLVM::ConstantOp::create(
          b, loc, i64, b.getI64IntegerAttr(type.getDimSize(i))));
      strides.push_back(LLVM::ConstantOp::create(
          b, loc, i64, b.getI64IntegerAttr(layout[size_t(i)])));
    }
    Value view = descriptorView(b, loc, type, device, sizes, strides);
    host.replaceAllUsesExcept(view, aligned);
    residentBytes += bytes;
    return success();
  };
  // The CPU runtime's index error (declared by the CPU lowering of the
  // check this replaces; declared here when it was dropped).
  auto indexErrorFn = [&]() -> StringRef {
    ModuleOp m = f->getParentOfType<ModuleOp>();
    StringRef name = "loom_rt_index_error";
    if (!m.lookupSymbol<func::FuncOp>(name)) {
      OpBuilder mb(m.getBodyRegion());
      mb.setInsertionPointToEnd(m.getBody());
      func::FuncOp::create(
          mb, m.getLoc(), name,
          mb.getFunctionType({ptr, ptr, i64, i64, i64, ptr}, {}))
          .setPrivate();
    }
    return name;
  };
  // A state argument (a KV cache, `loom.state`): the device copy of the
  // caller's buffer that the runtime keeps for the life of the bundle
  // (loom_cuda_mgpu_state: made zero-filled at the first call, keyed by
  // the host address), written in place by the kernels, never copied in
  // or out per call. Its context dimension is the caller's: the size is
  // read from the host descriptor; the plan counts it per position.
  int64_t statePerPosition = 0;
  auto makeState = [&](BlockArgument host, Location loc) -> LogicalResult {
    auto type = cast<MemRefType>(host.getType());
    int64_t elem = int64_t(llvm::divideCeil(type.getElementTypeBitWidth(), 8));
    int64_t perPosition = elem;
    unsigned dynamic = 0;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (type.isDynamicDim(d))
        ++dynamic;
      else
        perPosition *= type.getDimSize(d);
    }
    if (!type.getLayout().isIdentity() || dynamic > 1)
      return emitError(loc)
             << "state argument " << host.getArgNumber() << " of type " << type
             << ": the device KV cache needs a contiguous buffer whose only "
                "dynamic dimension is the context";
    Value bytes = arith::ConstantIndexOp::create(b, loc, elem);
    SmallVector<Value> sizes;
    llvm::SmallPtrSet<Operation *, 4> onHost;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      Value size;
      if (type.isDynamicDim(d)) {
        size = memref::DimOp::create(b, loc, host, d);
        onHost.insert(size.getDefiningOp());
      } else {
        size = arith::ConstantIndexOp::create(b, loc, type.getDimSize(d));
      }
      sizes.push_back(arith::IndexCastOp::create(b, loc, b.getI64Type(), size));
      bytes = arith::MulIOp::create(b, loc, bytes, size);
    }
    Type ptrType = LLVM::LLVMPointerType::get(ctx);
    auto aligned = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, host);
    Value address = LLVM::IntToPtrOp::create(
        b, loc, ptrType,
        Value(arith::IndexCastOp::create(b, loc, b.getI64Type(), aligned)));
    Value size = arith::IndexCastOp::create(b, loc, b.getI64Type(), bytes);
    Value device =
        func::CallOp::create(b, loc, stateFnOf(f->getParentOfType<ModuleOp>()),
                             ValueRange{address, size})
            .getResult(0);
    // Row-major strides of the caller's sizes.
    Value view = descriptorView(b, loc, type, device, sizes);
    onHost.insert(aligned);
    bounds.stateViews.insert(view);
    host.replaceUsesWithIf(
        view, [&](OpOperand &use) { return !onHost.contains(use.getOwner()); });
    statePerPosition += perPosition;
    return success();
  };
  for (BlockArgument arg : f.getArguments()) {
    if (!isa<MemRefType>(arg.getType()) || arg.use_empty())
      continue;
    LogicalResult done = success();
    if (isStateArg(f, arg.getArgNumber()))
      done = makeState(arg, f.getLoc());
    else if (isWeightArg(f, arg.getArgNumber()))
      done = makeResident(arg, f.getLoc());
    else if (uploads(arg))
      done = upload(arg, f.getLoc());
    else
      continue; // read on the host only: no device copy
    if (failed(done))
      return failure();
  }

  for (Operation &op : llvm::make_early_inc_range(body)) {
    Location loc = op.getLoc();
    b.setInsertionPoint(&op);
    if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
      if (auto g = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
              global, global.getNameAttr()))
        globals.insert(g);
      b.setInsertionPointAfter(&op);
      if (failed(makeResident(global.getResult(), loc)))
        return failure();
    } else if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      // Its place in the workspace.
      Value view = workspaceView(alloc.getResult(), alloc.getType(),
                                 alloc.getDynamicSizes(), loc);
      alloc.replaceAllUsesWith(view);
      alloc.erase();
    } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      // The buffer freed: through views to its allocation. A buffer of the
      // workspace is not freed.
      Value freed = dealloc.getMemref();
      while (Operation *def = freed.getDefiningOp()) {
        if (auto meta = dyn_cast<memref::ExtractStridedMetadataOp>(def))
          freed = meta.getSource();
        else if (auto view = dyn_cast<ViewLikeOpInterface>(def))
          freed = view.getViewSource();
        else
          break;
      }
      if (!inWorkspace.contains(freed))
        return dealloc.emitError()
               << "frees a buffer that is not one of the entry's "
                  "allocations: the GPU memory plan places every buffer of "
                  "a call in its workspace";
      dealloc.erase();
    } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
      auto src = cast<MemRefType>(copy.getSource().getType());
      auto dst = cast<MemRefType>(copy.getTarget().getType());
      if (!src.getLayout().isIdentity() || !dst.getLayout().isIdentity())
        return copy.emitError() << "strided copy has no GPU lowering yet";
      token = gpu::MemcpyOp::create(b, loc, tokenType, {token},
                                    copy.getTarget(), copy.getSource())
                  .getAsyncToken();
      copy.erase();
    } else if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
      auto async = gpu::LaunchFuncOp::create(
          b, loc, launch.getKernelAttr(), launch.getGridSizeOperandValues(),
          launch.getBlockSizeOperandValues(),
          launch.getDynamicSharedMemorySize(), launch.getKernelOperands(),
          tokenType, {token});
      token = async.getAsyncToken();
      launch.erase();
    } else if (auto call = dyn_cast<func::CallOp>(op);
               call && call.getCallee() == loom::kGpuGemmFn) {
      // The cuBLAS call goes on the program's stream: gpu-to-llvm lowers
      // the token to that stream, and the cast to it.
      Value stream =
          UnrealizedConversionCastOp::create(b, loc, ptr, token).getResult(0);
      call->setOperand(0, stream);
    } else if (isIndexCheckRead(&op)) {
      auto load = cast<memref::LoadOp>(op);
      auto type = cast<MemRefType>(load.getMemRef().getType());
      if (bytesOf(type) < 0 || !type.getLayout().isIdentity())
        return load.emitError()
               << "id check of type " << type << " needs a static shape";
      auto host = memref::AllocOp::create(b, loc, type);
      token = gpu::MemcpyOp::create(b, loc, tokenType, {token}, host,
                                    load.getMemRef())
                  .getAsyncToken();
      load.getMemrefMutable().assign(host);
      checkCopies.push_back(host);
      deferred.push_back(load);
    } else if (auto call = dyn_cast<func::CallOp>(op);
               call && call.getCallee() == loom::kGpuIndexCheckFn) {
      deferred.push_back(call);
    } else if (op.hasAttr(loom::kGpuHostSyncAttr)) {
      // A collective on device buffers (loom-gpu-sync-collectives): the
      // stream's work done before it, a new chain after it.
      gpu::WaitOp::create(b, loc, Type(), {token});
      b.setInsertionPointAfter(&op);
      token = gpu::WaitOp::create(b, loc, tokenType, {}).getAsyncToken();
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      SmallVector<Value> results(ret.getOperands());
      DenseMap<Value, Value> hostOf;
      for (Value &v : results) {
        auto type = dyn_cast<MemRefType>(v.getType());
        if (!type)
          continue;
        if (Value h = hostOf.lookup(v)) {
          v = h;
          continue;
        }
        // A run-time size: the device buffer's.
        SmallVector<Value> sizes;
        for (int64_t d = 0; d < type.getRank(); ++d)
          if (type.isDynamicDim(d))
            sizes.push_back(memref::DimOp::create(b, loc, v, d));
        auto host = memref::AllocOp::create(b, loc, type, sizes,
                                            b.getI64IntegerAttr(64));
        token = gpu::MemcpyOp::create(b, loc, tokenType, {token}, host, v)
                    .getAsyncToken();
        hostOf[v] = host;
        v = host;
      }
      gpu::WaitOp::create(b, loc, Type(), {token});
      for (Operation *d : deferred) {
        d->moveBefore(ret);
        auto check = dyn_cast<func::CallOp>(d);
        if (!check)
          continue;
        // (ctx, input, position, id, lo, rows, op): the CPU's error when
        // a position was recorded.
        b.setInsertionPoint(check);
        Value bad = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::sge, check.getOperand(2),
            arith::ConstantIntOp::create(b, loc, i64, 0));
        auto ifOp = scf::IfOp::create(b, loc, bad, /*withElse=*/false);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
        func::CallOp::create(
            b, loc, indexErrorFn(), TypeRange{},
            ValueRange{check.getOperand(0), check.getOperand(1),
                       check.getOperand(3), check.getOperand(4),
                       check.getOperand(5), check.getOperand(6)});
        check.erase();
        b.setInsertionPoint(ret);
      }
      for (Value host : checkCopies)
        memref::DeallocOp::create(b, loc, host);
      ret->setOperands(results);
    }
  }
  // Every buffer of a call is in the workspace (the device copies of the
  // inputs too): the peak is the workspace and the weights, exact at the
  // bound.
  f->setAttr(loom::kGpuPeakBytesAttr,
             b.getI64IntegerAttr(workspaceBytes + residentBytes));
  f->setAttr(loom::kGpuWorkspaceBytesAttr, b.getI64IntegerAttr(workspaceBytes));
  if (dynamicInputs)
    f->setAttr(loom::kGpuMaxDimAttr, b.getI64IntegerAttr(maxDim));
  f->setAttr(loom::kGpuUploadBytesAttr, b.getI64IntegerAttr(uploaded));
  f->setAttr(loom::kGpuResidentBytesAttr, b.getI64IntegerAttr(residentBytes));
  if (statePerPosition)
    f->setAttr(loom::kGpuStateBytesPerPositionAttr,
               b.getI64IntegerAttr(statePerPosition));
  return success();
}

} // namespace
