//===- onnx_struct_fuzzer.cpp - Structure-aware ONNX importer fuzzer ------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//
//
// The ONNX importer fed models whose protobuf structure is mutated instead of
// their bytes: the input is decoded as an onnx::ModelProto, one field
// somewhere in the tree is changed through protobuf reflection (a dim, an
// attribute value, an op type, a tensor's data type or raw bytes, an input
// rewired to another name of the model, an element added, copied, dropped
// or swapped) and the model is serialized again. Byte mutations rarely
// survive protobuf decoding deep in a graph; these always do, so the
// importer's checks and folds see well-formed models with hostile values.
//
// Debian 12 has no libprotobuf-mutator package (the usual tool for this),
// so the mutator is the small reflection walk below over Debian's
// libprotobuf. Inputs that do not decode are mutated as bytes. The model
// then goes through what onnx_fuzzer.cpp runs (OnnxTarget.h). Built by
// fuzz/run-compiler.sh (target onnx_struct, seeds shared with onnx).
//
//===----------------------------------------------------------------------===//

#include "OnnxTarget.h"

#include "onnx/onnx_pb.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

struct Mutator {
  std::minstd_rand rng;
  std::vector<Message *> messages; // every message of the tree
  std::vector<std::string> names;  // every string of the tree

  explicit Mutator(unsigned seed) : rng(seed) {}

  size_t pick(size_t n) { return n ? rng() % n : 0; }

