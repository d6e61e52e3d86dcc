"""loom-inspect against safetensors.safe_open on files written by
safetensors.numpy.save_file, one file and a sharded set with an index."""

import json
import struct

import numpy as np
import pytest

safetensors = pytest.importorskip("safetensors")
from safetensors import safe_open  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402

from refcheck import ST_TO_LOOM, fnv1a64, same_bits  # noqa: E402


def tensors_of(seed):
    rng = np.random.default_rng(seed)
    return {
        "model.embed_tokens.weight": rng.standard_normal((7, 5)).astype(np.float32),
        "model.norm.weight": rng.standard_normal(5).astype(np.float16),
        "lm_head.bias": rng.standard_normal(3).astype(np.float64),
        "ids.i8": rng.integers(-128, 127, (2, 3), dtype=np.int8),
        "ids.i16": rng.integers(-1000, 1000, (4,), dtype=np.int16),
        "ids.i32": rng.integers(-10**6, 10**6, (2, 2), dtype=np.int32),
        "ids.i64": rng.integers(-10**12, 10**12, (3,), dtype=np.int64),
        "mask.u8": rng.integers(0, 255, (6,), dtype=np.uint8),
        "mask.bool": rng.integers(0, 2, (2, 2)).astype(bool),
        "scalar": np.array(2.5, dtype=np.float32),
        "empty": np.zeros((0, 4), dtype=np.float32),
    }


def header_of(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    return 8 + n, json.loads(raw[8:8 + n]), raw


def check_file(path, loom_tensors):
    start, header, raw = header_of(path)
    mine = {t["name"]: t for t in loom_tensors if t["file"].endswith(path.name)}
    names = [k for k in header if k != "__metadata__"]
    assert sorted(mine) == sorted(names)
    with safe_open(str(path), framework="np") as f:
        assert sorted(f.keys()) == sorted(names)
        for name in names:
            t, h = mine[name], header[name]
            ref = f.get_tensor(name)
            assert t["format"] == ST_TO_LOOM[h["dtype"]]
            assert t["shape"] == list(ref.shape) == h["shape"]
            assert t["offset"] == start + h["data_offsets"][0]
            assert t["nbytes"] == ref.nbytes
            data = raw[t["offset"]:t["offset"] + t["nbytes"]]
            assert data == np.ascontiguousarray(ref).tobytes()
            assert t["fnv1a64"] == fnv1a64(data)


def test_single_file(tmp_path, inspect, dequant):
    path = tmp_path / "model.safetensors"
    arrays = tensors_of(1)
    save_file(arrays, str(path), metadata={"format": "np", "note": "ü"})
    loom = inspect(path)
    assert loom["format"] == "safetensors"
    assert loom["metadata"] == {"format": "np", "note": "ü"}
    offsets = [t["offset"] for t in loom["tensors"]]
    assert offsets == sorted(offsets)  # file order
    check_file(path, loom["tensors"])
    for name, a in arrays.items():
        if a.size == 0:
            continue
        mine = dequant(path, name)
        ref = a.astype(np.float32)
        assert same_bits(mine, ref.reshape(mine.shape)), name


def test_sharded_with_index(tmp_path, inspect):
    arrays = tensors_of(2)
    names = sorted(arrays)
    shards = [dict((n, arrays[n]) for n in names[:5]),
              dict((n, arrays[n]) for n in names[5:])]
    weight_map = {}
    for i, shard in enumerate(shards):
        fname = f"model-0000{i + 1}-of-00002.safetensors"
        save_file(shard, str(tmp_path / fname))
        weight_map.update({n: fname for n in shard})
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 1}, "weight_map": weight_map}))
    for target in (tmp_path, tmp_path / "model.safetensors.index.json"):
        loom = inspect(target)
        assert len(loom["tensors"]) == len(arrays)
        assert len(loom["files"]) == 2
        for i in range(2):
            check_file(tmp_path / f"model-0000{i + 1}-of-00002.safetensors",
                       loom["tensors"])


def test_errors(tmp_path, inspect_fails):
    path = tmp_path / "model.safetensors"
    save_file(tensors_of(3), str(path))
    data = path.read_bytes()
    for cut in (0, 5, 8, 40, len(data) - 1):
        bad = tmp_path / f"cut{cut}.safetensors"
        bad.write_bytes(data[:cut])
        err = inspect_fails(bad)
        assert str(bad) in err, err
    # A size that does not match shape x dtype.
    header = json.dumps({"w": {"dtype": "F32", "shape": [3],
                               "data_offsets": [0, 8]}}).encode()
    bad = tmp_path / "size.safetensors"
    bad.write_bytes(struct.pack("<Q", len(header)) + header + bytes(8))
    assert "hold 8 bytes but shape x F32 needs 12" in inspect_fails(bad)
