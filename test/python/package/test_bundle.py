"""Bundle.load / Bundle.run: inputs borrowed without a copy, outputs the
executor's buffers, the GIL released while the ranks run; every bad input
a ValueError naming the input and what the entry expects; bundles that
cannot be opened (another format or ABI version, tampered) a BundleError."""

import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import loom

N = 4096  # the big input: N x N f32 = 64 MiB

BIG = f"""\
func.func @total(%x: tensor<{N}x{N}xf32> {{loom.name = "x"}}) -> (tensor<f32> {{loom.name = "s"}}) {{
  %0 = loom.reduce sum %x axes = [0, 1] : tensor<{N}x{N}xf32> -> tensor<f32>
  return %0 : tensor<f32>
}}
"""


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    d = tmp_path_factory.mktemp("big")
    (d / "big.mlir").write_text(BIG)
    return loom.compile(d / "big.mlir", out=d / "bundle", threads=1)


@pytest.fixture(scope="module")
def mlp1(mlp):
    """The MLP on one rank."""
    return loom.compile(mlp / "mlp-plain.mlir", out=mlp / "one-rank")


def _maxrss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_zero_copy_input_address(mlp, mlp1):
    x = np.load(mlp / "x.npy")
    y = mlp1.run(x=x)["y"]
    # The executor was handed the array's own memory.
    assert mlp1._ex.last_input_addresses == [x.ctypes.data]
    # The output wraps the executor's buffer (no numpy-owned copy).
    assert not y.flags.owndata and y.base is not None
    np.testing.assert_allclose(y, np.load(mlp / "reference.npy"), atol=1e-4)


def test_no_copy_of_a_large_input(big):
    x = np.ones((N, N), np.float32)
    x[0, 0] = 5
    s = big.run(x=x)["s"]  # warm: weights, library, first-run buffers
    assert float(s) == N * N + 4
    before = _maxrss_mib()
    for _ in range(3):
        big.run(x=x)
    grew = _maxrss_mib() - before
    assert grew < 16, f"peak RSS grew {grew:.0f} MiB: the input was copied"
    # A copy is visible to this measure: copy_inputs=True makes one.
    big.run(x=x, copy_inputs=True)
    assert _maxrss_mib() - before > 48


# A program that would write its input in place if it could: the
# all_reduce of a slice of x (reduced in a row-major copy, once written
# back into the slice) and of x itself (in place on its operand's buffer).
WRITER = """\
loom.mesh @mesh = <tp = 2>
func.func @f(%x: tensor<4x8xf32> {loom.name = "x"}) -> (tensor<4x4xf32> {loom.name = "y"}, tensor<4x8xf32> {loom.name = "z"}) {
  %s = loom.slice %x starts = [0, 2] limits = [4, 6] steps = [1, 1] : tensor<4x8xf32> -> tensor<4x4xf32>
  %0 = loom.all_reduce %s on @mesh axes = ["tp"] : tensor<4x4xf32>
  %1 = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<4x8xf32>
  return %0, %1 : tensor<4x4xf32>, tensor<4x8xf32>
}
"""


def test_inputs_are_never_written(tmp_path):
    """Both ranks read the caller's array (no copy by default), and the
    compiled code never writes it (loom-bufferize marks entry inputs
    read-only; the manifest says so)."""
    (tmp_path / "w.mlir").write_text(WRITER)
    b = loom.compile(tmp_path / "w.mlir", out=tmp_path / "bundle")
    assert b.num_ranks == 2
    manifest = json.loads((b.path / "manifest.json").read_text())
    assert manifest["inputs_read_only"] is True
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    keep = x.copy()
    for _ in range(2):
        out = b.run(x=x)
        np.testing.assert_array_equal(x, keep)
        np.testing.assert_array_equal(out["y"], 2 * keep[:, 2:6])
        np.testing.assert_array_equal(out["z"], 2 * keep)
    assert b._ex.last_input_addresses == [x.ctypes.data]


# The child's peak from /proc (VmHWM, reset by exec): ru_maxrss of a child
# starts at the forking parent's resident size.
RSS_SCRIPT = """\
import sys
import numpy as np
import loom
def peak_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
b = loom.Bundle.load(sys.argv[1], threads=1)
x = np.ones(({n}, {n}), np.float32)
before = peak_kib()
s = b.run(x=x, copy_inputs=sys.argv[2] == "copy")["s"]
assert float(s) == {n} * {n}, float(s)
print((peak_kib() - before) / 1024)
"""


def _rss_growth_mib(bundle, mode):
    """Peak RSS growth (MiB) of one run of `bundle` with a 64 MiB input, in
    a fresh process (the peak of this one is already high)."""
    r = subprocess.run([sys.executable, "-c", RSS_SCRIPT.format(n=N),
                        str(bundle), mode], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(Path(
                           loom.__file__).parent.parent)), timeout=300)
    assert r.returncode == 0, r.stderr
    return float(r.stdout.split()[-1])


