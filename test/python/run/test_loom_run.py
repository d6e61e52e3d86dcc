"""End-to-end checks of loom-run against numpy: .npy interchange of every
dtype and NPY version, and a tensor-parallel MLP sharded over 1, 2, 4 and
2x2 ranks compared with the unsharded numpy reference."""

import numpy as np
import pytest

from loomrun_bundle import write_bundle

DTYPES = [("f32", np.float32), ("f16", np.float16), ("f64", np.float64),
          ("i64", np.int64), ("i32", np.int32), ("i8", np.int8),
          ("u8", np.uint8), ("i1", np.bool_)]
SHAPES = [(), (0,), (7,), (2, 3, 4), (1, 5, 0, 2)]


def _array(dtype, shape, rng):
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype,
                            endpoint=True)
    return rng.standard_normal(size=shape).astype(dtype)


@pytest.mark.parametrize("name,dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_npy_roundtrip(tmp_path, compile_kernel, run, name, dtype, shape):
    """Input .npy -> entry (copies it) -> output .npy: same dtype, shape and
    bits; np.load reads what loom-run writes."""
    rng = np.random.default_rng(hash((name, shape)) % 2**32)
    x = _array(dtype, shape, rng)
    lib = compile_kernel("echo.c", RANK=len(shape),
                         ESIZE=np.dtype(dtype).itemsize)
    entry = {"name": "main", "symbol": "loom_entry_main",
             "inputs": [{"name": "x", "dtype": name,
                         "shape": [-1] * len(shape)}],
             "outputs": [{"name": "out", "dtype": name, "rank": len(shape)}],
             "weights": []}
    b = write_bundle(tmp_path / "b", lib, {"tp": 2}, entry)
    np.save(tmp_path / "x.npy", x)
    run(b, "--input", f"x={tmp_path / 'x.npy'}", "--output", tmp_path / "o")
    y = np.load(tmp_path / "o" / "out.npy")
    assert y.dtype == x.dtype and y.shape == x.shape
    assert y.tobytes() == x.tobytes()


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_npy_versions(tmp_path, compile_kernel, run, version):
    """NPY 1.0, 2.0 and 3.0 headers are all read."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with open(tmp_path / "x.npy", "wb") as f:
        np.lib.format.write_array(f, x, version=version)
    lib = compile_kernel("echo.c", RANK=2, ESIZE=4)
    entry = {"name": "main", "symbol": "loom_entry_main",
             "inputs": [{"name": "x", "dtype": "f32", "shape": [3, 4]}],
             "outputs": [{"name": "out", "dtype": "f32", "rank": 2}],
             "weights": []}
    b = write_bundle(tmp_path / "b", lib, {}, entry)
    run(b, "--input", tmp_path / "x.npy", "--output", tmp_path / "o")
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "out.npy"), x)


def test_fortran_order_refused(tmp_path, compile_kernel, run):
    x = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.save(tmp_path / "x.npy", x)
    lib = compile_kernel("echo.c", RANK=2, ESIZE=4)
    entry = {"name": "main", "symbol": "loom_entry_main",
             "inputs": [{"name": "x", "dtype": "f32", "shape": [2, 3]}],
             "outputs": [{"name": "out", "dtype": "f32", "rank": 2}],
             "weights": []}
    b = write_bundle(tmp_path / "b", lib, {}, entry)
    out = run(b, "--input", tmp_path / "x.npy", "--output", tmp_path / "o",
              ok=False)
    assert out.returncode == 1
    assert "Fortran order" in out.stderr


@pytest.mark.parametrize("mesh", [{}, {"tp": 2}, {"tp": 4}, {"dp": 2, "tp": 2}])
def test_tensor_parallel_mlp(tmp_path, compile_kernel, run, mesh):
    """Megatron-style sharded MLP: each rank holds a column shard of W1 and a
    row shard of W2; y = all_reduce(relu(x W1_r) W2_r) equals the
    unsharded relu(x W1) W2; all_gather of the hidden shards equals
    relu(x W1)."""
    rng = np.random.default_rng(0)
    n, d, h = 5, 8, 16
    p = int(np.prod(list(mesh.values()))) if mesh else 1
    x = rng.standard_normal((n, d)).astype(np.float32)
    w1 = rng.standard_normal((d, h)).astype(np.float32)
    w2 = rng.standard_normal((h, d)).astype(np.float32)
    cols = np.split(np.arange(h), p)

    lib = compile_kernel("tp_mlp.c")
    entry = {"name": "main", "symbol": "loom_entry_main",
             "inputs": [{"name": "x", "dtype": "f32", "shape": [-1, d]}],
             "outputs": [{"name": "y", "dtype": "f32", "rank": 2},
                         {"name": "gathered", "dtype": "f32", "rank": 2}],
             "weights": [{"name": "w1", "dtype": "f32", "shape": [d, h // p]},
                         {"name": "w2", "dtype": "f32", "shape": [h // p, d]}]}
    b = write_bundle(tmp_path / "b", lib, mesh, entry,
                     lambda r: [w1[:, cols[r]], w2[cols[r], :]])
    np.save(tmp_path / "x.npy", x)
    run(b, "--input", f"x={tmp_path / 'x.npy'}", "--output", tmp_path / "o",
        "--all-ranks")
    hid = np.maximum(x @ w1, 0)
    ref = hid @ w2
    for r in range(p):
        y = np.load(tmp_path / "o" / f"y.rank{r}.npy")
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
        g = np.load(tmp_path / "o" / f"gathered.rank{r}.npy")
        np.testing.assert_allclose(g, hid, rtol=1e-5, atol=1e-5)
    # Every rank's y is bitwise identical (all_reduce contract).
    ys = [np.load(tmp_path / "o" / f"y.rank{r}.npy").tobytes()
          for r in range(p)]
    assert len(set(ys)) == 1
