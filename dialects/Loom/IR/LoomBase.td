//===- LoomBase.td - base classes of the loom dialect ------*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMBASE_TD
#define LOOM_DIALECT_LOOM_IR_LOOMBASE_TD

include "dialects/Loom/IR/LoomDialect.td"
include "mlir/IR/AttrTypeBase.td"

class Loom_Op<string mnemonic, list<Trait> traits = []>
    : Op<Loom_Dialect, mnemonic, traits>;

class Loom_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Loom_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

class Loom_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Loom_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

// A signed axis: negative values count from the end (numpy, ONNX). Stored
// as an i64 IntegerAttr (printed `axis = -1`), read back as int64_t;
// loom::normAxis (include/loom/Support/Axis.h) is its one normalisation.
def Loom_AxisAttr : TypedSignlessIntegerAttrBase<I64, "int64_t",
    "signed axis (negative: counted from the end)"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

// Tensors the compute ops work on.
def Loom_Tensor : RankedTensorOf<[AnyFloat, AnySignlessInteger, I1]>;
def Loom_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Loom_IndexTensor : RankedTensorOf<[I32, I64]>;
def Loom_BoolTensor : RankedTensorOf<[I1]>;

#endif // LOOM_DIALECT_LOOM_IR_LOOMBASE_TD
