"""The activations Loom decomposes at import (lib/Import/Onnx/Activation.cpp)
against ONNX Runtime, for the ops and attributes ONNX's backend data does
not cover; and an old-opset (9) PyTorch export upgraded by ONNX's version
converter (docs/IMPORT-ONNX.md)."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from loom_paths import compile_bundle, run_bundle, tool  # noqa: E402

X = np.linspace(-4, 4, 48, dtype=np.float32).reshape(2, 3, 8)


def check(tmp_path, node, extra_inits=(), x=X, opset=17, rtol=1e-5):
    tmp_path = Path(tmp_path) / node.op_type / str(len(list(tmp_path.iterdir())))
    tmp_path.mkdir(parents=True)
    g = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        list(extra_inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    p = tmp_path / "m.onnx"
    onnx.save(m, p)
    want = ort.InferenceSession(str(p)).run(None, {"x": x})[0]
    b = compile_bundle(p, tmp_path / "b", opt_level=1, jobs=1)
    got = run_bundle(b, {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)


CASES = {
    "celu": helper.make_node("Celu", ["x"], ["y"], alpha=0.7),
    "thresholded_relu": helper.make_node("ThresholdedRelu", ["x"], ["y"], alpha=0.5),
    "hard_sigmoid": helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4),
    "hard_swish": helper.make_node("HardSwish", ["x"], ["y"]),
    "leaky_relu": helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.2),
    "elu": helper.make_node("Elu", ["x"], ["y"], alpha=0.5),
    "selu": helper.make_node("Selu", ["x"], ["y"], alpha=1.5, gamma=1.1),
    "softplus": helper.make_node("Softplus", ["x"], ["y"]),
    "softsign": helper.make_node("Softsign", ["x"], ["y"]),
    "sign": helper.make_node("Sign", ["x"], ["y"]),
    "shrink": helper.make_node("Shrink", ["x"], ["y"], lambd=1.5, bias=0.5),
    "log_softmax_axis1": helper.make_node("LogSoftmax", ["x"], ["y"], axis=1),
    "sum3": helper.make_node("Sum", ["x", "x", "x"], ["y"]),
    "mean2": helper.make_node("Mean", ["x", "x"], ["y"]),
    "max3": helper.make_node("Max", ["x", "x", "x"], ["y"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_activation(tmp_path, name):
    check(tmp_path, CASES[name])


def test_softplus_large(tmp_path):
    """log(1 + exp(x)) written so that a large x does not overflow."""
    x = np.array([[-100, -20, 0, 20, 100]], np.float32)
    check(tmp_path, helper.make_node("Softplus", ["x"], ["y"]), x=x)


def test_clip_bounds(tmp_path):
    lo = helper.make_tensor("lo", TensorProto.FLOAT, [], [-1.5])
    hi = helper.make_tensor("hi", TensorProto.FLOAT, [], [2.0])
    check(tmp_path, helper.make_node("Clip", ["x", "lo", "hi"], ["y"]), [lo, hi])
    check(tmp_path, helper.make_node("Clip", ["x", "", "hi"], ["y"]), [hi])


def test_clip_opset6_attributes(tmp_path):
    """Clip-6's min/max attributes become inputs through the converter."""
    check(tmp_path, helper.make_node("Clip", ["x"], ["y"], min=-1.0, max=0.5),
          opset=6)


def test_prelu_channel(tmp_path):
    s = helper.make_tensor("s", TensorProto.FLOAT, [3, 1], [0.1, 0.2, 0.3])
    check(tmp_path, helper.make_node("PRelu", ["x", "s"], ["y"]), [s])


def test_batchnorm(tmp_path):
    ts = [helper.make_tensor(n, TensorProto.FLOAT, [3], v) for n, v in
          [("sc", [1.0, 2.0, 0.5]), ("b", [0.1, -0.2, 0.3]),
           ("m", [0.5, -0.5, 0.0]), ("v", [1.0, 4.0, 0.25])]]
    check(tmp_path, helper.make_node("BatchNormalization",
                                     ["x", "sc", "b", "m", "v"], ["y"],
                                     epsilon=1e-3), ts)


