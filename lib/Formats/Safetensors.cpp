//===- Safetensors.cpp - safetensors reader -------------------------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#include "loom/Formats/Safetensors.h"

#include "JsonUtil.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace loom::fmt;
using namespace loom::fmt::detail;

namespace {
// The reference implementation refuses headers above 100 MB.
constexpr uint64_t kMaxHeader = 100'000'000;

std::string dirName(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}
} // namespace

std::optional<ElementType> loom::fmt::safetensorsDtype(std::string_view d) {
  if (d == "F32")
    return ElementType::F32;
  if (d == "F16")
    return ElementType::F16;
  if (d == "BF16")
    return ElementType::BF16;
  if (d == "F64")
    return ElementType::F64;
  if (d == "I8")
    return ElementType::I8;
  if (d == "I16")
    return ElementType::I16;
  if (d == "I32")
    return ElementType::I32;
  if (d == "I64")
    return ElementType::I64;
  if (d == "U8")
    return ElementType::U8;
  if (d == "BOOL")
    return ElementType::Bool;
  return std::nullopt;
}

const TensorRef *SafetensorsFile::findTensor(std::string_view name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &refs[it->second];
}

Result<std::span<const std::byte>>
SafetensorsFile::tensorBytes(const TensorRef &ref) const {
  for (size_t i = 0; i < shardFiles.size(); ++i) {
    if (shardFiles[i] != ref.file)
      continue;
    std::span<const std::byte> bytes = shardBytes[i];
    if (ref.offset > bytes.size() || ref.nbytes > bytes.size() - ref.offset)
      return makeError(ref.file, ": tensor '", ref.name, "' at byte ",
                       ref.offset, ": data [offset ", ref.offset, ", size ",
                       ref.nbytes, ") runs past the end of the file (size ",
                       bytes.size(), ")");
    return bytes.subspan(ref.offset, ref.nbytes);
  }
  return makeError(ref.file, ": tensor '", ref.name,
                   "': the file is not part of this model");
}

namespace loom::fmt {
/// Friend of SafetensorsFile that fills it in.
class SafetensorsParser {
public:
  static Result<SafetensorsFile> parse(std::span<const std::byte> bytes,
                                       const std::string &fileName);
  static Result<SafetensorsFile> openIndex(const std::string &indexPath);
  static Result<SafetensorsFile> open(const std::string &path);
};
} // namespace loom::fmt

