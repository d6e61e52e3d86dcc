"""Writes the malformed model files of the --verify-diagnostics tests in
this directory (nothing binary is committed).

  make_bad.py onnx-unknown-op|onnx-attribute|onnx-gelu|onnx-raw-size|
              onnx-cast-saturate|onnx-mod|onnx-runtime-dims OUT.onnx
  make_bad.py safetensors-offsets OUT_DIR    config.json + a tensor past the end
  make_bad.py config-value OUT_DIR           config.json with num_attention_heads 0
"""
import json
import struct
import sys
from pathlib import Path

import numpy as np


def onnx_model(nodes, inits=()):
    from onnx import TensorProto, helper
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])


def write_onnx(case, out):
    import onnx
    from onnx import TensorProto, helper
    if case == "onnx-unknown-op":
        m = onnx_model([helper.make_node("FooBar", ["x"], ["y"], name="weird")])
    elif case == "onnx-attribute":
        m = onnx_model([helper.make_node("Relu", ["x"], ["y"], name="r", alpha=0.1)])
    elif case == "onnx-gelu":
        m = onnx_model([helper.make_node("Gelu", ["x"], ["y"], name="g",
                                         approximate="fast")])
    elif case == "onnx-cast-saturate":
        # Not bad: `saturate` is on Cast's list of attributes that do not
        # change the math (it only applies to float8).
        m = onnx_model([helper.make_node("Cast", ["x"], ["c"], name="c", to=10,
                                         saturate=1),
                        helper.make_node("Cast", ["c"], ["y"], name="back", to=1)])
    elif case == "onnx-mod":
        # Not bad: integer Mod folds with ONNX's signs (fmod=0: the
        # divisor's, -7 mod 3 = 2; fmod=1: the dividend's, -7 fmod 3 = -1).
        a = helper.make_tensor("a", TensorProto.INT64, [2], [-7, 7])
        b = helper.make_tensor("b", TensorProto.INT64, [2], [3, -3])
        g = helper.make_graph(
            [helper.make_node("Mod", ["a", "b"], ["m"], name="m"),
             helper.make_node("Mod", ["a", "b"], ["f"], name="f", fmod=1)],
            "g", [], [helper.make_tensor_value_info("m", TensorProto.INT64, [2]),
                      helper.make_tensor_value_info("f", TensorProto.INT64, [2])],
            [a, b])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    elif case == "onnx-runtime-dims":
        # Not bad: x [s, b, 8] viewed as [s*b, 8] and back to [s, b, 8],
        # arange(s), and a [s, s] ConstantOfShape: run-time sizes.
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["s", "b", 8])
        i64 = lambda n, v: helper.make_tensor(n, TensorProto.INT64, [len(v)], v)  # noqa: E731
        nodes = [
            helper.make_node("Shape", ["x"], ["sh"]),
            helper.make_node("Gather", ["sh", "zero"], ["s"], axis=0),
            helper.make_node("Slice", ["sh", "i0", "i2"], ["sb"]),
            helper.make_node("Reshape", ["x", "flat"], ["f"], name="flat"),
            helper.make_node("Concat", ["sb", "eight"], ["shp"], axis=0),
            helper.make_node("Reshape", ["f", "shp"], ["y"], name="back"),
            helper.make_node("Range", ["zero", "s", "one"], ["pos"], name="range"),
            helper.make_node("Unsqueeze", ["s", "i0"], ["s1"]),
            helper.make_node("Concat", ["s1", "s1"], ["ss"], axis=0),
            helper.make_node("ConstantOfShape", ["ss"], ["mask"], name="cos"),
        ]
        inits = [helper.make_tensor("zero", TensorProto.INT64, [], [0]),
                 helper.make_tensor("one", TensorProto.INT64, [], [1]),
                 i64("i0", [0]), i64("i2", [2]), i64("flat", [-1, 8]), i64("eight", [8])]
        g = helper.make_graph(nodes, "g", [x], [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["s", "b", 8]),
            helper.make_tensor_value_info("pos", TensorProto.INT64, ["s"]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["s", "s"])], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    elif case == "onnx-raw-size":
        w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4],
                        raw_data=b"\0" * 16)
        m = onnx_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [w])
    else:
        raise SystemExit(f"unknown case {case}")
    onnx.save(m, out)


CONFIG = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1,
          "num_attention_heads": 4, "num_key_value_heads": 2,
          "intermediate_size": 128, "vocab_size": 96,
          "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
          "rope_theta": 10000.0, "tie_word_embeddings": True}


def write_safetensors(path, tensors, lie=None):
    """tensors: name -> float32 array; `lie` = (name, extra) makes that
    tensor's data_offsets end `extra` bytes past the data section."""
    header, blobs, at = {}, [], 0
    for name, a in tensors.items():
        b = a.astype(np.float32).tobytes()
        end = at + len(b) + (lie[1] if lie and lie[0] == name else 0)
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [at, end]}
        blobs.append(b)
        at += len(b)
    h = json.dumps(header).encode()
    Path(path).write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    case, out = sys.argv[1], Path(sys.argv[2])
    if case.startswith("onnx-"):
        write_onnx(case, out)
        return
    out.mkdir(parents=True, exist_ok=True)
    cfg = dict(CONFIG)
    if case == "config-value":
        cfg["num_attention_heads"] = 0
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    if case == "safetensors-offsets":
        emb = np.zeros((96, 64), np.float32)
        write_safetensors(out / "model.safetensors",
                          {"model.embed_tokens.weight": emb},
                          lie=("model.embed_tokens.weight", 64))


if __name__ == "__main__":
    main()
