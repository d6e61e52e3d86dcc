"""loom-inspect against gguf.GGUFReader and gguf.quants on files written by
gguf.GGUFWriter: names, formats, shapes, offsets, bytes, metadata, and
dequantized values bit for bit."""

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as T, quants  # noqa: E402

from refcheck import compare_gguf, same_bits  # noqa: E402

QUANTIZED = [T.BF16, T.Q4_0, T.Q4_1, T.Q8_0]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "model.gguf"
    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_uint32("llama.block_count", 2)
    w.add_int32("test.i32", -7)
    w.add_uint64("test.u64", 1 << 40)
    w.add_int64("test.i64", -(1 << 40))
    w.add_float32("test.f32", 1e-5)
    w.add_float64("test.f64", 0.1)
    w.add_bool("test.bool", True)
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 65535)
    w.add_int16("test.i16", -32768)
    w.add_string("test.utf8", "héllo wörld ✓")
    w.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "a", "", "ü"])
    w.add_array("tokenizer.ggml.scores", [0.0, -1.5, 2.25])
    w.add_array("tokenizer.ggml.token_type", [1, 2, 3])
    w.add_array("test.nested", [[1, 2], [3]])

    arrays = {}
    # Shapes outermost-first (numpy order); innermost dims multiples of 32.
    shapes = {"f32": (3, 5), "f16": (4, 6), "bf16": (2, 64), "q4_0": (5, 64),
              "q4_1": (3, 96), "q8_0": (2, 2, 32)}
    for name, shape in shapes.items():
        a = (rng.standard_normal(shape) * 3).astype(np.float32)
        a.flat[0] = 0.0
        arrays[name] = a
        if name == "f32":
            w.add_tensor(name, a)
        elif name == "f16":
            w.add_tensor(name, a.astype(np.float16))
        else:
            qt = {"bf16": T.BF16, "q4_0": T.Q4_0, "q4_1": T.Q4_1,
                  "q8_0": T.Q8_0}[name]
            w.add_tensor(name, quants.quantize(a, qt), raw_dtype=qt)
    # An all-zero block and a block with one outlier.
    z = np.zeros((1, 64), np.float32)
    z[0, 40] = 1000.0
    w.add_tensor("q8_0.outlier", quants.quantize(z, T.Q8_0), raw_dtype=T.Q8_0)
    w.add_tensor("i32", np.arange(12, dtype=np.int32).reshape(3, 4))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_matches_gguf_reader(model, inspect):
    compare_gguf(model, gguf.GGUFReader(str(model)), inspect(model))


def test_strides(model, inspect):
    tensors = {t["name"]: t for t in inspect(model)["tensors"]}
    assert tensors["f32"]["strides"] == [5, 1]
    assert tensors["q8_0"]["strides"] == [2, 1, 1]  # blocks innermost
    assert tensors["q4_1"]["strides"] == [3, 1]


def test_dequantize_bit_exact(model, dequant):
    reader = gguf.GGUFReader(str(model))
    for t in reader.tensors:
        if t.tensor_type.name.startswith("I"):
            ref = np.asarray(t.data).astype(np.float32)
        else:
            ref = quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        mine = dequant(model, t.name)
        assert mine.shape == tuple(int(d) for d in reversed(t.shape))
        assert same_bits(mine, ref.reshape(mine.shape)), t.name


def test_truncated_file_is_an_error(model, tmp_path, inspect_fails):
    data = model.read_bytes()
    reader = gguf.GGUFReader(str(model))
    end = max(t.data_offset + t.n_bytes for t in reader.tensors)
    for cut in (3, 20, 100, len(data) // 2, end - 1):
        bad = tmp_path / f"cut{cut}.gguf"
        bad.write_bytes(data[:cut])
        err = inspect_fails(bad)
        assert str(bad) in err and "byte" in err, err


def test_wrong_magic_and_version(model, tmp_path, inspect_fails):
    data = bytearray(model.read_bytes())
    data[4] = 7
    bad = tmp_path / "version.gguf"
    bad.write_bytes(bytes(data))
    assert "unsupported GGUF version 7" in inspect_fails(bad)
    data[0:4] = b"GGUX"
    bad.write_bytes(bytes(data))
    assert "wrong magic" in inspect_fails(bad)


def test_unsupported_type_named(tmp_path, inspect_fails):
    path = tmp_path / "k.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    # One Q4_K super-block: 256 weights in 144 bytes.
    w.add_tensor("blk.0.ffn_down.weight", np.zeros((1, 144), np.uint8),
                 raw_dtype=T.Q4_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    err = inspect_fails(path)
    assert "tensor 'blk.0.ffn_down.weight'" in err
    assert "Q4_K (type 12) is not supported" in err