Result<SafetensorsFile>
SafetensorsParser::parse(std::span<const std::byte> bytes,
                         const std::string &name) {
  const uint64_t size = bytes.size();
  if (size < 8)
    return makeError(name,
                     ": byte 0: the 8-byte header length needs 8 bytes "
                     "but the file has ",
                     size, "; the file is truncated or not safetensors");
  uint64_t headerLen;
  std::memcpy(&headerLen, bytes.data(), 8);
  if (headerLen > size - 8)
    return makeError(name, ": byte 0: header length ", headerLen,
                     " runs past the end of the file (size ", size,
                     "); the file is truncated or not safetensors");
  if (headerLen > kMaxHeader)
    return makeError(name, ": byte 0: header length ", headerLen,
                     " exceeds the limit of ", kMaxHeader, " bytes");
  std::string_view text(reinterpret_cast<const char *>(bytes.data() + 8),
                        headerLen);
  if (text.empty() || text.front() != '{')
    return makeError(name, ": byte 8: the JSON header does not start with "
                           "'{'; not a safetensors file");
  LOOM_FMT_ASSIGN(root, parseJson(text, name, 8));
  if (!root.is_object())
    return makeError(name, ": byte 8: the header is ", jsonKind(root),
                     ", expected a JSON object");

  const uint64_t dataStart = 8 + headerLen;
  const uint64_t dataSize = size - dataStart;
  SafetensorsFile file;
  file.dataStart = dataStart;
  file.shardFiles.push_back(name);
  file.shardBytes.push_back(bytes);

  struct Span {
    uint64_t begin, end;
    size_t ref;
  };
  std::vector<Span> spans;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string &key = it.key();
    const Json &value = it.value();
    uint64_t at = keyOffset(text, key, 8);
    if (key == "__metadata__") {
      if (value.is_null())
        continue;
      if (!value.is_object())
        return makeError(name, ": byte ", at, ": '__metadata__' is ",
                         jsonKind(value), ", expected an object of strings");
      for (auto m = value.begin(); m != value.end(); ++m) {
        if (!m.value().is_string())
          return makeError(name, ": byte ", at, ": '__metadata__' entry '",
                           m.key(), "' is ", jsonKind(m.value()),
                           ", expected a string");
        file.meta[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto fail = [&](const auto &...what) {
      return makeError(name, ": tensor '", key, "' at byte ", at, ": ",
                       what...);
    };
    if (!value.is_object())
      return fail("the entry is ", jsonKind(value), ", expected an object");
    auto dtypeIt = value.find("dtype");
    auto shapeIt = value.find("shape");
    auto offsetsIt = value.find("data_offsets");
    if (dtypeIt == value.end() || !dtypeIt->is_string())
      return fail("'dtype' is missing or not a string");
    if (shapeIt == value.end() || !shapeIt->is_array())
      return fail("'shape' is missing or not an array");
    if (offsetsIt == value.end() || !offsetsIt->is_array() ||
        offsetsIt->size() != 2)
      return fail("'data_offsets' is missing or not an array of two "
                  "integers");
    const std::string &dtype = dtypeIt->get_ref<const std::string &>();
    auto format = safetensorsDtype(dtype);
    if (!format)
      return fail("dtype '", dtype,
                  "' is not supported (supported: F32, F16, BF16, F64, I8, "
                  "I16, I32, I64, U8, BOOL)");

    TensorRef ref;
    ref.name = key;
    ref.file = name;
    ref.format = *format;
    for (size_t d = 0; d < shapeIt->size(); ++d) {
      auto dim = asNonNegativeInt((*shapeIt)[d]);
      if (!dim)
        return fail("shape[", d, "] is not a non-negative 64-bit integer");
      ref.shape.push_back(*dim);
    }
    auto begin = asUInt64((*offsetsIt)[0]);
    auto end = asUInt64((*offsetsIt)[1]);
    if (!begin || !end)
      return fail("'data_offsets' are not non-negative 64-bit integers");
    if (*begin > *end)
      return fail("data_offsets [", *begin, ", ", *end,
                  ") end before they begin");
    if (*end > dataSize)
      return fail("data [", dataStart, " + ", *begin, ", ", dataStart, " + ",
                  *end, ") runs past the end of the file (size ", size,
                  "); the file is truncated");
    std::string label =
        name + ": tensor '" + key + "' at byte " + std::to_string(at);
    LOOM_FMT_ASSIGN(elems, numElements(ref.shape, label));
    LOOM_FMT_ASSIGN(nbytes, storageBytes(*format, elems, label));
    if (nbytes != *end - *begin)
      return fail("data_offsets [", *begin, ", ", *end, ") hold ",
                  *end - *begin, " bytes but shape x ", dtype, " needs ",
                  nbytes);
    ref.offset = dataStart + *begin;
    ref.nbytes = nbytes;
    ref.strides = contiguousStrides(*format, ref.shape);
    spans.push_back({*begin, *end, file.refs.size()});
    file.refs.push_back(std::move(ref));
  }

  // The tensors must tile the data section: no overlap, no gap.
  std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expected = 0;
  for (const Span &s : spans) {
    const std::string &tname = file.refs[s.ref].name;
    if (s.begin < expected)
      return makeError(name, ": tensor '", tname, "' at byte ",
                       dataStart + s.begin, ": its data [", s.begin, ", ",
                       s.end,
                       ") overlaps the previous tensor's, which ends "
                       "at ",
                       expected);
    if (s.begin > expected)
      return makeError(name, ": tensor '", tname, "' at byte ",
                       dataStart + s.begin, ": gap of ", s.begin - expected,
                       " bytes before its data [", s.begin, ", ", s.end,
                       "); the tensors must cover the data section exactly");
    expected = s.end;
  }
  if (expected != dataSize)
    return makeError(name, ": byte ", dataStart + expected, ": ",
                     dataSize - expected,
                     " bytes after the last tensor are not part of any "
                     "tensor");

  // File order: by data offset.
  std::vector<TensorRef> ordered;
  ordered.reserve(spans.size());
  for (const Span &s : spans)
    ordered.push_back(std::move(file.refs[s.ref]));
  file.refs = std::move(ordered);
  for (size_t i = 0; i < file.refs.size(); ++i)
    file.index.emplace(file.refs[i].name, i);
  return file;
}

Result<SafetensorsFile> SafetensorsParser::open(const std::string &path) {
  auto mapped = MappedFile::open(path);
  if (!mapped)
    return mapped.takeError();
  auto shared = std::make_shared<MappedFile>(mapped.take());
  auto file = parse(shared->bytes(), path);
  if (!file)
    return file.takeError();
  file->mapped.push_back(std::move(shared));
  return file;
}

Result<SafetensorsFile>
SafetensorsParser::openIndex(const std::string &indexPath) {
  LOOM_FMT_ASSIGN(text, readTextFile(indexPath));
  LOOM_FMT_ASSIGN(root, parseJson(text, indexPath, 0));
  if (!root.is_object())
    return makeError(indexPath, ": byte 0: the index is ", jsonKind(root),
                     ", expected a JSON object");
  auto mapIt = root.find("weight_map");
  uint64_t mapAt = keyOffset(text, "weight_map", 0);
  if (mapIt == root.end() || !mapIt->is_object())
    return makeError(indexPath, ": byte ", mapAt,
                     ": 'weight_map' is missing or not an object");

  // The shards in order of first appearance, and each tensor's shard.
  std::vector<std::string> shards;
  std::map<std::string, size_t> shardIndex;
  std::map<std::string, size_t> tensorShard;
  for (auto it = mapIt->begin(); it != mapIt->end(); ++it) {
    uint64_t at = keyOffset(text, it.key(), 0);
    if (!it.value().is_string())
      return makeError(indexPath, ": byte ", at, ": weight_map entry '",
                       it.key(), "' is ", jsonKind(it.value()),
                       ", expected a file name");
    const std::string &shard = it.value().get_ref<const std::string &>();
    if (shard.empty() || shard.front() == '/' ||
        shard.find("..") != std::string::npos)
      return makeError(indexPath, ": byte ", at, ": weight_map entry '",
                       it.key(), "' names shard '", shard,
                       "', which is not a file name relative to the index");
    auto [s, inserted] = shardIndex.emplace(shard, shards.size());
    if (inserted)
      shards.push_back(shard);
    tensorShard[it.key()] = s->second;
  }

  SafetensorsFile all;
  std::string dir = dirName(indexPath);
  for (size_t i = 0; i < shards.size(); ++i) {
    std::string path = dir + "/" + shards[i];
    auto shard = open(path);
    if (!shard)
      return makeError(indexPath, ": shard '", shards[i],
                       "': ", shard.error().message);
    for (const TensorRef &ref : shard->refs) {
      auto owner = tensorShard.find(ref.name);
      if (owner == tensorShard.end())
        return makeError(path, ": tensor '", ref.name, "' at byte ", ref.offset,
                         " is not in the weight_map of ", indexPath);
      if (owner->second != i)
        return makeError(path, ": tensor '", ref.name, "' at byte ", ref.offset,
                         " is mapped to shard '", shards[owner->second],
                         "' by ", indexPath);
      all.index.emplace(ref.name, all.refs.size());
      all.refs.push_back(ref);
    }
    for (auto &[k, v] : shard->meta)
      all.meta.emplace(k, v);
    all.shardFiles.push_back(path);
    all.shardBytes.push_back(shard->shardBytes.front());
    all.mapped.push_back(shard->mapped.front());
  }
  for (const auto &[tensor, shard] : tensorShard)
    if (!all.index.count(tensor))
      return makeError(indexPath, ": byte ", keyOffset(text, tensor, 0),
                       ": tensor '", tensor,
                       "' of the weight_map is not in "
                       "shard '",
                       shards[shard], "'");
  return all;
}

Result<SafetensorsFile>
loom::fmt::parseSafetensors(std::span<const std::byte> bytes,
                            std::string fileName) {
  return SafetensorsParser::parse(bytes, fileName);
}

Result<SafetensorsFile> loom::fmt::openSafetensors(const std::string &path) {
  return SafetensorsParser::open(path);
}

Result<SafetensorsFile>
loom::fmt::openSafetensorsIndex(const std::string &indexPath) {
  return SafetensorsParser::openIndex(indexPath);
}

Result<SafetensorsFile>
loom::fmt::openSafetensorsModel(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return makeError(path, ": cannot open: ", std::strerror(errno));
  if (S_ISDIR(st.st_mode)) {
    std::string index = path + "/model.safetensors.index.json";
    if (::stat(index.c_str(), &st) == 0)
      return openSafetensorsIndex(index);
    std::string single = path + "/model.safetensors";
    if (::stat(single.c_str(), &st) == 0)
      return openSafetensors(single);
    return makeError(path, ": no model.safetensors or "
                           "model.safetensors.index.json in this folder");
  }
  if (endsWith(path, ".json"))
    return openSafetensorsIndex(path);
  return openSafetensors(path);
}

Result<std::string> loom::fmt::readTextFile(const std::string &path,
                                            uint64_t maxBytes) {
  auto mapped = MappedFile::open(path);
  if (!mapped)
    return mapped.takeError();
  if (mapped->fileSize() > maxBytes)
    return makeError(path, ": the file has ", mapped->fileSize(),
                     " bytes, more than the limit of ", maxBytes,
                     " for a JSON file");
  auto b = mapped->bytes();
  return std::string(reinterpret_cast<const char *>(b.data()), b.size());
}