  void collect(Message &m, int depth) {
    if (depth > 32 || messages.size() > 4096)
      return;
    messages.push_back(&m);
    const Reflection *r = m.GetReflection();
    std::vector<const FieldDescriptor *> fields;
    r->ListFields(m, &fields);
    for (const FieldDescriptor *f : fields) {
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        if (f->is_repeated())
          for (int i = 0; i < r->FieldSize(m, f); ++i)
            collect(*r->MutableRepeatedMessage(&m, f, i), depth + 1);
        else
          collect(*r->MutableMessage(&m, f), depth + 1);
      } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING &&
                 f->type() != FieldDescriptor::TYPE_BYTES &&
                 names.size() < 1024) {
        if (f->is_repeated())
          for (int i = 0; i < r->FieldSize(m, f); ++i)
            names.push_back(r->GetRepeatedString(m, f, i));
        else
          names.push_back(r->GetString(m, f));
      }
    }
  }

  int64_t integer(int64_t old) {
    static constexpr int64_t special[] = {0,
                                          1,
                                          -1,
                                          2,
                                          3,
                                          4,
                                          7,
                                          8,
                                          16,
                                          255,
                                          256,
                                          65535,
                                          65536,
                                          std::numeric_limits<int32_t>::max(),
                                          std::numeric_limits<int32_t>::min(),
                                          std::numeric_limits<int64_t>::max(),
                                          std::numeric_limits<int64_t>::min(),
                                          int64_t(1) << 32,
                                          int64_t(1) << 62,
                                          -(int64_t(1) << 62)};
    switch (pick(5)) {
    case 0:
      return special[pick(std::size(special))];
    case 1:
      return int64_t(uint64_t(old) + 1);
    case 2:
      return int64_t(uint64_t(old) - 1);
    case 3:
      return int64_t(uint64_t(old) * 2);
    default:
      return int64_t(pick(64)) - 8;
    }
  }

  double real(double old) {
    static constexpr double special[] = {
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        1e-45,
        1e30,
        -1e30,
        3.4e38,
        std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::quiet_NaN()};
    if (pick(3) == 0)
      return old * -2.0;
    return special[pick(std::size(special))];
  }

  std::string text(const std::string &old, bool bytes) {
    if (!bytes && !names.empty() && pick(3) != 0)
      return names[pick(names.size())]; // rewire to another name of the model
    std::string s = old;
    size_t cap = s.size() * 2 + 16;
    s.resize(cap);
    size_t n = LLVMFuzzerMutate(reinterpret_cast<uint8_t *>(s.data()),
                                old.size(), cap);
    s.resize(n);
    return s;
  }

  void setScalar(Message &m, const FieldDescriptor *f, int index) {
    const Reflection *r = m.GetReflection();
    bool rep = index >= 0;
#define LOOM_SET(Type, value)                                                  \
  (rep ? r->SetRepeated##Type(&m, f, index, value) : r->Set##Type(&m, f, value))
#define LOOM_GET(Type)                                                         \
  (rep ? r->GetRepeated##Type(m, f, index) : r->Get##Type(m, f))
    switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      LOOM_SET(Int32, int32_t(integer(LOOM_GET(Int32))));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      LOOM_SET(Int64, integer(LOOM_GET(Int64)));
      break;
    case FieldDescriptor::CPPTYPE_UINT32:
      LOOM_SET(UInt32, uint32_t(integer(LOOM_GET(UInt32))));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      LOOM_SET(UInt64, uint64_t(integer(int64_t(LOOM_GET(UInt64)))));
      break;
    case FieldDescriptor::CPPTYPE_FLOAT:
      LOOM_SET(Float, float(real(LOOM_GET(Float))));
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      LOOM_SET(Double, real(LOOM_GET(Double)));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      LOOM_SET(Bool, !LOOM_GET(Bool));
      break;
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto *e = f->enum_type();
      LOOM_SET(Enum, e->value(int(pick(size_t(e->value_count())))));
      break;
    }
    case FieldDescriptor::CPPTYPE_STRING:
      LOOM_SET(String, text(LOOM_GET(String),
                            f->type() == FieldDescriptor::TYPE_BYTES));
      break;
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
    }
#undef LOOM_SET
#undef LOOM_GET
  }

  /// One change to one field of one message of the tree.
  void mutate(Message &root) {
    collect(root, 0);
    Message &m = *messages[pick(messages.size())];
    const Reflection *r = m.GetReflection();
    const auto *d = m.GetDescriptor();
    if (d->field_count() == 0)
      return;
    const FieldDescriptor *f = d->field(int(pick(size_t(d->field_count()))));
    bool isMsg = f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    if (!f->is_repeated()) {
      if (isMsg || pick(8) == 0)
        r->ClearField(&m, f); // drop it (a message is mutated in place)
      else
        setScalar(m, f, -1);
      return;
    }
    int n = r->FieldSize(m, f);
    switch (n == 0 ? 0 : pick(5)) {
    case 0: // add an element: a copy of one, or a new one
      if (isMsg) {
        Message *added = r->AddMessage(&m, f);
        if (n > 0)
          added->CopyFrom(r->GetRepeatedMessage(m, f, int(pick(size_t(n)))));
      } else {
        switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT32:
          r->AddInt32(&m, f, 0);
          break;
        case FieldDescriptor::CPPTYPE_INT64:
          r->AddInt64(&m, f, 1);
          break;
        case FieldDescriptor::CPPTYPE_UINT32:
          r->AddUInt32(&m, f, 0);
          break;
        case FieldDescriptor::CPPTYPE_UINT64:
          r->AddUInt64(&m, f, 0);
          break;
        case FieldDescriptor::CPPTYPE_FLOAT:
          r->AddFloat(&m, f, 1.0f);
          break;
        case FieldDescriptor::CPPTYPE_DOUBLE:
          r->AddDouble(&m, f, 1.0);
          break;
        case FieldDescriptor::CPPTYPE_BOOL:
          r->AddBool(&m, f, true);
          break;
        case FieldDescriptor::CPPTYPE_ENUM:
          r->AddEnum(&m, f, f->enum_type()->value(0));
          break;
        case FieldDescriptor::CPPTYPE_STRING:
          r->AddString(&m, f, names.empty() ? "" : names[pick(names.size())]);
          break;
        default:
          break;
        }
      }
      break;
    case 1: { // drop one
      int i = int(pick(size_t(n)));
      r->SwapElements(&m, f, i, n - 1);
      r->RemoveLast(&m, f);
      break;
    }
    case 2: // swap two
      r->SwapElements(&m, f, int(pick(size_t(n))), int(pick(size_t(n))));
      break;
    default: // change one (a message is mutated when it is picked itself)
      if (!isMsg)
        setScalar(m, f, int(pick(size_t(n))));
      else
        r->RemoveLast(&m, f);
      break;
    }
  }
};
} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  onnx::ModelProto model;
  if (size == 0 || !model.ParseFromArray(data, int(size)))
    return LLVMFuzzerMutate(data, size, maxSize);
  Mutator mut(seed);
  int rounds = 1 + int(mut.pick(3));
  for (int i = 0; i < rounds; ++i) {
    mut.messages.clear();
    mut.names.clear();
    mut.mutate(model);
  }
  std::string out;
  if (!model.SerializeToString(&out) || out.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return runOnnxModel(data, size);
}
