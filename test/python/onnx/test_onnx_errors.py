"""Bad .onnx input: loomc must exit with status 1 (not a signal), print one
message naming the file and the node/tensor at fault, and write no output."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="needs the onnx package")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1]))
from loom_paths import BUILD, LOOMC  # noqa: E402

pytestmark = pytest.mark.skipif(not LOOMC.exists(), reason=f"no loomc in {BUILD}")


def loomc_fails(path, *expect, out=None):
    """Runs `loomc path -o out`; checks exit status 1, no output, and that
    stderr names the file and contains every string in `expect`."""
    out = out or Path(path).with_suffix(".out")
    r = subprocess.run([str(LOOMC), str(path), "-o", str(out)],
                       capture_output=True, timeout=120)
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 1, f"status {r.returncode} (negative: a signal)\n{err}"
    assert str(path) in err, err
    for s in expect:
        assert s in err, f"{s!r} not in:\n{err}"
    assert "Stack dump" not in err and "PLEASE submit" not in err, err
    assert not out.exists(), f"{out} was written"
    return err


def model(nodes, inits=(), opset=14, x_shape=(2, 4)):
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def matmul_model(w):
    return model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [w])


@pytest.fixture
def good(tmp_path):
    """A valid model with a 4x4 weight stored in raw_data."""
    w = numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(4, 4), "w")
    m = matmul_model(w)
    p = tmp_path / "good.onnx"
    onnx.save(m, p)
    r = subprocess.run([str(LOOMC), str(p), "--compile-to=import", "-o",
                        str(tmp_path / "good.mlir")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return p


@pytest.mark.parametrize("frac", [0.0, 0.01, 0.1, 0.5, 0.9, 0.99])
def test_truncated(tmp_path, good, frac):
    data = good.read_bytes()
    cut = max(1, int(len(data) * frac)) if frac else 0
    p = tmp_path / f"cut{cut}.onnx"
    p.write_bytes(data[:cut] if cut < len(data) else data[:-1])
    loomc_fails(p)


def test_random_bytes(tmp_path):
    p = tmp_path / "random.onnx"
    p.write_bytes(np.random.default_rng(0).bytes(4096))
    loomc_fails(p, "not a valid ONNX ModelProto")


def test_wrong_magic(tmp_path):
    p = tmp_path / "zip.onnx"
    p.write_bytes(b"PK\x03\x04" + b"\xff" * 200)
    loomc_fails(p, "not a valid ONNX ModelProto")


def test_unknown_op(tmp_path):
    p = tmp_path / "unknown.onnx"
    onnx.save(model([helper.make_node("FooBar", ["x"], ["y"], name="weird")]), p)
    loomc_fails(p, "node 'weird' (FooBar)", "unsupported op 'FooBar'")


@pytest.mark.parametrize("opset", [0, 30])
def test_unsupported_opset(tmp_path, opset):
    p = tmp_path / f"opset{opset}.onnx"
    onnx.save(model([helper.make_node("Relu", ["x"], ["y"], name="r")], opset=opset), p)
    loomc_fails(p, f"opset {opset} is not supported", "convert_version")


def test_old_opset_conversion_fails(tmp_path):
    """Opsets below 13 go through ONNX's version converter; what it cannot
    adapt (here Softmax 12 -> 13 on an input of unknown shape) is an error
    naming the op."""
    g = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["y"], name="sm")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    p = tmp_path / "softmax11.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]), p)
    loomc_fails(p, "opset 11 could not be upgraded to 17 with ONNX's version "
                "converter", "Softmax")


def test_cycle(tmp_path):
    p = tmp_path / "cycle.onnx"
    onnx.save(model([helper.make_node("Add", ["x", "b"], ["a"], name="n1"),
                     helper.make_node("Relu", ["a"], ["b"], name="n2"),
                     helper.make_node("Identity", ["a"], ["y"], name="n3")]), p)
    loomc_fails(p, "cycle through node 'n1'")


def external(tmp_path):
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    p = tmp_path / "ext.onnx"
    onnx.save(matmul_model(w), p, save_as_external_data=True,
              all_tensors_to_one_file=True, location="ext.bin", size_threshold=0)
    return p, tmp_path / "ext.bin"


def test_external_data_missing(tmp_path):
    p, data = external(tmp_path)
    data.unlink()
    loomc_fails(p, "node 'mm' (MatMul)", "weight 'w'", "ext.bin")


def test_external_data_short(tmp_path):
    p, data = external(tmp_path)
    with open(data, "r+b") as f:
        f.truncate(10)
    loomc_fails(p, "weight 'w'", "runs past the end", "ext.bin")


@pytest.mark.parametrize("dims", [[1 << 40, 1 << 40], [1 << 62, 4], [-3, 4]],
                         ids=["product", "huge", "negative"])
def test_overflowing_dims(tmp_path, dims):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=dims,
                    raw_data=b"\0" * 64)
    p = tmp_path / "dims.onnx"
    onnx.save(matmul_model(t), p)
    loomc_fails(p, "'w'")


def test_overflowing_input_dims(tmp_path):
    p = tmp_path / "xdims.onnx"
    onnx.save(model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                    x_shape=(1 << 62, 1 << 62)), p)
    loomc_fails(p, "graph input 'x'")


def test_raw_data_size_mismatch(tmp_path):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4],
                    raw_data=b"\0" * 16)
    p = tmp_path / "short.onnx"
    onnx.save(matmul_model(t), p)
    loomc_fails(p, "weight 'w' has 16 bytes of raw_data but its shape needs 64")


def test_missing_input(tmp_path):
    p = tmp_path / "arity.onnx"
    onnx.save(model([helper.make_node("Identity", [], ["y"], name="id")]), p)
    loomc_fails(p, "node 'id' (Identity)", "input 0 is missing")


def test_axis_out_of_range(tmp_path):
    p = tmp_path / "axis.onnx"
    onnx.save(model([helper.make_node("Softmax", ["x"], ["y"], name="sm",
                                      axis=-(1 << 40))]), p)
    loomc_fails(p, "node 'sm' (Softmax)", "out of range")


def test_undefined_input(tmp_path):
    p = tmp_path / "undef.onnx"
    onnx.save(model([helper.make_node("Relu", ["nope"], ["y"], name="r")]), p)
    loomc_fails(p, "node 'r' (Relu)", "'nope'")


def test_mutations_never_crash(tmp_path):
    """Random byte flips in the graph part of an exported GPT-2 block: loomc
    either compiles it or fails with status 1, never a signal."""
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(Path(__file__).parent))
    import models

    src = tmp_path / "gpt2.onnx"
    torch.manual_seed(0)
    models.export(models.GPT2Block(), torch.randn(1, 8, 64), src)
    data = src.read_bytes()
    rng = np.random.default_rng(7)
    for i in range(150):
        b = bytearray(data)
        for _ in range(int(rng.integers(1, 4))):
            b[int(rng.integers(0, 4000))] = int(rng.integers(0, 256))
        p = tmp_path / "m.onnx"
        p.write_bytes(bytes(b))
        r = subprocess.run([str(LOOMC), str(p), "--compile-to=import", "-o",
                            str(tmp_path / "m.mlir")], capture_output=True, timeout=120)
        assert r.returncode in (0, 1), \
            f"mutation {i}: status {r.returncode}\n{r.stderr.decode('utf-8', 'replace')[-2000:]}"