def test_no_copy_of_a_large_input_on_two_ranks(tmp_path):
    """Two thread ranks share the caller's 64 MiB input: no copy per rank
    (each would add 64 MiB to the peak), while copy_inputs=True and a
    bundle without the read-only guarantee (an older loomc's) copy it."""
    (tmp_path / "big.mlir").write_text(BIG)
    b = loom.compile(tmp_path / "big.mlir", mesh="tp=2",
                     out=tmp_path / "bundle", threads=1)
    assert b.num_ranks == 2
    assert _rss_growth_mib(b.path, "borrow") < 16
    assert _rss_growth_mib(b.path, "copy") > 100
    old = _edit_manifest(b.path, tmp_path / "old")
    m = json.loads((old / "manifest.json").read_text())
    del m["inputs_read_only"]
    (old / "manifest.json").write_text(json.dumps(m))
    assert _rss_growth_mib(old, "borrow") > 100


def test_gil_released_during_run(big):
    """A second Python thread keeps counting while run() executes."""
    x = np.ones((N, N), np.float32)
    big.run(x=x)
    count, stop = [0], threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.05)
    during, spent = 0, 0.0
    try:
        for _ in range(5):
            c0, t0 = count[0], time.perf_counter()
            big.run(x=x)
            spent += time.perf_counter() - t0
            during += count[0] - c0
    finally:
        stop.set()
        t.join()
    assert spent > 0.005
    assert during > 1000, (during, spent)


def test_bad_inputs(mlp1, mlp):
    x = np.load(mlp / "x.npy")
    with pytest.raises(ValueError, match=r"input 'x': shape \[8, 256\] does "
                       r"not match \[16, 256\]"):
        mlp1.run(x=x[:8])
    with pytest.raises(ValueError, match=r"input 'x': dtype f64, but entry "
                       r"'mlp' expects f32 \[16, 256\]"):
        mlp1.run(x=x.astype(np.float64))
    with pytest.raises(ValueError, match=r"missing input 'x' \(f32 \[16, 256\]\)"):
        mlp1.run()
    with pytest.raises(ValueError, match=r"has no input 'z' \(inputs: x\)"):
        mlp1.run(x=x, z=x)
    with pytest.raises(ValueError, match=r"input 'x': unsupported dtype; "
                       r"expected f32 \[16, 256\]"):
        mlp1.run(x=x.astype(np.complex64))
    with pytest.raises(ValueError, match="entry 'nope'"):
        mlp1.run(x=x, entry="nope")
    # A nested list is converted to the entry's dtype (then the shape check).
    with pytest.raises(ValueError, match=r"shape \[2, 2\] does not match"):
        mlp1.run(x=[[1, 2], [3, 4]])
    # Non-contiguous arrays are made contiguous (a copy) and run.
    xt = np.asfortranarray(x)
    assert mlp1.run(x=xt)["y"].tobytes() == mlp1.run(x=x)["y"].tobytes()


def _edit_manifest(src, dst, **changes):
    shutil.copytree(src, dst)
    m = json.loads((dst / "manifest.json").read_text())
    m.update(changes)
    (dst / "manifest.json").write_text(json.dumps(m))
    return dst


def test_bundle_errors(mlp1, tmp_path):
    with pytest.raises(loom.BundleError):
        loom.Bundle.load(tmp_path / "missing")
    b = _edit_manifest(mlp1.path, tmp_path / "v", version=99)
    with pytest.raises(loom.BundleError, match="bundle format version 99 is "
                       "not supported"):
        loom.Bundle.load(b)
    b = _edit_manifest(mlp1.path, tmp_path / "abi", abi_version=99)
    with pytest.raises(loom.BundleError, match="ABI version"):
        loom.Bundle.load(b)
    b = tmp_path / "t"
    shutil.copytree(mlp1.path, b)
    lib = next(b.glob("*.so"))
    lib.write_bytes(lib.read_bytes()[:-16] + b"\0" * 16)
    with pytest.raises(loom.BundleError):
        loom.Bundle.load(b)
    with pytest.raises(loom.BundleError, match="ranks"):
        loom.Bundle.load(mlp1.path, ranks=3)


def _scale_program(factor):
    return f"""\
func.func @f(%x: tensor<4xf32> {{loom.name = "x"}}) -> (tensor<4xf32> {{loom.name = "y"}}) {{
  %c = arith.constant dense<{factor}.0> : tensor<4xf32>
  %0 = loom.mul %x, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}}
"""


def test_rebuilt_bundle_at_the_same_path_runs_the_new_code(tmp_path):
    # dlopen would hand back the first library by its name: the executor
    # opens each library by its file, so a bundle rebuilt in place (the
    # library renamed over the old one) runs its new code in the same process.
    x = np.arange(4, dtype=np.float32)
    # Same model file name, so the same library name in the bundle.
    for name, factor in (("a", 2), ("b", 3)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "m.mlir").write_text(_scale_program(factor))
    first = loom.compile(tmp_path / "a" / "m.mlir", out=tmp_path / "bundle")
    np.testing.assert_array_equal(first.run(x=x)["y"], 2 * x)
    second = loom.compile(tmp_path / "b" / "m.mlir", out=tmp_path / "bundle")
    np.testing.assert_array_equal(second.run(x=x)["y"], 3 * x)
    # The first bundle object still runs the code it opened.
    np.testing.assert_array_equal(first.run(x=x)["y"], 2 * x)
    # Opening the unchanged bundle again works (same file, same code).
    again = loom.Bundle.load(tmp_path / "bundle")
    np.testing.assert_array_equal(again.run(x=x)["y"], 3 * x)
