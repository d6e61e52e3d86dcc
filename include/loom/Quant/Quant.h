//===- Quant.h - Block quantization formats, reference code -----*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Loom's block-quantized weight formats, with plain C++ reference quantize /
// dequantize routines and error statistics (no LLVM, no MLIR), used by the
// quantize pass (passes/Quantize) and by the tests.
//
// Storage (docs/QUANTIZE.md): a [N, K] weight is N rows of K / block blocks,
// blocks along K (the reduction dimension), each block stored as
//
//   scale (f16 | bf16 | f32)  [min, same type, for mode min]  values
//
// int4 values: block/2 bytes, byte j holding element j (low nibble) and
// element j + block/2 (high nibble); symmetric stores q + 8 (q in [-7, 7]),
// min stores q in [0, 15]. int8 values: block bytes, int8 q in [-127, 127]
// (symmetric) or uint8 q in [0, 255] (min). Dequantization: x = s * q
// (symmetric, with the stored q - 8 for int4) or x = s * q + m (min).
// int4 block 32 symmetric f16 has GGUF Q4_0's layout, int4 block 32 min f16
// Q4_1's and int8 block 32 symmetric f16 Q8_0's. A row is a whole number of
// blocks, so a split of N (rows) never cuts a block.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_QUANT_QUANT_H
#define LOOM_QUANT_QUANT_H

#include "loom/Formats/Error.h"
#include "loom/Support/QuantFormat.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace loom::quant {

// Format and Mode, their names and sizes: loom/Support/QuantFormat.h.
enum class ScaleType : uint8_t { F16, BF16, F32 };

/// One block quantization scheme.
struct Scheme {
  Format format = Format::Int4;
  int64_t block = 32;
  Mode mode = Mode::Symmetric;
  ScaleType scale = ScaleType::F16;

  unsigned bits() const;
  bool isGguf() const;
  int64_t scaleBytes() const;
  /// Bytes before the values in a block (scale, min).
  int64_t valueOffset() const;
  int64_t blockBytes() const;
  /// Bytes of one row of `k` elements (k a multiple of block).
  int64_t rowBytes(int64_t k) const { return k / block * blockBytes(); }
  /// The largest stored code: 7 or 127 (symmetric), 15 or 255 (min).
  int qmax() const;
  bool operator==(const Scheme &) const = default;
};

/// Parses `int4`, `int4:32`, `int8:128:min`, `int4:64:sym:f32`, and the GGUF
/// names `q4_0`, `q4_1`, `q8_0`. Fields after the format: the block size
/// (32, 64, 128), the mode (`sym` | `symmetric` | `min` | `asym`) and the
/// scale type (`f16` | `bf16` | `f32`), in any order after the block.
fmt::Result<Scheme> parseScheme(std::string_view text);
/// `int4:32:sym:f16`-style name (GGUF formats by their name).
std::string schemeName(const Scheme &scheme);
/// The name as `#loom.quant<...>` prints it (`scale = f16`; formatName and
/// modeName are QuantFormat.h's).
std::string_view scaleName(ScaleType s);

/// Checks that `k` elements per row can be stored with `scheme`.
fmt::Status checkShape(const Scheme &scheme, int64_t k, std::string_view what);

/// Quantizes `rows` rows of `k` floats (row stride `ldx` floats) into
/// `out` (rows * rowBytes(k) bytes). The scale (and the min) are rounded so
/// that every element's code is in range: |x - dequant(x)| <= s / 2 for
/// every element, s the stored scale (up to float rounding). Only Loom's
/// int4/int8 formats with modes symmetric or min are produced; non-finite
/// inputs are an error.
fmt::Status quantize(const Scheme &scheme, const float *x, int64_t rows,
                     int64_t k, int64_t ldx, std::span<std::byte> out);

/// Dequantizes every format (GGUF blocks bit-exactly as gguf.quants does:
/// same float operations, no fused multiply-add).
fmt::Status dequantize(const Scheme &scheme, std::span<const std::byte> in,
                       int64_t rows, int64_t k, float *out);

/// The scale of block `b` of row `r`, as stored (for tests and reports).
float blockScale(const Scheme &scheme, std::span<const std::byte> in, int64_t k,
                 int64_t r, int64_t b);

/// Error of a quantized tensor against its original.
struct ErrorStats {
  int64_t elements = 0;
  double rmse = 0;      ///< sqrt(mean((x - xq)^2))
  double maxAbs = 0;    ///< max |x - xq|
  double rms = 0;       ///< sqrt(mean(x^2)) of the original
  double relRmse = 0;   ///< rmse / rms (0 when rms is 0)
  int64_t worstRow = 0; ///< the block with the largest RMSE
  int64_t worstBlock = 0;
  double worstBlockRmse = 0;
  double worstBlockMaxAbs = 0;
};

/// Compares `rows` x `k` values (`x` with row stride ldx, `xq` contiguous)
/// block by block.
ErrorStats measureError(const float *x, const float *xq, int64_t rows,
                        int64_t k, int64_t ldx, int64_t block);

} // namespace loom::quant

#endif // LOOM_QUANT_QUANT_H
