//===- Safetensors.h - safetensors reader -----------------------*- C++ -*-===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// Reads safetensors files (huggingface/safetensors): a little-endian u64
// header length N, N bytes of JSON {name: {dtype, shape, data_offsets}, plus
// an optional "__metadata__": {string: string}}, then the raw data. Sharded
// checkpoints are read through their `model.safetensors.index.json`, whose
// "weight_map" names the shard of every tensor.
//
// As in the reference implementation, the tensors must tile the data section
// exactly (no gap, no overlap), and each tensor's byte size must equal its
// element count times its dtype size.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FORMATS_SAFETENSORS_H
#define LOOM_FORMATS_SAFETENSORS_H

#include "loom/Formats/Error.h"
#include "loom/Formats/WeightStore.h"

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom::fmt {

/// The weight-store format of a safetensors dtype name ("F32", "BOOL", ...),
/// if Loom supports it.
std::optional<ElementType> safetensorsDtype(std::string_view dtype);

/// One parsed safetensors file (or a set of shards).
class SafetensorsFile {
public:
  /// Tensors sorted by their data offset (file order); offsets absolute.
  const std::vector<TensorRef> &tensors() const { return refs; }
  const TensorRef *findTensor(std::string_view name) const;
  /// The "__metadata__" map (empty when absent).
  const std::map<std::string, std::string> &metadata() const { return meta; }
  /// Absolute offset of the data section (8 + header length) of a
  /// single-file model; for a sharded model, 0.
  uint64_t dataOffset() const { return dataStart; }
  /// The shard files (one for a single file).
  const std::vector<std::string> &files() const { return shardFiles; }
  /// The mappings held by this object (none when parsed from a buffer).
  const std::vector<std::shared_ptr<MappedFile>> &mappings() const {
    return mapped;
  }
  /// Bytes of a tensor of one of this object's files (bounds-checked); an
  /// Error if `ref` names another file or lies outside it.
  Result<std::span<const std::byte>> tensorBytes(const TensorRef &ref) const;

private:
  friend class SafetensorsParser;
  std::vector<TensorRef> refs;
  std::map<std::string, size_t, std::less<>> index;
  std::map<std::string, std::string> meta;
  uint64_t dataStart = 0;
  std::vector<std::string> shardFiles;
  // The bytes of each shard, parallel to shardFiles.
  std::vector<std::span<const std::byte>> shardBytes;
  std::vector<std::shared_ptr<MappedFile>> mapped;
};

/// Parses safetensors bytes owned by the caller; `fileName` is used in
/// messages and as TensorRef::file.
Result<SafetensorsFile> parseSafetensors(std::span<const std::byte> bytes,
                                         std::string fileName);
/// Maps one .safetensors file and parses it.
Result<SafetensorsFile> openSafetensors(const std::string &path);
/// Reads a `model.safetensors.index.json` and every shard it names (paths
/// relative to the index's folder). Every tensor of the weight map must be
/// in its shard, with no tensor in two shards.
Result<SafetensorsFile> openSafetensorsIndex(const std::string &indexPath);
/// Opens a model given a .safetensors file, an index .json, or a folder
/// holding model.safetensors or model.safetensors.index.json.
Result<SafetensorsFile> openSafetensorsModel(const std::string &path);

/// Reads a whole small text file (JSON), at most `maxBytes`.
Result<std::string> readTextFile(const std::string &path,
                                 uint64_t maxBytes = 64u << 20);

} // namespace loom::fmt

#endif // LOOM_FORMATS_SAFETENSORS_H
