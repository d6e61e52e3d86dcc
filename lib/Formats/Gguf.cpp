//===- Gguf.cpp - GGUF v2/v3 reader ---------------------------------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The parser walks the file once with a bounds-checked cursor. Every count
// read from the file is checked against the bytes that remain before it
// drives a loop or an allocation, so that a hostile count can neither read
// out of bounds nor make the parser allocate or spin for long: an element
// takes at least one byte, so no loop runs more often than the file is long.
//
//===----------------------------------------------------------------------===//

#include "loom/Formats/Gguf.h"

#include <cstring>
#include <limits>

using namespace loom::fmt;

namespace {
// Deeper nesting than this is rejected; real files nest at most one level
// (arrays of arrays are rare), and the limit bounds the parser's recursion.
constexpr unsigned kMaxArrayDepth = 8;
// ggml's GGML_MAX_DIMS.
constexpr uint32_t kMaxDims = 4;

template <typename T> T loadLE(const std::byte *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Size of a fixed-size value type, 0 for strings and arrays, or nullopt for
/// an unknown type number.
std::optional<uint64_t> fixedSize(uint32_t type) {
  switch (static_cast<GgufValueType>(type)) {
  case GgufValueType::U8:
  case GgufValueType::I8:
  case GgufValueType::Bool:
    return 1;
  case GgufValueType::U16:
  case GgufValueType::I16:
    return 2;
  case GgufValueType::U32:
  case GgufValueType::I32:
  case GgufValueType::F32:
    return 4;
  case GgufValueType::U64:
  case GgufValueType::I64:
  case GgufValueType::F64:
    return 8;
  case GgufValueType::String:
  case GgufValueType::Array:
    return 0;
  }
  return std::nullopt;
}

/// Size in bytes of an already validated value of `type` at `p` (only used on
/// validated data, so no checks).
uint64_t validatedSize(GgufValueType type, const std::byte *p) {
  if (auto fixed = fixedSize(static_cast<uint32_t>(type)); fixed && *fixed)
    return *fixed;
  if (type == GgufValueType::String)
    return 8 + loadLE<uint64_t>(p);
  // Array: element type, count, elements.
  auto elemTy = static_cast<GgufValueType>(loadLE<uint32_t>(p));
  uint64_t n = loadLE<uint64_t>(p + 4);
  uint64_t size = 12;
  auto fixed = fixedSize(static_cast<uint32_t>(elemTy));
  if (fixed && *fixed)
    return size + n * *fixed;
  for (uint64_t i = 0; i < n; ++i)
    size += validatedSize(elemTy, p + size);
  return size;
}

struct GgmlTypeName {
  uint32_t id;
  std::string_view name;
};
// ggml.h ggml_type, including the numbers that were removed (4, 5, 31-33,
// 36-38), so that a file from any ggml era is rejected by name.
constexpr GgmlTypeName kGgmlTypes[] = {
    {0, "F32"},         {1, "F16"},         {2, "Q4_0"},
    {3, "Q4_1"},        {4, "Q4_2"},        {5, "Q4_3"},
    {6, "Q5_0"},        {7, "Q5_1"},        {8, "Q8_0"},
    {9, "Q8_1"},        {10, "Q2_K"},       {11, "Q3_K"},
    {12, "Q4_K"},       {13, "Q5_K"},       {14, "Q6_K"},
    {15, "Q8_K"},       {16, "IQ2_XXS"},    {17, "IQ2_XS"},
    {18, "IQ3_XXS"},    {19, "IQ1_S"},      {20, "IQ4_NL"},
    {21, "IQ3_S"},      {22, "IQ2_S"},      {23, "IQ4_XS"},
    {24, "I8"},         {25, "I16"},        {26, "I32"},
    {27, "I64"},        {28, "F64"},        {29, "IQ1_M"},
    {30, "BF16"},       {31, "Q4_0_4_4"},   {32, "Q4_0_4_8"},
    {33, "Q4_0_8_8"},   {34, "TQ1_0"},      {35, "TQ2_0"},
    {36, "IQ4_NL_4_4"}, {37, "IQ4_NL_4_8"}, {38, "IQ4_NL_8_8"},
    {39, "MXFP4"},      {40, "NVFP4"},      {41, "Q1_0"},
};
} // namespace

std::string_view loom::fmt::ggufValueTypeName(GgufValueType type) {
  switch (type) {
  case GgufValueType::U8:
    return "u8";
  case GgufValueType::I8:
    return "i8";
  case GgufValueType::U16:
    return "u16";
  case GgufValueType::I16:
    return "i16";
  case GgufValueType::U32:
    return "u32";
  case GgufValueType::I32:
    return "i32";
  case GgufValueType::F32:
    return "f32";
  case GgufValueType::Bool:
    return "bool";
  case GgufValueType::String:
    return "string";
  case GgufValueType::Array:
    return "array";
  case GgufValueType::U64:
    return "u64";
  case GgufValueType::I64:
    return "i64";
  case GgufValueType::F64:
    return "f64";
  }
  return "unknown";
}

std::string_view loom::fmt::ggmlTypeName(uint32_t ggmlType) {
  for (const GgmlTypeName &t : kGgmlTypes)
    if (t.id == ggmlType)
      return t.name;
  return {};
}

std::optional<ElementType> loom::fmt::ggmlTypeToElementType(uint32_t type) {
  switch (type) {
  case 0:
    return ElementType::F32;
  case 1:
    return ElementType::F16;
  case 2:
    return ElementType::Q4_0;
  case 3:
    return ElementType::Q4_1;
  case 8:
    return ElementType::Q8_0;
  case 24:
    return ElementType::I8;
  case 25:
    return ElementType::I16;
  case 26:
    return ElementType::I32;
  case 27:
    return ElementType::I64;
  case 28:
    return ElementType::F64;
  case 30:
    return ElementType::BF16;
  default:
    return std::nullopt;
  }
}

//===----------------------------------------------------------------------===//
// GgufValue
//===----------------------------------------------------------------------===//

std::optional<uint64_t> GgufValue::asUInt() const {
  switch (ty) {
  case GgufValueType::U8:
    return loadLE<uint8_t>(data);
  case GgufValueType::U16:
    return loadLE<uint16_t>(data);
  case GgufValueType::U32:
    return loadLE<uint32_t>(data);
  case GgufValueType::U64:
    return loadLE<uint64_t>(data);
  case GgufValueType::I8:
  case GgufValueType::I16:
  case GgufValueType::I32:
  case GgufValueType::I64: {
    int64_t v = *asInt();
    if (v < 0)
      return std::nullopt;
    return static_cast<uint64_t>(v);
  }
  default:
    return std::nullopt;
  }
}

std::optional<int64_t> GgufValue::asInt() const {
  switch (ty) {
  case GgufValueType::I8:
    return loadLE<int8_t>(data);
  case GgufValueType::I16:
    return loadLE<int16_t>(data);
  case GgufValueType::I32:
    return loadLE<int32_t>(data);
  case GgufValueType::I64:
    return loadLE<int64_t>(data);
  case GgufValueType::U8:
  case GgufValueType::U16:
  case GgufValueType::U32:
  case GgufValueType::U64: {
    uint64_t v = *asUInt();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return std::nullopt;
    return static_cast<int64_t>(v);
  }
  default:
    return std::nullopt;
  }
}

std::optional<double> GgufValue::asFloat() const {
  if (ty == GgufValueType::F32)
    return loadLE<float>(data);
  if (ty == GgufValueType::F64)
    return loadLE<double>(data);
  return std::nullopt;
}

std::optional<bool> GgufValue::asBool() const {
  if (ty != GgufValueType::Bool)
    return std::nullopt;
  return loadLE<uint8_t>(data) != 0;
}

std::optional<std::string_view> GgufValue::asString() const {
  if (ty != GgufValueType::String)
    return std::nullopt;
  return std::string_view(reinterpret_cast<const char *>(data), len);
}

namespace loom::fmt {
/// Builds values; a friend of GgufValue and GgufFile.
class GgufParser {
public:
  GgufParser(std::span<const std::byte> bytes, std::string fileName,
             bool dataOptional)
      : bytes(bytes), name(std::move(fileName)), dataOptional(dataOptional) {}

