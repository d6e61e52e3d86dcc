"""A small CNN exported from torch (Conv2d + BatchNorm + ReLU + MaxPool +
depthwise Conv2d + AvgPool + Linear) compiled by loomc and run by loom-run
on 1 rank, on dp=2 (batch split) and on tp=2 (output channels split),
against ONNX Runtime; and single Conv/ConvTranspose/Pool nodes with the
attributes torch does not export (auto_pad, ceil_mode, count_include_pad,
output_shape, 1-D and 3-D) compiled and run through the package
(loom_paths) against ONNX Runtime (docs/IMPORT-ONNX.md). The CNN keeps
loom-run for every rank's output (--all-ranks)."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs torch (Debian python3-torch)")
ort = pytest.importorskip("onnxruntime", reason="needs onnxruntime (pip)")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))
import models  # noqa: E402
from loom_paths import compile_bundle, run_bundle, run_ok as run  # noqa: E402
from loom_paths import BUILD, LOOMC, LOOM_RUN  # noqa: E402

pytestmark = pytest.mark.skipif(not LOOMC.exists(), reason=f"no loomc in {BUILD}")


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool1 = nn.MaxPool2d(2)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.pool2 = nn.AvgPool2d(2)
        self.fc = nn.Linear(16 * 2 * 2, 10)
        # Running statistics that matter.
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.2, 0.2)

    def forward(self, x):
        x = self.pool1(torch.relu(self.bn1(self.conv1(x))))
        # ReLU before the norm: the exporter cannot fold this BatchNorm into
        # a convolution, so it stays a BatchNormalization node.
        x = self.bn2(torch.relu(self.dw(x)))
        x = self.pool2(torch.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cnn")
    torch.manual_seed(0)
    path = tmp / "cnn.onnx"
    models.export(SmallCNN(), torch.randn(4, 3, 16, 16), path, None, opset=13)
    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert {"Conv", "MaxPool", "AveragePool", "BatchNormalization"} <= ops, ops
    return path


@pytest.mark.parametrize("mesh", [None, "dp=2", "tp=2"])
def test_small_cnn(tmp_path, cnn, mesh):
    out = tmp_path / "out"
    run([LOOMC, cnn, "-o", out] + (["--mesh", mesh] if mesh else []))
    x = np.random.default_rng(1).standard_normal((4, 3, 16, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    run([LOOM_RUN, out, "--input", f"x={tmp_path}/x.npy", "--output",
         tmp_path / "res", "--all-ranks"])
    want = ort.InferenceSession(str(cnn)).run(None, {"x": x})[0]
    n = 1 if mesh is None else 2
    for r in range(n):
        got = np.load(tmp_path / "res" / f"y.rank{r}.npy")
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err <= 1e-4, f"{mesh} rank {r}: max relative error {err:.3g}"
    if mesh:
        # The plan split the first convolution: each rank computes a batch
        # of 2 or half of its 8 output channels (the planner's choice on
        # tp; dp only splits the batch).
        ir = (out / "ir" / "program.mlir").read_text()
        split = ["tensor<2x8x16x16xf32>"] + (
            ["tensor<4x4x16x16xf32>"] if mesh == "tp=2" else [])
        assert any(t in ir for t in split), \
            f"{mesh}: conv1 is not split in the partitioned program"


def _node_model(path, op, x_shape, w_shape=None, bias=False, **attrs):
    """One node `op` on input x (and weight w, bias b as initializers)."""
    rng = np.random.default_rng(0)
    inits, inputs = [], ["x"]
    if w_shape is not None:
        w = rng.standard_normal(w_shape).astype(np.float32)
        inits.append(helper.make_tensor("w", TensorProto.FLOAT, w.shape,
                                        w.tobytes(), raw=True))
        inputs.append("w")
        if bias:
            m = w_shape[1] * attrs.get("group", 1) if op == "ConvTranspose" \
                else w_shape[0]
            b = rng.standard_normal(m).astype(np.float32)
            inits.append(helper.make_tensor("b", TensorProto.FLOAT, b.shape,
                                            b.tobytes(), raw=True))
            inputs.append("b")
    node = helper.make_node(op, inputs, ["y"], name="n", **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


CASES = {
    "conv_same_upper": ("Conv", (1, 3, 7, 8), (4, 3, 3, 2), True,
                        dict(auto_pad="SAME_UPPER", strides=[2, 3])),
    "conv_same_lower": ("Conv", (1, 3, 7, 8), (4, 3, 2, 3), False,
                        dict(auto_pad="SAME_LOWER", strides=[2, 2])),
    "conv_valid_dilated": ("Conv", (2, 4, 9, 9), (6, 2, 3, 3), True,
                           dict(auto_pad="VALID", dilations=[2, 1], group=2)),
    "conv_asym_pads_1d": ("Conv", (1, 2, 10), (3, 2, 4), True,
                          dict(pads=[2, 1], strides=[3])),
    "conv_3d_groups": ("Conv", (1, 4, 5, 6, 5), (4, 2, 2, 3, 2), True,
                       dict(pads=[1, 0, 1, 0, 1, 1], group=2)),
    "conv_4d_spatial": ("Conv", (1, 2, 4, 3, 4, 3), (3, 2, 2, 2, 2, 2), False,
                        dict()),
    "convt_output_shape": ("ConvTranspose", (1, 4, 3, 3), (4, 2, 3, 3), True,
                           dict(strides=[3, 2], output_shape=[8, 6])),
    "convt_groups_dil_pad": ("ConvTranspose", (1, 4, 4, 5), (4, 3, 3, 2), True,
                             dict(group=2, dilations=[2, 1], strides=[2, 2],
                                  pads=[1, 2, 3, 0], output_padding=[1, 1])),
    "convt_same_upper_1d": ("ConvTranspose", (1, 2, 5), (2, 3, 3), False,
                            dict(auto_pad="SAME_UPPER", strides=[2])),
    "maxpool_ceil_dil": ("MaxPool", (1, 3, 9, 10), None, False,
                         dict(kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1,
                              dilations=[2, 1], pads=[1, 0, 1, 1])),
    "maxpool_same_3d": ("MaxPool", (1, 2, 5, 6, 7), None, False,
                        dict(kernel_shape=[2, 3, 2], auto_pad="SAME_LOWER",
                             strides=[2, 2, 2])),
    "avgpool_ceil_exclude": ("AveragePool", (1, 3, 9, 10), None, False,
                             dict(kernel_shape=[3, 3], strides=[2, 2],
                                  ceil_mode=1, pads=[1, 1, 1, 1])),
    "avgpool_ceil_include": ("AveragePool", (1, 3, 9, 10), None, False,
                             dict(kernel_shape=[3, 3], strides=[2, 2],
                                  ceil_mode=1, pads=[1, 1, 1, 1],
                                  count_include_pad=1)),
    "avgpool_include_1d": ("AveragePool", (2, 3, 11), None, False,
                           dict(kernel_shape=[4], pads=[2, 1],
                                count_include_pad=1)),
    "avgpool_3d_same": ("AveragePool", (1, 2, 5, 5, 4), None, False,
                        dict(kernel_shape=[3, 2, 3], auto_pad="SAME_UPPER")),
    "global_avg": ("GlobalAveragePool", (2, 3, 5, 4), None, False, dict()),
    "global_max": ("GlobalMaxPool", (2, 3, 5), None, False, dict()),
    "dropout_inference": ("Dropout", (2, 3, 4), None, False, dict(seed=3)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_node(tmp_path, case):
    op, xs, ws, bias, attrs = CASES[case]
    path = tmp_path / f"{case}.onnx"
    _node_model(path, op, list(xs), ws, bias, **attrs)
    compile_bundle(path, tmp_path / "out")
    x = np.random.default_rng(2).standard_normal(xs).astype(np.float32)
    want = ort.InferenceSession(str(path)).run(None, {"x": x})[0]
    got = run_bundle(tmp_path / "out", {"x": x})["y"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_maxpool_indices_refused(tmp_path):
    path = tmp_path / "mp.onnx"
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], name="mp",
                            kernel_shape=[2, 2])
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    onnx.save(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17)]), str(path))
    r = subprocess.run([str(LOOMC), str(path), "-o", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "node 'mp' (MaxPool): MaxPool's Indices output is not supported" \
        in r.stderr, r.stderr
