"""Inputs that crashed or hung the compiler: valid models the raise pass
assumed shapes for, and malformed folds of the importer. Each must compile
(valid ones, matching ONNX Runtime where it runs) or be refused with exit 1:
never a signal, never a hang."""
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


def loomc(path, phase="raise", timeout=60):
    out = Path(path).with_suffix(".out.mlir")
    r = subprocess.run([str(LOOMC), str(path), f"--compile-to={phase}", "-o",
                        str(out)], capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode in (0, 1), f"exit {r.returncode}\n{r.stderr}"
    assert "Stack dump" not in r.stderr and "PLEASE submit" not in r.stderr
    if r.returncode:
        assert not out.exists()
    return r


def save(tmp_path, nodes, inputs, outputs, inits=(), opset=17, name="m"):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    p = tmp_path / f"{name}.onnx"
    onnx.save(m, p)
    return p


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def test_scale_of_a_vector(tmp_path):
    # y = x * 0.5 with a 1-D x: the raise pass read the last dim of a 0-D
    # constant (SIGSEGV in isLastDimVector).
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    p = save(tmp_path, [helper.make_node("Mul", ["x", "half"], ["y"])],
             [vi("x", [8])], [vi("y", [8])], [half])
    r = loomc(p)
    assert r.returncode == 0, r.stderr


def test_operator_mm_from_onnx_backend_data(tmp_path):
    # ONNX's own test_operator_mm (Gemm with alpha beside a constant).
    data = Path(onnx.__file__).parent / "backend/test/data/pytorch-operator"
    src = data / "test_operator_mm" / "model.onnx"
    if not src.exists():
        pytest.skip("the onnx wheel has no backend test data")
    m = onnx.load(src)
    m = onnx.version_converter.convert_version(m, 17)
    p = tmp_path / "mm.onnx"
    onnx.save(m, p)
    r = loomc(p)
    assert r.returncode == 0, r.stderr


def slice_model(tmp_path, starts, ends, axes=None, steps=None, name="s"):
    x = numpy_helper.from_array(np.arange(10, dtype=np.int64), "data")
    inits = [x, numpy_helper.from_array(np.array(starts, np.int64), "st"),
             numpy_helper.from_array(np.array(ends, np.int64), "en")]
    ins = ["data", "st", "en"]
    if axes is not None:
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "ax"))
        ins.append("ax")
    if steps is not None:
        if axes is None:
            ins.append("")
        inits.append(numpy_helper.from_array(np.array(steps, np.int64), "sp"))
        ins.append("sp")
    nodes = [helper.make_node("Slice", ins, ["s"]),
             helper.make_node("Cast", ["s"], ["sf"], to=TensorProto.FLOAT),
             helper.make_node("ReduceSum", ["sf"], ["r"], keepdims=1),
             helper.make_node("Add", ["x", "r"], ["y"])]
    return save(tmp_path, nodes, [vi("x", [1])], [vi("y", [1])], inits,
                name=name)


@pytest.mark.parametrize("starts,ends,axes,steps,ok", [
    ([0], [10], None, [0], False),           # step 0: looped until OOM
    ([], [10], None, None, False),           # no start: read past a vector
    ([0], [], None, None, False),
    ([0], [10], [3], None, False),           # axis out of range
    ([0], [10], None, [2**62], True),        # huge step: one element
    ([9], [-2**63], None, [-2**62], True),   # huge negative step
    ([-2**63], [2**63 - 1], None, [1], True),
    ([2], [8], [0], [3], True),
])
def test_slice_folding(tmp_path, starts, ends, axes, steps, ok):
    p = slice_model(tmp_path, starts, ends, axes, steps)
    r = loomc(p, "import", timeout=30)
    assert (r.returncode == 0) == ok, r.stderr
    if not ok:
        assert "Slice" in r.stderr or "axis" in r.stderr, r.stderr


