//===- GpuDeviceIndexCheck.cpp - index checks on the device ---------------===//
//
// The CPU lowering checks an embedding's ids and a loom.gather's run-time
// indices with a host loop before any element is read (loom_rt_index_error
// on the first id out of range; a gather's constant indices are checked at
// compile time and have no loop). On the GPU the ids are a device buffer,
// so the loop would read device memory from the host. This pass replaces
// the loop by:
//  - a kernel that finds the first id out of range (its position and value,
//    -1 when all are in range) into two one-element buffers;
//  - the ids clamped for the gather (an id out of range reads row or index
//    0), so that no kernel reads outside the table or input;
//  - a `loom_gpu_index_check` call on the two values, which
//    loom-gpu-host-program turns into a copy of the 16 bytes back to the
//    host and, after the step's synchronisation, the CPU's
//    loom_rt_index_error (the same one-line error) when one was bad.
// The outputs of a step with a bad id are never returned: the call fails.
//
//===----------------------------------------------------------------------===//

#include "passes/Gpu/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "loom-gpu-device-index-check"

namespace loom {
#define GEN_PASS_DEF_GPUDEVICEINDEXCHECKPASS
#include "passes/Gpu/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

constexpr StringLiteral kIndexErrorFn = "loom_rt_index_error";

/// The outermost scf.for around `op`.
scf::ForOp outermostLoop(Operation *op) {
  scf::ForOp loop;
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    if (auto f = dyn_cast<scf::ForOp>(p))
      loop = f;
  return loop;
}

/// The host's check after the step (`loom_gpu_index_check`, which
/// loom-gpu-host-program calls once the stream is synchronised): `pos` is
/// the position of the first bad index (-1: none), `bad` its value, the
/// other arguments those of the CPU's `loom_rt_index_error` call.
void callHostCheck(OpBuilder &b, Location loc, func::CallOp call, Value pos,
                   Value bad, Value lo, Value rows) {
  auto m = call->getParentOfType<ModuleOp>();
  auto checkFn = m.lookupSymbol<func::FuncOp>(loom::kGpuIndexCheckFn);
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  Type i64 = b.getI64Type();
  if (!checkFn) {
    OpBuilder mb(m.getBodyRegion());
    mb.setInsertionPointToEnd(m.getBody());
    checkFn = func::FuncOp::create(
        mb, m.getLoc(), loom::kGpuIndexCheckFn,
        mb.getFunctionType({ptr, ptr, i64, i64, i64, i64, ptr}, {}));
    checkFn.setPrivate();
  }
  func::CallOp::create(b, loc, checkFn,
                       ValueRange{call.getOperand(0), call.getOperand(1), pos,
                                  bad, lo, rows, call.getOperand(5)});
}

/// Rewrites one check loop (around `call`); failure with a diagnostic.
LogicalResult rewriteCheck(func::CallOp call) {
  // The CPU's check: a loop over the ids, or (one id: canonicalization
  // drops a loop of one trip) an scf.if on the id read before it.
  Operation *root = outermostLoop(call);
  tensor::ExtractOp read;
  // Host values the check leaves dead once it is gone (the one-id form:
  // its condition, and through it the id's read; with negative ids, as a
  // gather's, the condition reads `id - lo`).
  llvm::SetVector<Operation *> dead;
  if (root) {
    root->walk([&](tensor::ExtractOp e) { read = e; });
  } else if (auto ifOp = call->getParentOfType<scf::IfOp>()) {
    while (auto outer = ifOp->getParentOfType<scf::IfOp>())
      ifOp = outer;
    root = ifOp;
    Value id = call.getOperand(2);
    if (auto ext = id.getDefiningOp<arith::ExtSIOp>())
      id = ext.getIn();
    read = id.getDefiningOp<tensor::ExtractOp>();
    if (Operation *cond = ifOp.getCondition().getDefiningOp())
      dead.insert(cond);
  }
  // A constant index checked against a run-time size (SmolLM2's decode:
  // the last position, -1, of a run-time sequence length): the index and
  // the bound are both host values, so the host decides, and reports after
  // the step as a device check does (the gather reads the constant index;
  // out of range only for an empty dimension, refused by the check).
  if (root && !read && isa<scf::IfOp>(root) &&
      getConstantIntValue(call.getOperand(2)) &&
      cast<scf::IfOp>(root).getElseRegion().empty()) {
    auto ifOp = cast<scf::IfOp>(root);
    for (unsigned i = 0; i < call.getNumOperands(); ++i)
      if (!call.getOperand(i).getParentRegion()->isAncestor(
              root->getParentRegion()))
        return call.emitError() << "index check arguments defined in its if";
    OpBuilder b(root);
    Location loc = call.getLoc();
    Type i64 = b.getI64Type();
    // (Created in order: function arguments are evaluated in no fixed one.)
    Value zero = arith::ConstantIntOp::create(b, loc, i64, 0);
    Value none = arith::ConstantIntOp::create(b, loc, i64, -1);
    Value pos =
        arith::SelectOp::create(b, loc, ifOp.getCondition(), zero, none);
    callHostCheck(b, loc, call, pos, call.getOperand(2), call.getOperand(3),
                  call.getOperand(4));
    root->erase();
    return success();
  }
  if (!root || !read)
    return call.emitError() << "index check not in the form of the CPU "
                               "lowering (a loop reading the ids)";
  Value ids = read.getTensor();
  auto idType = dyn_cast<RankedTensorType>(ids.getType());
  std::optional<int64_t> lo = getConstantIntValue(call.getOperand(3));
  std::optional<int64_t> rows = getConstantIntValue(call.getOperand(4));
  if (!idType || !lo || !rows)
    return call.emitError()
           << "the dimension the indices select along needs a static size "
              "on the GPU";
  // An empty dimension: every index is out of range, and the clamped index
  // 0 would still read outside it, so every run would fail.
  if (*rows == 0 && (!idType.hasStaticShape() || idType.getNumElements() > 0))
    return call.emitError()
           << "indices select along an empty dimension (size 0): every "
              "index is out of range";
  for (unsigned i : {0u, 1u, 5u})
    if (!call.getOperand(i).getParentRegion()->isAncestor(
            root->getParentRegion()))
      return call.emitError() << "index check arguments defined in its loop";

  OpBuilder b(root);
  Location loc = call.getLoc();
  Type i64 = b.getI64Type();
  Type idElem = idType.getElementType();
  int64_t rank = idType.getRank();
  // The ids' sizes: constants, or run-time sizes read before the check.
  SmallVector<Value> idDims, idDynDims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!idType.isDynamicDim(d)) {
      idDims.push_back(
          arith::ConstantIndexOp::create(b, loc, idType.getDimSize(d)));
      continue;
    }
    idDims.push_back(tensor::DimOp::create(b, loc, ids, d));
    idDynDims.push_back(idDims.back());
  }
  // id in [lo, rows) <=> (id - lo) <u (rows - lo), as on the CPU.
  auto isBad = [&](OpBuilder &bb, Location l, Value id) -> Value {
    Value wide = id.getType() == i64
                     ? id
                     : arith::ExtSIOp::create(bb, l, i64, id).getResult();
    Value shifted = arith::SubIOp::create(
        bb, l, wide, arith::ConstantIntOp::create(bb, l, i64, *lo));
    return arith::CmpIOp::create(
        bb, l, arith::CmpIPredicate::uge, shifted,
        arith::ConstantIntOp::create(bb, l, i64, *rows - *lo));
  };

  // The first bad id: one thread over all ids (an outer unit dimension
  // makes the loop nest a kernel rather than host code).
  auto oneType = RankedTensorType::get({1}, i64);
  Value minusOne = arith::ConstantIntOp::create(b, loc, i64, -1);
  // One fill each: a shared one would be copied on the device.
  auto minusOnes = [&]() -> Value {
    return linalg::FillOp::create(b, loc, minusOne,
                                  ValueRange{tensor::EmptyOp::create(
                                      b, loc, oneType.getShape(), i64)})
        .getResult(0);
  };
  SmallVector<AffineExpr> idExprs;
  for (int64_t d = 0; d < rank; ++d)
    idExprs.push_back(b.getAffineDimExpr(d + 1));
  MLIRContext *ctx = b.getContext();
  AffineMap idMap = AffineMap::get(rank + 1, 0, idExprs, ctx);
  AffineMap outMap = AffineMap::get(rank + 1, 0, b.getAffineDimExpr(0));
  SmallVector<utils::IteratorType> iters(rank + 1,
                                         utils::IteratorType::reduction);
  iters[0] = utils::IteratorType::parallel;
  auto first = linalg::GenericOp::create(
      b, loc, TypeRange{oneType, oneType}, ValueRange{ids},
      ValueRange{minusOnes(), minusOnes()},
      ArrayRef<AffineMap>{idMap, outMap, outMap}, iters,
      [&](OpBuilder &bb, Location l, ValueRange a) {
        // Row-major position of this id.
        Value pos = arith::ConstantIndexOp::create(bb, l, 0);
        for (int64_t d = 0; d < rank; ++d) {
          Value i = linalg::IndexOp::create(bb, l, d + 1);
          pos = arith::AddIOp::create(
              bb, l, arith::MulIOp::create(bb, l, pos, idDims[d]), i);
        }
        Value pos64 = arith::IndexCastOp::create(bb, l, i64, pos);
        Value none =
            arith::CmpIOp::create(bb, l, arith::CmpIPredicate::slt, a[1],
                                  arith::ConstantIntOp::create(bb, l, i64, 0));
        Value take = arith::AndIOp::create(bb, l, none, isBad(bb, l, a[0]));
        Value id = a[0].getType() == i64
                       ? a[0]
                       : arith::ExtSIOp::create(bb, l, i64, a[0]).getResult();
        linalg::YieldOp::create(
            bb, l,
            ValueRange{arith::SelectOp::create(bb, l, take, pos64, a[1]),
                       arith::SelectOp::create(bb, l, take, id, a[2])});
      });

  // The ids the gather reads: out-of-range ones read row 0.
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  auto clamp = linalg::GenericOp::create(
      b, loc, TypeRange{idType}, ValueRange{ids},
      ValueRange{tensor::EmptyOp::create(b, loc, idType.getShape(), idElem,
                                         idDynDims)},
      ArrayRef<AffineMap>{identity, identity},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &bb, Location l, ValueRange a) {
        Value zero = arith::ConstantOp::create(bb, l, bb.getZeroAttr(idElem));
        linalg::YieldOp::create(bb, l,
                                ValueRange{arith::SelectOp::create(
                                    bb, l, isBad(bb, l, a[0]), zero, a[0])});
      });

  // The host's check of the two values, after the step.
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value pos = tensor::ExtractOp::create(b, loc, first.getResult(0), c0);
  Value bad = tensor::ExtractOp::create(b, loc, first.getResult(1), c0);
  // (In this order: function arguments are evaluated in no fixed order.)
  Value loValue = arith::ConstantIntOp::create(b, loc, i64, *lo);
  Value rowsValue = arith::ConstantIntOp::create(b, loc, i64, *rows);
  callHostCheck(b, loc, call, pos, bad, loValue, rowsValue);
  // (Sizes read from the ids stay: the clamped ids have the same.)
  ids.replaceUsesWithIf(clamp.getResult(0), [&](OpOperand &use) {
    Operation *user = use.getOwner();
    return user != first && user != clamp && user != read &&
           !isa<tensor::DimOp>(user);
  });
  root->erase();
  // Each dead op, then what only it used (an op is erased after its last
  // user, so none is visited after its erasure).
  while (!dead.empty()) {
    Operation *op = dead.pop_back_val();
    if (!op->use_empty() || !isMemoryEffectFree(op))
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        dead.insert(def);
    op->erase();
  }
  return success();
}

struct GpuDeviceIndexCheckPass
    : loom::impl::GpuDeviceIndexCheckPassBase<GpuDeviceIndexCheckPass> {
  void runOnOperation() override {
    SmallVector<func::CallOp> calls;
    getOperation().walk([&](func::CallOp c) {
      if (c.getCallee() == kIndexErrorFn &&
          !c->getParentOfType<gpu::GPUModuleOp>())
        calls.push_back(c);
    });
    for (func::CallOp c : calls)
      if (failed(rewriteCheck(c)))
        return signalPassFailure();
  }
};

} // namespace
