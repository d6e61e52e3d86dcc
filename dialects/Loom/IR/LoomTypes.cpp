//===- LoomTypes.cpp - types of the loom dialect --------------------------===//

#include "dialects/Loom/IR/LoomDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace loom;

#define GET_TYPEDEF_CLASSES
#include "dialects/Loom/IR/LoomOpsTypes.cpp.inc"

void LoomDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/Loom/IR/LoomOpsTypes.cpp.inc"
      >();
}

Type QTensorType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  QuantAttr quant;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/true,
                                /*withTrailingX=*/false) ||
      parser.parseComma() || parser.parseAttribute(quant) ||
      parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); }, parser.getContext(),
                    shape, quant);
}

void QTensorType::print(AsmPrinter &printer) const {
  printer << '<';
  llvm::interleave(
      getShape(), printer,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          printer << '?';
        else
          printer << d;
      },
      "x");
  printer << ", ";
  printer.printAttribute(getQuant());
  printer << '>';
}

LogicalResult QTensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  ArrayRef<int64_t> shape, QuantAttr quant) {
  if (!quant)
    return emitError() << "quantized tensor needs a #loom.quant scheme";
  if (shape.empty())
    return emitError() << "quantized tensor must have rank at least 1";
  for (int64_t d : shape)
    if (!ShapedType::isDynamic(d) && d < 0)
      return emitError() << "quantized tensor dimensions must be >= 0";
  int64_t k = shape.back();
  if (ShapedType::isDynamic(k))
    return emitError() << "the innermost dimension of a quantized tensor "
                       << "must be static (blocks run along it)";
  if (k % quant.getBlockSize() != 0)
    return emitError() << "innermost dimension " << k
                       << " is not a multiple of the quantization block "
                       << quant.getBlockSize()
                       << "; pad K or choose a block size that divides it";
  return success();
}

int64_t QTensorType::getBlocksPerRow() const {
  return getShape().back() / getQuant().getBlockSize();
}

RankedTensorType QTensorType::getDequantizedType() const {
  return RankedTensorType::get(getShape(), Float32Type::get(getContext()));
}

RankedTensorType QTensorType::getStorageType() const {
  SmallVector<int64_t> shape(getShape());
  shape.back() = getBlocksPerRow() * getQuant().getBlockBytes();
  return RankedTensorType::get(shape, IntegerType::get(getContext(), 8));
}