@pytest.mark.parametrize("case", [
    "reshape_bad", "transpose_bad_perm", "unsqueeze_bad_axis", "range_inf",
    "range_huge", "cos_negative", "trilu_vector", "concat_ranks",
    "pow_huge", "div_overflow", "where_float_cond", "expand_negative",
    "max_one_input", "gather_float_idx",
])
def test_malformed_folds(tmp_path, case):
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    f32 = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)  # noqa: E731
    c = {
        "reshape_bad": ([helper.make_node("Reshape", ["a", "s"], ["o"])],
                        [i64("a", [1, 2, 3, 4]), i64("s", [-1, -1])]),
        "transpose_bad_perm": ([helper.make_node("Transpose", ["a"], ["o"], perm=[0, 0])],
                               [i64("a", [[1, 2], [3, 4]])]),
        "unsqueeze_bad_axis": ([helper.make_node("Unsqueeze", ["a", "s"], ["o"])],
                               [i64("a", [1, 2]), i64("s", [7])]),
        "range_inf": ([helper.make_node("Range", ["s", "l", "d"], ["o"])],
                      [f32("s", 0.0), f32("l", np.inf), f32("d", 1.0)]),
        "range_huge": ([helper.make_node("Range", ["s", "l", "d"], ["o"])],
                       [i64("s", 0), i64("l", 2**62), i64("d", 1)]),
        "cos_negative": ([helper.make_node("ConstantOfShape", ["s"], ["o"])],
                         [i64("s", [-3, 2])]),
        "trilu_vector": ([helper.make_node("Trilu", ["a"], ["o"])],
                         [i64("a", [1, 2, 3])]),
        "concat_ranks": ([helper.make_node("Concat", ["a", "b"], ["o"], axis=0)],
                         [i64("a", [1, 2]), i64("b", [[1, 2]])]),
        "pow_huge": ([helper.make_node("Pow", ["a", "b"], ["o"])],
                     [i64("a", [3]), i64("b", [2**62])]),
        "div_overflow": ([helper.make_node("Div", ["a", "b"], ["o"])],
                         [i64("a", [-2**63]), i64("b", [-1])]),
        "where_float_cond": ([helper.make_node("Where", ["c", "a", "b"], ["o"])],
                             [f32("c", [1.0]), i64("a", [1]), i64("b", [2])]),
        "expand_negative": ([helper.make_node("Expand", ["a", "s"], ["o"])],
                            [i64("a", [1]), i64("s", [-5])]),
        "max_one_input": ([helper.make_node("Max", ["a"], ["o"])],
                          [i64("a", [1, 2])]),
        "gather_float_idx": ([helper.make_node("Gather", ["a", "b"], ["o"])],
                             [i64("a", [1, 2]), f32("b", [0.0])]),
    }[case]
    nodes, inits = c
    nodes = nodes + [helper.make_node("Cast", ["o"], ["of"], to=TensorProto.FLOAT),
                     helper.make_node("ReduceSum", ["of"], ["r"], keepdims=0),
                     helper.make_node("Add", ["x", "r"], ["y"])]
    p = save(tmp_path, nodes, [vi("x", [1])], [vi("y", [1])], inits, name=case)
    loomc(p, "import", timeout=30)



