"""Helpers shared by the format reference checks."""

import numpy as np

FNV_OFFSET = 0xcbf29ce484222325
FNV_PRIME = 0x100000001b3

# gguf.GGMLQuantizationType name -> loom format name.
GGML_TO_LOOM = {"F32": "f32", "F16": "f16", "BF16": "bf16", "Q4_0": "q4_0",
                "Q4_1": "q4_1", "Q8_0": "q8_0", "I8": "i8", "I16": "i16",
                "I32": "i32", "I64": "i64", "F64": "f64"}
# gguf.GGUFValueType name -> loom metadata type name.
GGUF_VALUE_TO_LOOM = {"UINT8": "u8", "INT8": "i8", "UINT16": "u16",
                      "INT16": "i16", "UINT32": "u32", "INT32": "i32",
                      "FLOAT32": "f32", "BOOL": "bool", "STRING": "string",
                      "ARRAY": "array", "UINT64": "u64", "INT64": "i64",
                      "FLOAT64": "f64"}
# safetensors dtype -> loom format name.
ST_TO_LOOM = {"F32": "f32", "F16": "f16", "BF16": "bf16", "F64": "f64",
              "I8": "i8", "I16": "i16", "I32": "i32", "I64": "i64",
              "U8": "u8", "BOOL": "bool"}


def fnv1a64(data: bytes) -> int:
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-exact float32 comparison (NaN payloads and -0.0 included)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    b = np.ascontiguousarray(b, dtype=np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32),
                                                 b.view(np.uint32))


def compare_gguf(path, reader, loom, checksum_limit=1 << 62):
    """Checks loom-inspect's JSON against gguf.GGUFReader, tensor by tensor
    and key by key. Checksums are recomputed in Python for tensors up to
    `checksum_limit` bytes (pure-Python FNV is slow)."""
    raw = open(path, "rb").read() if checksum_limit else b""
    assert loom["data_offset"] == reader.data_offset
    assert loom["alignment"] == reader.alignment
    tensors = loom["tensors"]
    assert [t["name"] for t in tensors] == [t.name for t in reader.tensors]
    for mine, ref in zip(tensors, reader.tensors):
        assert mine["format"] == GGML_TO_LOOM[ref.tensor_type.name], mine
        assert mine["shape"] == [int(d) for d in reversed(ref.shape)], mine
        assert mine["offset"] == ref.data_offset, mine
        assert mine["nbytes"] == ref.n_bytes, mine
        if ref.n_bytes <= checksum_limit:
            data = raw[ref.data_offset:ref.data_offset + ref.n_bytes]
            assert mine["fnv1a64"] == fnv1a64(data), mine["name"]

    meta = loom["metadata"]
    fields = {k: f for k, f in reader.fields.items()
              if not k.startswith("GGUF.")}
    assert list(meta) == list(fields)
    for key, field in fields.items():
        entry = meta[key]
        assert entry["type"] == GGUF_VALUE_TO_LOOM[field.types[0].name], key
        if field.types[0].name == "ARRAY":
            assert entry["element_type"] == \
                GGUF_VALUE_TO_LOOM[field.types[1].name], key
            if len(field.types) > 2:
                continue  # nested arrays: GGUFReader has no contents()
            expected = field.contents()
            assert entry["count"] == len(expected), key
        else:
            expected = field.contents()
        value = entry["value"]
        if isinstance(expected, list) and expected and \
                isinstance(expected[0], float):
            assert np.array_equal(np.array(value, dtype=np.float64),
                                  np.array(expected, dtype=np.float64)), key
        else:
            assert value == expected, key
