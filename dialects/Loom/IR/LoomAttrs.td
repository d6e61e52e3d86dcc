//===- LoomAttrs.td - attributes of the loom dialect -------*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMATTRS_TD
#define LOOM_DIALECT_LOOM_IR_LOOMATTRS_TD

include "dialects/Loom/IR/LoomBase.td"
include "dialects/Loom/IR/LoomEnums.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

def Loom_MeshAttr : Loom_Attr<"Mesh", "mesh"> {
  let summary = "a logical device mesh: named axes with sizes";
  let description = [{
    A logical mesh of devices, row-major over its axes: the global rank of the
    device at coordinates (c0, c1, ...) is c0*s1*s2... + c1*s2... + ...

    ```mlir
    #loom.mesh<dp = 2, pp = 2, tp = 4>
    ```

    **Constraints:**
    - at least one axis, at most 16;
    - axis names are non-empty and unique;
    - every size is at least 1.
  }];
  let parameters = (ins
    ArrayRefParameter<"::mlir::StringAttr", "axis names">:$axisNames,
    ArrayRefParameter<"int64_t", "axis sizes">:$axisSizes);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of devices of the mesh.
    int64_t getNumDevices() const;
    /// Index of the axis named `name`, or std::nullopt.
    std::optional<unsigned> getAxisIndex(::llvm::StringRef name) const;
    /// Size of the axis named `name`; the axis must exist.
    int64_t getAxisSize(::llvm::StringRef name) const;
    unsigned getNumAxes() const { return getAxisNames().size(); }
  }];
}

def Loom_ShardingAttr : Loom_Attr<"Sharding", "sharding"> {
  let summary = "how a tensor is split over the axes of a mesh";
  let description = [{
    For each dimension of the tensor, the list of mesh axes it is split over
    (major to minor); an empty list means the dimension is replicated. Axes in
    `partial` hold partial sums: the value is the sum over those axes of the
    per-device values (the state after a row-split matmul, before its
    all-reduce). Axes used nowhere replicate the tensor.

    ```mlir
    // rows split over tp, columns replicated, partial sums over dp
    #loom.sharding<@mesh, [{tp}, {} ], partial = {dp}>
    ```

    **Constraints:**
    - `@mesh` names a `loom.mesh` (checked where the attribute is used);
    - every axis is an axis of that mesh and is used at most once;
    - the rank matches the annotated tensor, and each static dimension is
      divisible by the product of the sizes of its axes (checked where used).
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$mesh,
    "::mlir::ArrayAttr":$dims,
    "::mlir::ArrayAttr":$partial);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    unsigned getRank() const { return getDims().size(); }
    /// The axes that dimension `dim` is split over.
    ::llvm::SmallVector<::llvm::StringRef> getDimAxes(unsigned dim) const;
    ::llvm::SmallVector<::llvm::StringRef> getPartialAxes() const;
    /// True when no dimension is split and no axis is partial.
    bool isReplicated() const;
  }];
}

def Loom_StageAttr : Loom_Attr<"Stage", "stage"> {
  let summary = "the pipeline stage an op belongs to";
  let description = [{
    ```mlir
    %0 = loom.matmul %x, %w {loom.stage = #loom.stage<1>} : ...
    ```

    **Constraints:**
    - the index is non-negative.
  }];
  let parameters = (ins "int64_t":$index);
  let assemblyFormat = "`<` $index `>`";
  let genVerifyDecl = 1;
}

def Loom_QuantAttr : Loom_Attr<"Quant", "quant"> {
  let summary = "a block-wise quantization scheme";
  let description = [{
    Weights are stored in blocks of `block` consecutive elements along the
    innermost (K) dimension, each with a scale (and for `min` a minimum, for
    `zero_point` an integer zero point): x ≈ s × q.

    ```mlir
    #loom.quant<q4_0>                                   // GGUF Q4_0 blocks
    #loom.quant<int4, block = 128, mode = symmetric, scale = f16>
    ```

    GGUF formats are fixed by the file format: `q4_0` (block 32, f16 scale,
    zero point 8), `q4_1` (block 32, f16 scale and min), `q8_0` (block 32,
    f16 scale, symmetric). Loom's own `int4` and `int8` take block 32, 64 or
    128 and any mode.

    **Constraints:**
    - GGUF formats keep their fixed block size, mode and f16 scale;
    - `int4`/`int8` blocks are 32, 64 or 128;
    - the scale type is f16, bf16 or f32.
  }];
  let parameters = (ins
    EnumParameter<Loom_QuantFormat>:$format,
    "int64_t":$blockSize,
    EnumParameter<Loom_QuantMode>:$mode,
    "::mlir::Type":$scaleType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bits per quantized value (4 or 8).
    unsigned getBits() const;
    /// Bytes one block occupies in storage (values, scale, min/zero point).
    int64_t getBlockBytes() const;
    /// True for the GGUF block formats kept as they are.
    bool isGguf() const;
  }];
}