@pytest.mark.parametrize("case,message", [
    # An empty perm on a rank-2 value indexed past it (no check ran).
    ("transpose_empty_perm", "not a permutation of the input's 2 axes"),
    ("squeeze_size_2", "Squeeze of axis 1 of size 2"),
    ("unsqueeze_repeat", "Unsqueeze repeats axis 0"),
    ("reshape_count", "Reshape of 4 elements to shape [3] changes the element count"),
    ("concat_dims", "Concat input 1 has size 3 in dimension 1 where input 0 has 2"),
])
def test_folders_check_their_inputs(tmp_path, case, message):
    # Each folder (lib/Import/Onnx/Fold.cpp) checks the attributes and input
    # values it uses: one error naming the node and what is wrong, exit 1.
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    empty_perm = helper.make_node("Transpose", ["a"], ["o"])
    empty_perm.attribute.append(
        helper.make_attribute("perm", [], attr_type=onnx.AttributeProto.INTS))
    nodes, inits = {
        "transpose_empty_perm": ([empty_perm], [i64("a", [[1, 2], [3, 4]])]),
        "squeeze_size_2": ([helper.make_node("Squeeze", ["a", "s"], ["o"])],
                           [i64("a", [[1, 2]]), i64("s", [1])]),
        "unsqueeze_repeat": ([helper.make_node("Unsqueeze", ["a", "s"], ["o"])],
                             [i64("a", [1, 2]), i64("s", [0, 0])]),
        "reshape_count": ([helper.make_node("Reshape", ["a", "s"], ["o"])],
                          [i64("a", [1, 2, 3, 4]), i64("s", [3])]),
        "concat_dims": ([helper.make_node("Concat", ["a", "b"], ["o"], axis=0)],
                        [i64("a", [[1, 2]]), i64("b", [[1, 2, 3]])]),
    }[case]
    nodes = nodes + [helper.make_node("Cast", ["o"], ["of"], to=TensorProto.FLOAT),
                     helper.make_node("ReduceSum", ["of"], ["r"], keepdims=0),
                     helper.make_node("Add", ["x", "r"], ["y"])]
    p = save(tmp_path, nodes, [vi("x", [1])], [vi("y", [1])], inits, name=case)
    r = loomc(p, "import", timeout=30)
    assert r.returncode == 1, r.stderr
    assert message in r.stderr and "node" in r.stderr, r.stderr

def test_range_int64_near_the_limits(tmp_path):
    # Integer Range folded in int64: start + i * delta overflowed (UBSan in
    # onnx_fuzzer, fuzz/seeds/onnx/ubsan-range-int64-overflow.onnx) when the
    # span (limit - start) exceeds int64 though every element fits. Now in
    # 128 bits: 48 elements, the last -2^62 + 47 * 2^58.
    i64 = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    p = save(tmp_path, [helper.make_node("Range", ["s", "l", "d"], ["y"])],
             [], [vi("y", [48], TensorProto.INT64)],
             [i64("s", -2**62), i64("l", 2**63 - 1), i64("d", 2**58)],
             name="range_int64")
    r = loomc(p, phase="import")
    assert r.returncode == 0, r.stderr
    text = p.with_suffix(".out.mlir").read_text()
    assert str(-2**62 + 47 * 2**58) in text, text


@pytest.mark.parametrize("to,want", [(TensorProto.UINT8, [44, 255, 200]),
                                     (TensorProto.INT8, [44, -1, -56])])
def test_integer_cast_fold_wraps(tmp_path, to, want):
    # Cast of int64 [300, -1, 200] folded at import: wraps to the target
    # width as ONNX Runtime does ([44, 255, 200] / [44, -1, -56]); the
    # unwrapped value reached APInt (an assertion in onnx_fuzzer,
    # fuzz/seeds/onnx/assert-apint-folded-value-too-wide.onnx).
    a = numpy_helper.from_array(np.array([300, -1, 200], np.int64), "a")
    nodes = [helper.make_node("Cast", ["a"], ["o"], to=to),
             helper.make_node("Cast", ["o"], ["of"], to=TensorProto.FLOAT),
             helper.make_node("ReduceSum", ["of"], ["r"], keepdims=0),
             helper.make_node("Add", ["x", "r"], ["y"])]
    p = save(tmp_path, nodes, [vi("x", [1])], [vi("y", [1])], [a],
             name="cast_wrap")
    r = loomc(p, phase="import")
    assert r.returncode == 0, r.stderr
    text = p.with_suffix(".out.mlir").read_text()
    assert "dense<[" + ", ".join(f"{v:.6e}" for v in want) + "]>" in text, text


def test_concat_of_different_ranks(tmp_path):
    # Concat of a [2, 3] and a [2] on axis 1 (emitted, not folded: float
    # inputs): the emitter read shape[1] of the 1-D input past its end (an
    # assertion in the fuzzer's build; fuzz/seeds/onnx/
    # assert-concat-inputs-of-different-ranks.onnx, found by onnx_struct).
    p = save(tmp_path, [helper.make_node("Concat", ["a", "b"], ["y"], axis=1,
                                         name="cat")],
             [vi("a", [2, 3]), vi("b", [2])], [vi("y", None)])
    r = loomc(p)
    assert r.returncode == 1
    assert ("node 'cat' (Concat): Concat input 1 has rank 1 but input 0 has "
            "rank 2; every input needs the same rank") in r.stderr, r.stderr