  Result<GgufFile> parse();

  /// A value of `type` whose encoding starts at `p` (validated data).
  static GgufValue makeValue(GgufValueType type, const std::byte *p,
                             uint64_t offset);
  static void setMapping(GgufFile &file, std::shared_ptr<MappedFile> m) {
    file.mapped = std::move(m);
  }

private:
  // Cursor primitives; each checks that the bytes are there.
  Status need(uint64_t n, std::string_view what);
  template <typename T> Result<T> read(std::string_view what);
  Result<std::string_view> readString(std::string_view what);
  Status validateValue(uint32_t type, std::string_view key, unsigned depth);
  std::string where(uint64_t at) const {
    return name + ": byte " + std::to_string(at);
  }

  std::span<const std::byte> bytes;
  std::string name;
  bool dataOptional = false;
  uint64_t pos = 0;
};
} // namespace loom::fmt

GgufValue GgufParser::makeValue(GgufValueType type, const std::byte *p,
                                uint64_t offset) {
  GgufValue v;
  v.ty = type;
  v.off = offset;
  if (type == GgufValueType::String) {
    v.len = loadLE<uint64_t>(p);
    v.data = p + 8;
  } else if (type == GgufValueType::Array) {
    v.elemTy = static_cast<GgufValueType>(loadLE<uint32_t>(p));
    v.count = loadLE<uint64_t>(p + 4);
    v.data = p + 12;
    v.len = validatedSize(type, p) - 12;
  } else {
    v.data = p;
    v.len = *fixedSize(static_cast<uint32_t>(type));
  }
  return v;
}

GgufValue GgufValue::operator[](uint64_t i) const {
  assert(isArray() && i < count && "array index out of range");
  auto fixed = fixedSize(static_cast<uint32_t>(elemTy));
  const std::byte *p = this->data;
  if (fixed && *fixed) {
    p += i * *fixed;
  } else {
    for (uint64_t k = 0; k < i; ++k)
      p += validatedSize(elemTy, p);
  }
  return GgufParser::makeValue(elemTy, p, off + (p - this->data) + 12);
}

GgufValue::iterator GgufValue::begin() const {
  iterator it;
  it.array = this;
  it.pos = data;
  it.index = 0;
  return it;
}

GgufValue::iterator GgufValue::end() const {
  iterator it;
  it.array = this;
  it.pos = nullptr;
  it.index = size();
  return it;
}

GgufValue GgufValue::iterator::operator*() const {
  return GgufParser::makeValue(array->elemTy, pos,
                               array->off + 12 + (pos - array->data));
}

GgufValue::iterator &GgufValue::iterator::operator++() {
  pos += validatedSize(array->elemTy, pos);
  ++index;
  return *this;
}

std::span<const std::byte> GgufValue::rawBytes() const {
  if (ty == GgufValueType::String)
    return {};
  if (ty == GgufValueType::Array) {
    auto fixed = fixedSize(static_cast<uint32_t>(elemTy));
    if (!fixed || !*fixed)
      return {};
  }
  return {data, static_cast<size_t>(len)};
}

//===----------------------------------------------------------------------===//
// GgufFile
//===----------------------------------------------------------------------===//

const GgufValue *GgufFile::find(std::string_view key) const {
  auto it = kvIndex.find(key);
  return it == kvIndex.end() ? nullptr : &kvs[it->second].value;
}

const TensorRef *GgufFile::findTensor(std::string_view tensorName) const {
  auto it = tensorIndex.find(tensorName);
  return it == tensorIndex.end() ? nullptr : &refs[it->second];
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

Status GgufParser::need(uint64_t n, std::string_view what) {
  uint64_t left = bytes.size() - pos;
  if (n > left)
    return makeError(where(pos), ": ", what, " needs ", n, " bytes but only ",
                     left, " remain (file size ", bytes.size(),
                     "); the file is truncated");
  return success();
}

template <typename T> Result<T> GgufParser::read(std::string_view what) {
  LOOM_FMT_CHECK(need(sizeof(T), what));
  T v = loadLE<T>(bytes.data() + pos);
  pos += sizeof(T);
  return v;
}

Result<std::string_view> GgufParser::readString(std::string_view what) {
  uint64_t at = pos;
  LOOM_FMT_ASSIGN(len, read<uint64_t>(what));
  uint64_t left = bytes.size() - pos;
  if (len > left)
    return makeError(where(at), ": ", what, " has length ", len, " but only ",
                     left, " bytes remain (file size ", bytes.size(),
                     "); the file is truncated or corrupt");
  std::string_view s(reinterpret_cast<const char *>(bytes.data() + pos), len);
  pos += len;
  return s;
}

Status GgufParser::validateValue(uint32_t type, std::string_view key,
                                 unsigned depth) {
  uint64_t at = pos;
  auto fixed = fixedSize(type);
  if (!fixed)
    return makeError(where(at), ": key '", key, "': unknown value type ", type,
                     " (valid types are 0..12)");
  if (*fixed) {
    if (type == static_cast<uint32_t>(GgufValueType::Bool)) {
      LOOM_FMT_ASSIGN(b, read<uint8_t>("a bool"));
      if (b > 1)
        return makeError(where(at), ": key '", key, "': bool value ", b,
                         " is neither 0 nor 1");
      return success();
    }
    LOOM_FMT_CHECK(need(*fixed, std::string("the value of key '") +
                                    std::string(key) + "'"));
    pos += *fixed;
    return success();
  }
  if (type == static_cast<uint32_t>(GgufValueType::String)) {
    auto s =
        readString(std::string("a string of key '") + std::string(key) + "'");
    if (!s)
      return s.takeError();
    return success();
  }
  // An array: element type, count, elements.
  if (depth >= kMaxArrayDepth)
    return makeError(where(at), ": key '", key, "': arrays nested deeper than ",
                     kMaxArrayDepth, " levels");
  LOOM_FMT_ASSIGN(elemType, read<uint32_t>("an array element type"));
  LOOM_FMT_ASSIGN(count, read<uint64_t>("an array length"));
  auto elemFixed = fixedSize(elemType);
  if (!elemFixed)
    return makeError(where(at), ": key '", key,
                     "': array of unknown value type ", elemType,
                     " (valid types are 0..12)");
  // Strings take at least 8 bytes and arrays at least 12.
  uint64_t minElem = *elemFixed ? *elemFixed
                     : elemType == static_cast<uint32_t>(GgufValueType::String)
                         ? 8
                         : 12;
  uint64_t left = bytes.size() - pos;
  if (count > left / minElem)
    return makeError(where(at), ": key '", key, "': array of ", count, " ",
                     ggufValueTypeName(static_cast<GgufValueType>(elemType)),
                     " values needs at least ", minElem,
                     " bytes each, but only ", left,
                     " bytes remain (file size ", bytes.size(),
                     "); the file is truncated or the count is corrupt");
  if (*elemFixed && elemType != static_cast<uint32_t>(GgufValueType::Bool)) {
    pos += count * *elemFixed;
    return success();
  }
  for (uint64_t i = 0; i < count; ++i)
    LOOM_FMT_CHECK(validateValue(elemType, key, depth + 1));
  return success();
}

Result<GgufFile> GgufParser::parse() {
  GgufFile file;
  file.name = name;
  file.bytes = bytes;

  // Header: magic, version, tensor count, metadata count.
  LOOM_FMT_CHECK(need(4, "the magic 'GGUF'"));
  if (std::memcmp(bytes.data(), "GGUF", 4) != 0)
    return makeError(name, ": byte 0: wrong magic (expected 'GGUF'); not a "
                           "GGUF file");
  pos = 4;
  LOOM_FMT_ASSIGN(version, read<uint32_t>("the version"));
  if (version == 1)
    return makeError(name, ": byte 4: GGUF version 1 (32-bit counts) is not "
                           "supported; convert the file to version 3");
  if (version != 2 && version != 3) {
    if ((version & 0xffff) == 0 && version != 0)
      return makeError(name, ": byte 4: version ", version,
                       " looks byte-swapped: big-endian GGUF files are not "
                       "supported");
    return makeError(name, ": byte 4: unsupported GGUF version ", version,
                     " (supported: 2 and 3)");
  }
  file.fileVersion = version;
  LOOM_FMT_ASSIGN(nTensors, read<uint64_t>("the tensor count"));
  LOOM_FMT_ASSIGN(nKv, read<uint64_t>("the metadata count"));
  // A key/value takes at least 8 (key) + 4 (type) + 1 bytes; a tensor info
  // at least 8 (name) + 4 (n_dims) + 4 (type) + 8 (offset) bytes.
  uint64_t left = bytes.size() - pos;
  if (nKv > left / 13)
    return makeError(name, ": byte 16: metadata count ", nKv,
                     " cannot fit in the ", left,
                     " remaining bytes; the file is truncated or corrupt");
  if (nTensors > left / 24)
    return makeError(name, ": byte 8: tensor count ", nTensors,
                     " cannot fit in the ", left,
                     " remaining bytes; the file is truncated or corrupt");

  // Metadata.
  file.kvs.reserve(nKv);
  for (uint64_t i = 0; i < nKv; ++i) {
    uint64_t kvAt = pos;
    auto key = readString("metadata key #" + std::to_string(i));
    if (!key)
      return key.takeError();
    auto type =
        read<uint32_t>("the value type of key '" + std::string(*key) + "'");
    if (!type)
      return type.takeError();
    uint64_t valueAt = pos;
    LOOM_FMT_CHECK(validateValue(*type, *key, 0));
    GgufKeyValue kv;
    kv.key = *key;
    kv.offset = kvAt;
    kv.value = makeValue(static_cast<GgufValueType>(*type),
                         bytes.data() + valueAt, valueAt);
    if (!file.kvIndex.emplace(kv.key, file.kvs.size()).second)
      return makeError(where(kvAt), ": duplicate metadata key '", *key, "'");
    file.kvs.push_back(kv);
  }

  // general.alignment: a u32 power of two (gguf.md); 32 when absent.
  if (const GgufValue *a = file.find("general.alignment")) {
    const GgufKeyValue &kv =
        file.kvs[file.kvIndex.find("general.alignment")->second];
    if (a->type() != GgufValueType::U32)
      return makeError(where(kv.offset), ": key 'general.alignment' has type ",
                       ggufValueTypeName(a->type()), ", expected u32");
    uint64_t align = *a->asUInt();
    if (align == 0 || (align & (align - 1)) != 0)
      return makeError(where(kv.offset), ": key 'general.alignment' is ", align,
                       ", which is not a power of two");
    file.align = align;
  }

  // Tensor infos.
  std::vector<uint64_t> infoOffsets;
  infoOffsets.reserve(nTensors);
  file.refs.reserve(nTensors);
  file.dims.reserve(nTensors);
  for (uint64_t i = 0; i < nTensors; ++i) {
    uint64_t infoAt = pos;
    auto tname = readString("the name of tensor #" + std::to_string(i));
    if (!tname)
      return tname.takeError();
    std::string label = "tensor '" + std::string(*tname) + "'";
    auto tensorErr = [&](uint64_t at) {
      return name + ": " + label + " at byte " + std::to_string(at);
    };
    LOOM_FMT_ASSIGN(nDims, read<uint32_t>("the n_dims of " + label));
    if (nDims > kMaxDims)
      return makeError(tensorErr(infoAt), ": n_dims is ", nDims,
                       ", more than the maximum of ", kMaxDims);
    std::vector<int64_t> ne(nDims);
    for (uint32_t d = 0; d < nDims; ++d) {
      uint64_t dimAt = pos;
      LOOM_FMT_ASSIGN(dim, read<int64_t>("a dimension of " + label));
      if (dim < 0)
        return makeError(tensorErr(dimAt), ": dimension ", d, " is negative (",
                         dim, ")");
      ne[d] = dim;
    }
    uint64_t typeAt = pos;
    LOOM_FMT_ASSIGN(ggmlType, read<uint32_t>("the type of " + label));
    LOOM_FMT_ASSIGN(relOffset, read<uint64_t>("the data offset of " + label));

    auto format = ggmlTypeToElementType(ggmlType);
    if (!format) {
      std::string_view known = ggmlTypeName(ggmlType);
      if (!known.empty())
        return makeError(tensorErr(typeAt), ": ", known, " (type ", ggmlType,
                         ") is not supported (supported: F32, F16, BF16, "
                         "Q4_0, Q4_1, Q8_0, I8, I16, I32, I64, F64)");
      return makeError(tensorErr(typeAt), ": unknown ggml type ", ggmlType);
    }

    TensorRef ref;
    ref.name = std::string(*tname);
    ref.file = name;
    ref.format = *format;
    ref.shape.assign(ne.rbegin(), ne.rend());
    LOOM_FMT_ASSIGN(elems, numElements(ref.shape, tensorErr(infoAt)));
    if (nDims > 0 && ne[0] % static_cast<int64_t>(blockElements(*format)))
      return makeError(tensorErr(infoAt), ": the innermost dimension ", ne[0],
                       " is not a multiple of the ", elementTypeName(*format),
                       " block size ", blockElements(*format));
    LOOM_FMT_ASSIGN(nbytes, storageBytes(*format, elems, tensorErr(infoAt)));
    if (relOffset % file.align != 0)
      return makeError(tensorErr(infoAt), ": data offset ", relOffset,
                       " is not a multiple of the alignment ", file.align,
                       "; the data is misaligned");
    ref.offset = relOffset; // Made absolute below.
    ref.nbytes = nbytes;
    ref.strides = contiguousStrides(*format, ref.shape);
    if (!file.tensorIndex.emplace(*tname, file.refs.size()).second)
      return makeError(tensorErr(infoAt), ": duplicate tensor name");
    file.refs.push_back(std::move(ref));
    file.dims.push_back(std::move(ne));
    infoOffsets.push_back(infoAt);
  }

  // The data section starts at the next multiple of the alignment.
  uint64_t infoEnd = pos;
  uint64_t pad = (file.align - infoEnd % file.align) % file.align;
  file.dataStart = infoEnd + pad;
  uint64_t size = bytes.size();
  // With dataOptional, missing data is recorded rather than refused: the
  // header alone gives every tensor's name, shape, type and offset.
  auto missingData = [&](Error e) -> Status {
    if (!dataOptional)
      return e;
    if (file.missing.empty())
      file.missing = e.message;
    return success();
  };
  if (file.dataStart > size && !file.refs.empty())
    if (auto r = missingData(
            makeError(where(infoEnd), ": the data section would start at byte ",
                      file.dataStart, ", past the end of the file (size ", size,
                      "); the file is truncated"));
        !r)
      return r.takeError();
  for (size_t i = 0; i < file.refs.size(); ++i) {
    TensorRef &ref = file.refs[i];
    uint64_t rel = ref.offset;
    if (file.dataStart > size || rel > size - file.dataStart ||
        ref.nbytes > size - file.dataStart - rel)
      if (auto r = missingData(
              makeError(name, ": tensor '", ref.name, "' at byte ",
                        infoOffsets[i], ": data [offset ", rel,
                        " from the data section at ", file.dataStart, ", size ",
                        ref.nbytes, ") runs past the end of the file (size ",
                        size, "); the file is truncated"));
          !r)
        return r.takeError();
    ref.offset = file.dataStart + rel;
  }
  return file;
}

Result<GgufFile> loom::fmt::parseGguf(std::span<const std::byte> bytes,
                                      std::string fileName, bool dataOptional) {
  GgufParser parser(bytes, std::move(fileName), dataOptional);
  return parser.parse();
}

Result<GgufFile> loom::fmt::openGguf(const std::string &path,
                                     bool dataOptional) {
  auto mapped = MappedFile::open(path);
  if (!mapped)
    return mapped.takeError();
  auto shared = std::make_shared<MappedFile>(mapped.take());
  GgufParser parser(shared->bytes(), path, dataOptional);
  auto file = parser.parse();
  if (!file)
    return file.takeError();
  GgufParser::setMapping(*file, std::move(shared));
  return file;
}