def Loom_ExternAttr : Loom_Attr<"Extern", "extern"> {
  let summary = "where a weight's bytes live outside the IR";
  let description = [{
    The file and the byte offset of a weight in external storage; the element
    type (or block format) and the shape come from the `loom.weight` result
    type. The weight store memory-maps the file, it never copies it whole.

    ```mlir
    #loom.extern<"model.gguf", offset = 736>
    ```

    **Constraints:**
    - the file name is non-empty and the offset non-negative.
  }];
  let parameters = (ins "::mlir::StringAttr":$file, "int64_t":$offset);
  let assemblyFormat = "`<` $file `,` `offset` `=` $offset `>`";
  let genVerifyDecl = 1;
}

def Loom_SplitAttr : Loom_Attr<"Split", "split"> {
  let summary = "how a weight is loaded split over the axes of a mesh";
  let description = [{
    Set by the partitioner (`loom-insert-explicit-reshards`) as `loom.split`
    on a `loom.weight` that each rank loads only its block of: for each
    dimension the mesh axes it is split over (major to minor, as in
    `#loom.sharding`), and the global shape of the weight (its type is the
    per-rank block). `loom-prepare-entry-points` carries it into the
    weight argument's `#loom.weight`, the bundle writer into the manifest.

    ```mlir
    %w = loom.weight "w" from <"w.bin", offset = 0>
        {loom.split = #loom.split<[{tp}, {} ], shape = [8, 4]>} : tensor<4x4xf32>
    ```

    **Constraints:**
    - one list of axes per dimension of the global shape;
    - every axis is a non-empty name, used at most once;
    - every global size is at least 1.
  }];
  let parameters = (ins
    "::mlir::ArrayAttr":$axes,
    ArrayRefParameter<"int64_t", "global shape">:$shape);
  let assemblyFormat = "`<` custom<AxisLists>($axes) `,` `shape` `=` `[` $shape `]` `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    unsigned getRank() const { return getShape().size(); }
    /// The axes that dimension `dim` is split over.
    ::llvm::SmallVector<::llvm::StringRef> getDimAxes(unsigned dim) const;
  }];
}