@pytest.mark.parametrize("op", ["Slice", "ReduceSum"])
def test_axes_input_out_of_range(tmp_path, op):
    # axes [8] as an input (not an attribute) of a rank-2 float tensor:
    # Slice's emitter read the shape past its end (an assertion in the
    # fuzzer's build; fuzz/seeds/onnx/assert-slice-axes-input-out-of-range.onnx,
    # found by onnx_fuzzer); ReduceSum's left it to the verifier.
    c = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    if op == "Slice":
        node = helper.make_node("Slice", ["x", "s", "e", "ax"], ["y"], name="n")
        inits = [c("s", [0]), c("e", [1]), c("ax", [8])]
    else:
        node = helper.make_node("ReduceSum", ["x", "ax"], ["y"], name="n")
        inits = [c("ax", [8])]
    p = save(tmp_path, [node], [vi("x", [1, 1])], [vi("y", None)], inits)
    r = loomc(p)
    assert r.returncode == 1
    assert (f"node 'n' ({op}): " in r.stderr and "axis 8 is out of range for "
            "rank 2; the file is corrupt" in r.stderr), r.stderr


@pytest.mark.parametrize("op", ["Split", "Gather", "Flatten", "Unsqueeze",
                                "LayerNormalization"])
def test_default_or_input_axis_of_a_scalar(tmp_path, op):
    # The default axis (no attribute, so not in the importer's attribute
    # check) of a rank-0 input: Split's emitter read the shape past its end
    # (an assertion in the fuzzer's build; fuzz/seeds/onnx/
    # assert-split-default-axis-of-a-scalar.onnx, found by onnx_struct);
    # Unsqueeze's axes input past the result's rank.
    c = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    inits = []
    if op == "Split":
        node = helper.make_node("Split", ["x"], ["y", "z"], name="n")
        outs = [vi("y", None), vi("z", None)]
    elif op == "Gather":
        node = helper.make_node("Gather", ["x", "i"], ["y"], name="n")
        inits, outs = [c("i", [0])], [vi("y", None)]
    elif op == "Flatten":
        node = helper.make_node("Flatten", ["x"], ["y"], name="n")
        outs = [vi("y", None)]
    elif op == "Unsqueeze":
        node = helper.make_node("Unsqueeze", ["x", "a"], ["y"], name="n")
        inits, outs = [c("a", [-5])], [vi("y", None)]
    else:
        node = helper.make_node("LayerNormalization", ["x", "s"], ["y"],
                                name="n")
        inits = [numpy_helper.from_array(np.ones((), np.float32), "s")]
        outs = [vi("y", None)]
    p = save(tmp_path, [node], [vi("x", [])], outs, inits)
    r = loomc(p)
    assert r.returncode == 1, r.stderr
    assert "node 'n' (" + op + "): " in r.stderr, r.stderr
    assert "is out of range for rank" in r.stderr, r.stderr


def test_raw_data_longer_than_its_dims_before_the_converter(tmp_path):
    # An opset-7 model whose Constant holds 65 raw bytes for 4 int64s:
    # libonnx's shape inference (run before its version converter) copied
    # them into a 32-byte vector (heap-buffer-overflow in the converter's
    # child process; fuzz/seeds/onnx/asan-converter-raw-data-longer-than-
    # dims.onnx, found by onnx_struct). Refused by name before it.
    t = TensorProto(name="value", data_type=TensorProto.INT64, dims=[4],
                    raw_data=b"\x01" * 65)
    p = save(tmp_path, [helper.make_node("Constant", [], ["s"], value=t,
                                         name="c"),
                        helper.make_node("Reshape", ["x", "s"], ["y"])],
             [vi("x", [2, 2])], [vi("y", None)], opset=7)
    r = loomc(p, phase="import")
    assert r.returncode == 1, r.stderr
    assert ("attribute 'value' of node 'c' (Constant) holds 65 bytes of raw "
            "data for 4 elements of 8 bytes; the file is corrupt") in r.stderr, \
        r.stderr
