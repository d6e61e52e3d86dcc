"""Models that are not files: an onnx.ModelProto, its bytes and a
torch.nn.Module with example inputs (exported to ONNX in memory), compiled
and run against numpy / torch; the same plan as loomc on the same ONNX."""

import json

import numpy as np
import pytest

import loom
from conftest import run_cli

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _mlp_proto(seed=0):
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((16, 32)).astype(np.float32)
    w2 = rng.standard_normal((32, 8)).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"]),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["y"])],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return m, (w1, w2)


def test_model_proto_compiles_and_runs(tmp_path):
    m, (w1, w2) = _mlp_proto()
    x = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    want = np.maximum(x @ w1, 0) @ w2
    for model in (m, m.SerializeToString()):
        b = loom.compile(model, mesh="tp=2")
        assert b.num_ranks == 2
        np.testing.assert_allclose(b.run(x=x)["y"], want, rtol=1e-5,
                                   atol=1e-4)
    # With `out`, the model file the bundle reads sits beside it.
    b = loom.compile(m, out=tmp_path / "b")
    assert (tmp_path / "b.model.onnx").exists()
    np.testing.assert_allclose(b.run(x=x)["y"], want, rtol=1e-5, atol=1e-4)


def test_model_proto_plan_equals_loomc(tmp_path, loomc):
    m, _ = _mlp_proto()
    path = tmp_path / "mlp.onnx"
    onnx.save(m, path)
    run_cli(loomc, path, "--mesh", "tp=2", "--emit=plan", "-o",
            tmp_path / "plan.json")
    want = json.loads((tmp_path / "plan.json").read_text())
    got = json.loads(loom.plan(m, mesh="tp=2").to_json())
    for d in (want, got):
        d.pop("planner_seconds")
        for f in d["functions"]:  # the locations name the file
            for o in f["ops"]:
                o.pop("loc")
            for c in f["collectives"]:
                c.pop("at")
    assert got == want
    assert "loom.matmul" in loom.ir(m, phase="raise")


def test_torch_module(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                              torch.nn.Linear(32, 8))
    x = torch.randn(4, 16)
    b = loom.compile(net, example_inputs=(x,))
    (name, dtype, shape), = b.inputs()
    assert dtype == "f32" and shape == [4, 16]
    (out,) = b.run({name: x.numpy()}).values()
    np.testing.assert_allclose(out, net(x).detach().numpy(), rtol=1e-4,
                               atol=1e-4)
    with pytest.raises(TypeError, match="example_inputs"):
        loom.compile(net)
