"""The light CNNs' weights are constants (ConstantOfShape 0.02), so their
softmax output is a uniform 0.001 and the conformance suite's "exact" says
little. This compares what feeds each softmax (the logits) and each LRN
output with ONNX Runtime instead, on the backend runner's input
(arange(n)/n): each is added as a graph output, compiled with loomc and run
through the `loom` package. Prints max |loom - ORT| / max |ORT| per value
(docs/IMPORT-ONNX.md, "Conformance").

    LOOM_BUILD_DIR=build .venv/bin/python \\
        test/python/onnx_conformance/light_logits.py [model ...]
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).parents[1]))
from loom_paths import build_dir  # noqa: E402

MODELS = ["bvlc_alexnet", "zfnet512", "inception_v1", "vgg19", "squeezenet",
          "resnet50", "shufflenet"]


def main(models: list[str]) -> int:
    sys.path.insert(0, str(build_dir() / "python"))
    import loom
    light = Path(onnx.__file__).parent / "backend/test/data/light"
    print("| model | value | what | max abs err / max abs ref |")
    print("|---|---|---|---|")
    for name in models:
        m = onnx.load(str(light / f"light_{name}.onnx"))
        extra = {}
        for n in m.graph.node:
            if n.op_type == "LRN":
                extra[n.output[0]] = "LRN output"
            if n.op_type == "Softmax":
                extra[n.input[0]] = "logits"
        for e in extra:
            m.graph.output.append(
                helper.make_tensor_value_info(e, TensorProto.FLOAT, None))
        inits = {i.name for i in m.graph.initializer}
        feeds = {}
        for x in m.graph.input:
            if x.name not in inits:
                shape = [d.dim_value or 1 for d in x.type.tensor_type.shape.dim]
                n = int(np.prod(shape))
                feeds[x.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
        with tempfile.TemporaryDirectory() as d:
            path, out = Path(d) / "m.onnx", Path(d) / "out"
            onnx.save(m, str(path))
            subprocess.run([str(build_dir() / "bin" / "loomc"), "-O", "1",
                            str(path), "-o", str(out)], check=True,
                           capture_output=True)
            want = ort.InferenceSession(str(path)).run(list(extra), feeds)
            got = loom.Bundle.load(str(out)).run(feeds, copy_inputs=True)
            for (e, what), w in zip(extra.items(), want):
                err = np.max(np.abs(np.asarray(got[e]) - w)) / np.max(np.abs(w))
                print(f"| {name} | {e} | {what} | {err:.1e} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or MODELS))