def test_old_opset_torch_export(tmp_path):
    """A PyTorch MLP exported at opset 9 is upgraded to 17 (with a note)
    and matches ONNX Runtime."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LeakyReLU(0.1),
                              torch.nn.Linear(16, 4), torch.nn.LogSoftmax(-1))
    x = torch.randn(5, 8)
    p = tmp_path / "mlp9.onnx"
    torch.onnx.export(net, (x,), str(p), opset_version=9,
                      input_names=["x"], output_names=["y"])
    assert onnx.load(str(p)).opset_import[0].version == 9
    r = subprocess.run([str(tool("loomc")), str(p), "-o", str(tmp_path / "b")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "opset 9 upgraded to 17 with ONNX's version converter" in r.stderr
    xn = x.numpy()
    want = ort.InferenceSession(str(p)).run(None, {"x": xn})[0]
    got = run_bundle(tmp_path / "b", {"x": xn})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_tile(tmp_path):
    r = helper.make_tensor("r", TensorProto.INT64, [3], [2, 1, 3])
    check(tmp_path, helper.make_node("Tile", ["x", "r"], ["y"]), [r])


def test_constant_of_shape_large(tmp_path):
    """A ConstantOfShape over 64 KiB (the light CNNs' weights) is a splat:
    a rank-0 constant broadcast to the shape."""
    x = np.linspace(-1, 1, 300 * 300, dtype=np.float32).reshape(300, 300)
    shape = helper.make_tensor("s", TensorProto.INT64, [2], [300, 300])
    g = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["s"], ["c"],
                          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.5])),
         helper.make_node("Add", ["x", "c"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [300, 300])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [shape])
    p = tmp_path / "cos.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), p)
    b = compile_bundle(p, tmp_path / "b")
    np.testing.assert_array_equal(run_bundle(b, {"x": x})["y"], x + 1.5)


def test_tile_dynamic_refused(tmp_path):
    r = helper.make_tensor("r", TensorProto.INT64, [2], [2, 2])
    g = helper.make_graph(
        [helper.make_node("Tile", ["x", "r"], ["y"], name="t")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [r])
    p = tmp_path / "tile.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), p)
    res = subprocess.run([str(tool("loomc")), str(p), "-o", str(tmp_path / "b")],
                         capture_output=True, text=True)
    assert res.returncode == 1
    assert "node 't' (Tile): Tile of an input with a run-time dimension is not supported" in res.stderr


def test_instance_norm(tmp_path):
    ts = [helper.make_tensor("sc", TensorProto.FLOAT, [3], [1.0, 2.0, 0.5]),
          helper.make_tensor("b", TensorProto.FLOAT, [3], [0.1, -0.2, 0.3])]
    check(tmp_path, helper.make_node("InstanceNormalization", ["x", "sc", "b"],
                                     ["y"], epsilon=1e-3), ts)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad(tmp_path, mode):
    pads = helper.make_tensor("p", TensorProto.INT64, [6], [1, 0, 2, 0, 2, 5])
    inputs = ["x", "p"]
    inits = [pads]
    if mode == "constant":
        inits.append(helper.make_tensor("v", TensorProto.FLOAT, [], [-2.5]))
        inputs.append("v")
    check(tmp_path, helper.make_node("Pad", inputs, ["y"], mode=mode), inits)


def test_pad_negative_refused(tmp_path):
    pads = helper.make_tensor("p", TensorProto.INT64, [6], [0, 0, -1, 0, 0, 0])
    g = helper.make_graph(
        [helper.make_node("Pad", ["x", "p"], ["y"], name="pad")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [pads])
    p = tmp_path / "pad.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), p)
    res = subprocess.run([str(tool("loomc")), str(p), "-o", str(tmp_path / "b")],
                         capture_output=True, text=True)
    assert res.returncode == 1
    assert "node 'pad' (Pad): Pad with negative pads (cropping) is not supported" in res.stderr
