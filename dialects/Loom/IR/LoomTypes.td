//===- LoomTypes.td - types of the loom dialect ------------*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMTYPES_TD
#define LOOM_DIALECT_LOOM_IR_LOOMTYPES_TD

include "dialects/Loom/IR/LoomAttrs.td"

def Loom_QTensorType : Loom_Type<"QTensor", "qtensor"> {
  let summary = "a block-quantized tensor";
  let description = [{
    A tensor of logical shape `shape` stored block-wise as described by its
    `#loom.quant` scheme; blocks run along the innermost dimension.

    ```mlir
    !loom.qtensor<1536x576, #loom.quant<q4_1>>
    ```

    **Constraints:**
    - rank at least 1;
    - the innermost dimension is static and a multiple of the block size.
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t", "logical shape">:$shape,
    "::loom::QuantAttr":$quant);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getShape().size(); }
    /// Number of blocks along the innermost dimension.
    int64_t getBlocksPerRow() const;
    /// The f32 tensor type this dequantizes to.
    ::mlir::RankedTensorType getDequantizedType() const;
    /// The bytes as stored: i8 rows of (K / block) blocks of
    /// getBlockBytes() each ([..., rowBytes]), for the GGUF formats and
    /// Loom's int4/int8 alike (docs/QUANTIZE.md: scale, [min], values).
    ::mlir::RankedTensorType getStorageType() const;
  }];
}

def Loom_AnyTensor : AnyTypeOf<[AnyRankedTensor, Loom_QTensorType]>;

#endif // LOOM_DIALECT_LOOM_IR_LOOMTYPES_TD
