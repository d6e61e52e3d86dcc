//===- Device.h - Device specs for the cost model ----------------*- C++
//-*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// What the cost model knows about one device: peak FLOP/s per element type,
// memory bandwidth and capacity. Presets for the GPUs users have (A100 40/80
// GB, H100 SXM, H200) use the vendors' dense (no sparsity) datasheet figures;
// a CPU is described (cores x FLOP/cycle x GHz) or measured with a small
// STREAM-like triad and a GEMM probe. Units are SI: FLOP/s, bytes/s, bytes.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COST_DEVICE_H
#define LOOM_COST_DEVICE_H

#include "loom/Cost/Error.h"
#include "loom/Support/DType.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::cost {

/// Element types whose throughput differs on the devices we model.
enum class ElemType { F32, TF32, BF16, F16, FP8, INT8 };

/// "f32", "tf32", "bf16", "f16", "fp8", "int8".
std::string_view elemTypeName(ElemType t);
/// Parses the names above (also "fp32", "fp16", "i8"); an Error otherwise.
Result<ElemType> parseElemType(std::string_view s);
/// Bytes per element (tf32 is stored as f32).
unsigned elemBytes(ElemType t);

/// ElemType is a vocabulary of compute precisions, not of stored tensors
/// (loom/Support/DType.h); the two meet here, once. The precision math on
/// tensors of dtype `t` is priced at: f16 and bf16 at their own (tensor
/// core) rate, every other dtype at f32's (the integer and f64 tensors of a
/// loom graph are indices and masks, not GEMM operands). tf32, fp8 and int8
/// are precisions a device offers, never a stored tensor's dtype.
ElemType computeTypeOf(DType t);

enum class DeviceKind { GPU, CPU };

/// One device. Peaks are dense math; zero means "not supported" and the cost
/// model falls back to the next wider type (fp8 -> bf16 -> tf32 -> f32).
struct DeviceSpec {
  std::string name;
  DeviceKind kind = DeviceKind::GPU;
  double peakF32 = 0;      ///< FLOP/s, plain fp32 (CUDA cores / SIMD FMA)
  double peakTF32 = 0;     ///< FLOP/s, tf32 tensor cores
  double peakBF16 = 0;     ///< FLOP/s, bf16 and fp16 tensor cores / SIMD
  double peakFP8 = 0;      ///< FLOP/s, fp8 (and int8 OP/s)
  double memBandwidth = 0; ///< bytes/s of device memory (HBM or DRAM)
  double memCapacity = 0;  ///< bytes of device memory

  /// Peak FLOP/s for `t`, falling back to a wider type when `t` has none.
  double peakFlops(ElemType t) const;
};

/// Presets. Figures (dense, SXM parts):
///  A100 40GB: 19.5 TF f32, 156 TF tf32, 312 TF bf16, 624 TOP/s int8,
///             1.555 TB/s, 40 GB.   A100 80GB: same math, 2.039 TB/s, 80 GB.
///  H100 SXM : 67 TF f32, 495 TF tf32, 989 TF bf16, 1979 TF fp8,
///             3.35 TB/s, 80 GB.
///  H200     : H100 math, 4.8 TB/s, 141 GB.
DeviceSpec a100_40gb();
DeviceSpec a100_80gb();
DeviceSpec h100_sxm();
DeviceSpec h200();

/// A CPU described by its cores x FLOP/cycle/core (fp32) x GHz, DRAM
/// bandwidth (bytes/s) and capacity (bytes). bf16 is taken as the fp32 rate
/// (AVX2 converts and computes in fp32); int8 as 2x fp32 (vpmaddubsw/VNNI).
DeviceSpec describeCpu(std::string name, unsigned cores, double flopsPerCycle,
                       double ghz, double memBandwidth, double memCapacity);

/// Measures this machine: a STREAM-like triad (a[i] = b[i] + s*c[i], arrays
/// of `triadBytes` each) for bandwidth and a blocked fp32 GEMM for FLOP/s on
/// `threads` threads (0: hardware concurrency). Takes about a second.
DeviceSpec measureCpu(unsigned threads = 0, std::size_t triadBytes = 64u << 20);

/// "a100-40gb", "a100-80gb" (or "a100"), "h100" ("h100-sxm"), "h200", "cpu"
/// (a 2-core AVX2 host, described); an Error naming the known ones otherwise.
Result<DeviceSpec> deviceByName(std::string_view name);

/// The names deviceByName accepts, for help texts.
std::vector<std::string> knownDeviceNames();

} // namespace loom::cost

#endif // LOOM_COST_DEVICE_H
