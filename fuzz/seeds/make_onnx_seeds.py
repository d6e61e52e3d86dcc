"""Small valid ONNX models as the ONNX fuzzer's seeds: the one-op models of
ONNX's backend test data (pytorch-operator, simple) and a few folds the
importer does at import time (Shape, Slice, Range, Concat, Reshape).
  make_onnx_seeds.py OUT_DIR"""
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
data = Path(onnx.__file__).parent / "backend/test/data"
# The backend models are opset 6-12: each import of one runs ONNX's version
# converter in a forked child (lib/Import/OnnxConvert.cpp), which was ~90%
# of an onnx_struct execution's time (perf: fork, copy-on-write faults of
# the sanitized parent, libonnx's schemas in the child). So the seeds are
# these models upgraded to opset 17 here, once, with the same converter
# (Python's onnx.version_converter), and only every 8th model also as
# exported: the converter path stays fuzzed (so do the mutated opset
# versions of upgraded models and fuzz/seeds/onnx/'s converter finding), but
# most executions no longer fork.
from onnx import version_converter  # noqa: E402

for sub in ("pytorch-operator", "simple"):
    for i, m in enumerate(sorted((data / sub).glob("*/model.onnx"))):
        if m.stat().st_size >= 16384:
            continue
        name = f"{sub}-{m.parent.name}"
        model = onnx.load(m)
        try:
            up = version_converter.convert_version(model, 17)
            onnx.save(up, out / f"{name}-opset17.onnx")
        except Exception:  # noqa: BLE001  (some adapters are missing)
            shutil.copy(m, out / f"{name}.onnx")
            continue
        if i % 8 == 0:
            shutil.copy(m, out / f"{name}.onnx")


def vi(n, s, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(n, t, s)


i64 = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
nodes = [
    helper.make_node("Shape", ["x"], ["s"]),
    helper.make_node("Slice", ["s", "a", "b"], ["s2"]),
    helper.make_node("Concat", ["s2", "m1"], ["shape"], axis=0),
    helper.make_node("Reshape", ["x", "shape"], ["r"]),
    helper.make_node("Range", ["a", "b", "one"], ["rg"]),
    helper.make_node("Cast", ["rg"], ["rf"], to=TensorProto.FLOAT),
    helper.make_node("Mul", ["r", "half"], ["y0"]),
    helper.make_node("ReduceSum", ["rf"], ["rs"], keepdims=0),
    helper.make_node("Add", ["y0", "rs"], ["y"]),
]
g = helper.make_graph(nodes, "folds", [vi("x", [2, 3, 4])], [vi("y", [2, 12])],
                      [i64("a", [0]), i64("b", [1]), i64("m1", [-1]),
                       i64("one", [1]),
                       numpy_helper.from_array(np.array(0.5, np.float32), "half")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          out / "folds.onnx")