def Loom_InterleaveAttr : Loom_Attr<"Interleave", "interleave"> {
  let summary = "the interleaved layout of a quantized weight argument";
  let description = [{
    Recorded by `loom-prepare-entry-points` in a weight argument's
    `#loom.weight` when the kernels read its blocks interleaved
    (docs/QUANTIZE.md): `rows` rows' blocks side by side, each block of
    `block_bytes` bytes cut into `fields` leading fields of `field_bytes`
    bytes and then units of `unit_bytes` bytes. `loom-run` repacks the
    weight by it when it loads it.

    ```mlir
    #loom.interleave<rows = 8, block_bytes = 18, fields = 1, field_bytes = 2, unit_bytes = 4>
    ```

    **Constraints:**
    - all five sizes are at least 1.
  }];
  let parameters = (ins "int64_t":$rows, "int64_t":$block_bytes,
                        "int64_t":$fields, "int64_t":$field_bytes,
                        "int64_t":$unit_bytes);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

// An attribute parameter printed with its dialect prefix (#loom.extern<...>
// rather than <...>), so that a #loom.weight reads on its own.
class Loom_OptionalQualifiedParameter<string type, string desc = "">
    : OptionalParameter<type, desc> {
  let printer = "$_printer.printAttribute($_self)";
}

def Loom_WeightAttr : Loom_Attr<"Weight", "weight"> {
  let summary = "an outlined weight argument of an entry point";
  let description = [{
    The value of `loom.weight` on an entry point's argument that holds an
    outlined weight (set by `loom-prepare-entry-points`, copied onto the
    layers `loom-outline-repeated-layers` outlines, read by the lowering and
    the bundle writer): the weight's name, where its bytes live
    (`#loom.extern`, none for a weight without storage), how it is loaded
    split (`#loom.split`, a partitioned weight), the interleaved layout its
    kernels read (`#loom.interleave`), and the layout of a GEMM's right
    operand (`gemm_b`, "kn" or "nk", set by `loom-record-gemm-weights`).

    ```mlir
    func.func @f(%ctx: !llvm.ptr, %w: tensor<8x8xf32> {loom.weight =
        #loom.weight<name = "w", source = #loom.extern<"w.bin", offset = 16>>})
    ```

    **Constraints:**
    - the name is non-empty;
    - `gemm_b`, when given, is "kn" or "nk".
  }];
  let parameters = (ins "::mlir::StringAttr":$name,
      Loom_OptionalQualifiedParameter<"::loom::ExternAttr">:$source,
      Loom_OptionalQualifiedParameter<"::loom::SplitAttr">:$split,
      Loom_OptionalQualifiedParameter<"::loom::InterleaveAttr">:$interleave,
      OptionalParameter<"::mlir::StringAttr">:$gemm_b);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "::llvm::StringRef":$name), [{
      return $_get($_ctxt, ::mlir::StringAttr::get($_ctxt, name),
                   ExternAttr(), SplitAttr(), InterleaveAttr(),
                   ::mlir::StringAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// This description with `gemm_b` set to `layout`.
    WeightAttr withGemmB(::llvm::StringRef layout) const;
  }];
}

def Loom_CpuTargetAttr : Loom_Attr<"CpuTarget", "cpu_target"> {
  let summary = "the CPU that the generated code is for";
  let description = [{
    The CPU that code generation targets, as data in the IR (the module's
    `loom.target` attribute): LLVM's name of the CPU and the x86 features
    of `include/loom/runtime/CpuFeatures.h` the code may use (the one
    vocabulary of features: the bundle manifest's `target` records the same
    list and `loom-run` checks it on the host). `loomc` sets it from
    `--cpu`, `--portable` or the host; the lowering picks its kernels from
    it (VNNI, AVX2 or generic) and the LLVM back end generates for it.
    Without it the code is generic x86-64-v2 code, never the compiling
    host's.

    ```mlir
    module attributes {loom.target = #loom.cpu_target<cpu = "x86-64-v3",
        features = ["sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "avx",
                    "avx2", "fma", "f16c", "bmi", "bmi2", "lzcnt", "movbe"]>}
    ```

    **Constraints:**
    - the CPU name is non-empty;
    - every feature is a string of the list in `CpuFeatures.h`, once.
  }];
  let parameters = (ins StringRefParameter<"LLVM's name of the CPU">:$cpu,
                        "::mlir::ArrayAttr":$features);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether the code may use `feature` (a name of CpuFeatures.h).
    bool hasFeature(::llvm::StringRef feature) const;
    /// Whether `feature` is a name of the CpuFeatures.h vocabulary.
    static bool isKnownFeature(::llvm::StringRef feature);
  }];
}

def Loom_QuantActivationsAttr : EnumAttr<Loom_Dialect, Loom_QuantActivations,
                                         "quant_act"> {
  let summary = "the activations of a loom.qmatmul's generated kernel";
  let description = [{
    Recorded on `loom.qmatmul` by `loom-quantize{activations=...}` (`loomc
    --quant-act`), read by the CPU lowering (QuantKernels.cpp): f32
    activations, int8 per block, or three int8 levels per block (`int8x3`,
    about f32's accuracy); `_portable` variants use no integer dot-product
    instructions of the target.

    ```mlir
    %y = loom.qmatmul %x, %w {quant_activations = #loom.quant_act<int8x3>} : ...
    ```

    **Constraints:**
    - one of f32, int8, int8x3, int8_portable, int8x3_portable.
  }];
  let assemblyFormat = "`<` $value `>`";
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMATTRS_TD
