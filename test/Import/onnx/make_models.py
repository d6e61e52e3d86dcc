"""Writes the ONNX models the lit tests in this directory import, and checks
that every loom.weight in an imported module points at its initializer's
bytes.

  make_models.py gen OUTDIR             mlp.onnx encoder.onnx gpt2.onnx llama.onnx
  make_models.py check-weights M.onnx M.mlir
"""
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python" / "onnx"))


def gen(out):
    import torch
    import models

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cases = {
        "mlp": (models.MLP, (3, 5, 32),
                {"x": {0: "b", 1: "s"}, "y": {0: "b", 1: "s"}}),
        "encoder": (models.encoder_layer, (2, 8, 64), None),
        "gpt2": (models.GPT2Block, (1, 8, 64), None),
        "llama": (models.LlamaBlock, (1, 8, 64), None),
    }
    for name, (make, shape, dyn) in cases.items():
        torch.manual_seed(0)
        models.export(make(), torch.randn(*shape), out / f"{name}.onnx", dyn)


WEIGHT = re.compile(r'loom\.weight "([^"]+)" from <"([^"]+)", offset = (\d+)>'
                    r' : tensor<([^>]*)>')


def check_weights(onnx_path, mlir_path):
    """Every loom.weight must name an initializer of the model and its
    offset must hold exactly that initializer's raw_data."""
    import onnx

    model = onnx.load(onnx_path)
    inits = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    inits[node.output[0]] = a.t
    blob = Path(onnx_path).read_bytes()
    found = 0
    for name, path, off, ty in WEIGHT.findall(Path(mlir_path).read_text()):
        assert Path(path).resolve() == Path(onnx_path).resolve(), (name, path)
        t = inits.get(name)
        assert t is not None, f"no initializer '{name}'"
        raw = t.raw_data
        off = int(off)
        assert raw and blob[off:off + len(raw)] == raw, \
            f"'{name}': bytes at offset {off} are not its raw_data"
        dims = [int(d) for d in ty.split("x")[:-1]]
        assert dims == list(t.dims), f"'{name}': type {ty} vs dims {list(t.dims)}"
        found += 1
    assert found, "no loom.weight in " + str(mlir_path)
    print(f"weights ok: {found}")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "gen":
        gen(sys.argv[2])
    elif cmd == "check-weights":
        check_weights(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown command {cmd}")
