"""Hand-annotated programs in plan form, compiled (partition phase) and run
on 2, 4 and 8 thread ranks through the Python package (loomc and loom-run
when it is not built; loom-run under mpirun for 2 MPI ranks), against the
same program without annotations on 1 rank. Tolerance (docs/PARTITION.md):
rtol = 1e-4, atol = 1e-5 on f32 (sums are reordered by the split)."""
import math
import re

import numpy as np
import pytest
from loom_paths import compile_bundle, run_bundle


RTOL, ATOL = 1e-4, 1e-5
MPI_FLAGS = ["--allow-run-as-root", "--oversubscribe"]


def _run(cmd):
    import subprocess
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError(f"command failed ({p.returncode}): "
                             f"{' '.join(map(str, cmd))}\n{p.stdout}\n{p.stderr}")
    return p


def strip(program):
    """The same program without shardings and reshards, on one rank."""
    program = re.sub(r"loom\.mesh @m = <[^>]*>", "loom.mesh @m = <r = 1>",
                     program)
    program = re.sub(r"\s*\{loom\.sharding = #loom\.sharding<[^>]*>\}", "",
                     program)
    program = re.sub(r"\{loom\.sharding = #loom\.sharding<[^>]*>\}", "",
                     program)
    # %a = loom.shard %b to <...> : T  ->  %a = loom.reshape %b : T -> T
    program = re.sub(r"loom\.shard (%\w+) to <[^>]*> : (tensor<[^>]*>)",
                     r"loom.reshape \1 : \2 -> \2", program)
    return program


def compile_and_run(tools, tmp_path, name, program, inputs, nranks,
                    backend="threads"):
    src = tmp_path / f"{name}.mlir"
    src.write_text(program)
    out = compile_bundle(src, tmp_path / f"{name}.bundle")
    if backend == "threads":
        return run_bundle(out, {f"input{i}": x for i, x in enumerate(inputs)})[
            "output0"]
    if not tools["mpirun"]:
        pytest.skip("mpirun not installed")
    args = [str(out), "--output", str(tmp_path / f"{name}.res"),
            "--timeout", "60"]
    for i, x in enumerate(inputs):
        f = tmp_path / f"{name}.in{i}.npy"
        np.save(f, x)
        args += ["--input", f"input{i}={f}"]
    _run([tools["mpirun"], *MPI_FLAGS, "-np", str(nranks),
          tools["loom-run"], *args])
    return np.load(tmp_path / f"{name}.res" / "output0.npy")


def check(tools, tmp_path, program, inputs, nranks, backend="threads"):
    ref = compile_and_run(tools, tmp_path, "ref", strip(program), inputs, 1)
    got = compile_and_run(tools, tmp_path, "part", program, inputs, nranks,
                          backend)
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)
    return got, ref


def weights(tmp_path, **shapes):
    """Writes each weight to its own file; returns {name: array}."""
    rng = np.random.default_rng(1)
    out = {}
    for name, shape in shapes.items():
        w = (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(
            np.float32)
        w.tofile(tmp_path / f"{name}.bin")
        out[name] = w
    return out


def S(spec):
    return "{loom.sharding = #loom.sharding<@m, " + spec + ">}"


def mlp_program(mesh, x_spec, h_spec, y_spec, w1_spec, w2_spec, out_spec,
                norm=False):
    out_attr = f" {S(out_spec)}" if out_spec else ""
    tail = "return %y : tensor<8x32xf32>"
    if norm:
        tail = ("%n = loom.rms_norm %y epsilon = 1.0e-05 : tensor<8x32xf32> "
                "-> tensor<8x32xf32>\n  return %n : tensor<8x32xf32>")
    xa = f" {S(x_spec)}" if x_spec else ""
    return f"""
loom.mesh @m = <{mesh}>
func.func @main(%x: tensor<8x32xf32>{xa}) -> (tensor<8x32xf32>{out_attr}) {{
  %w1 = loom.weight "w1" from <"w1.bin", offset = 0> {S(w1_spec)} : tensor<32x64xf32>
  %w2 = loom.weight "w2" from <"w2.bin", offset = 0> {S(w2_spec)} : tensor<64x32xf32>
  %h = loom.matmul %x, %w1 {S(h_spec)} : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
  %g = loom.gelu %h {S(h_spec)} : tensor<8x64xf32>
  %y = loom.matmul %g, %w2 {S(y_spec)} : tensor<8x64xf32>, tensor<64x32xf32> -> tensor<8x32xf32>
  {tail}
}}"""


def x_input(shape=(8, 32)):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_megatron_mlp(tools, tmp_path, n):
    """First matmul split by columns, second by rows, one all_reduce."""
    weights(tmp_path, w1=(32, 64), w2=(64, 32))
    prog = mlp_program(f"tp = {n}", None, "[{}, {tp}]",
                       "[{}, {}], partial = {tp}", "[{}, {tp}]", "[{tp}, {}]",
                       None)
    check(tools, tmp_path, prog, [x_input()], n)


def test_megatron_mlp_mpi(tools, tmp_path):
    weights(tmp_path, w1=(32, 64), w2=(64, 32))
    prog = mlp_program("tp = 2", None, "[{}, {tp}]",
                       "[{}, {}], partial = {tp}", "[{}, {tp}]", "[{tp}, {}]",
                       None)
    check(tools, tmp_path, prog, [x_input()], 2, backend="mpi")


@pytest.mark.parametrize("n", [2, 4, 8])
def test_megatron_mlp_then_norm(tools, tmp_path, n):
    """The all_reduce before a norm becomes reduce_scatter + norm on the
    rows + all_gather (loom-optimize-collectives)."""
    weights(tmp_path, w1=(32, 64), w2=(64, 32))
    prog = mlp_program(f"tp = {n}", None, "[{}, {tp}]",
                       "[{}, {}], partial = {tp}", "[{}, {tp}]", "[{tp}, {}]",
                       None, norm=True)
    check(tools, tmp_path, prog, [x_input()], n)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_data_parallel(tools, tmp_path, n):
    """Batch split over dp, weights replicated, rows gathered at the end."""
    weights(tmp_path, w1=(32, 64), w2=(64, 32))
    prog = mlp_program(f"dp = {n}", "[{dp}, {}]", "[{dp}, {}]", "[{dp}, {}]",
                       "[{}, {}]", "[{}, {}]", None)
    check(tools, tmp_path, prog, [x_input()], n)


@pytest.mark.parametrize("dp,tp", [(2, 2), (2, 4), (4, 2)])
def test_dp_tp_mesh(tools, tmp_path, dp, tp):
    """A dp x tp mesh: batch over dp, Megatron over tp."""
    weights(tmp_path, w1=(32, 64), w2=(64, 32))
    prog = mlp_program(f"dp = {dp}, tp = {tp}", "[{dp}, {}]", "[{dp}, {tp}]",
                       "[{dp}, {}], partial = {tp}", "[{}, {tp}]",
                       "[{tp}, {}]", None)
    check(tools, tmp_path, prog, [x_input()], dp * tp)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_sharded_output(tools, tmp_path, n):
    """Megatron with the output split by rows: a reduce_scatter; rank 0
    returns its block of rows."""
    weights(tmp_path, w1=(32, 64), w2=(64, 32))
    prog = mlp_program(f"tp = {n}", None, "[{}, {tp}]",
                       "[{}, {}], partial = {tp}", "[{}, {tp}]", "[{tp}, {}]",
                       "[{tp}, {}]")
    ref = compile_and_run(tools, tmp_path, "ref", strip(prog), [x_input()], 1)
    got = compile_and_run(tools, tmp_path, "part", prog, [x_input()], n)
    np.testing.assert_allclose(got, ref[:8 // n], rtol=RTOL, atol=ATOL)


ATTENTION = """
loom.mesh @m = <{mesh}>
func.func @main(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {{
  %wq = loom.weight "wq" from <"wq.bin", offset = 0> {col} : tensor<32x32xf32>
  %wk = loom.weight "wk" from <"wk.bin", offset = 0> {col} : tensor<32x32xf32>
  %wv = loom.weight "wv" from <"wv.bin", offset = 0> {col} : tensor<32x32xf32>
  %wo = loom.weight "wo" from <"wo.bin", offset = 0> {row} : tensor<32x32xf32>
  %q = loom.matmul %x, %wq {col} : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
  %k = loom.matmul %x, %wk {col} : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
  %v = loom.matmul %x, %wv {col} : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
  %q4 = loom.reshape %q {heads3} : tensor<8x32xf32> -> tensor<1x8x8x4xf32>
  %k4 = loom.reshape %k {heads3} : tensor<8x32xf32> -> tensor<1x8x8x4xf32>
  %v4 = loom.reshape %v {heads3} : tensor<8x32xf32> -> tensor<1x8x8x4xf32>
  %qt = loom.transpose %q4 permutation = [0, 2, 1, 3] {heads} : tensor<1x8x8x4xf32> -> tensor<1x8x8x4xf32>
  %kt = loom.transpose %k4 permutation = [0, 2, 1, 3] {heads} : tensor<1x8x8x4xf32> -> tensor<1x8x8x4xf32>
  %vt = loom.transpose %v4 permutation = [0, 2, 1, 3] {heads} : tensor<1x8x8x4xf32> -> tensor<1x8x8x4xf32>
  %o = loom.attention %qt, %kt, %vt causal {heads} : tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32> -> tensor<1x8x8x4xf32>
  %ot = loom.transpose %o permutation = [0, 2, 1, 3] {heads3} : tensor<1x8x8x4xf32> -> tensor<1x8x8x4xf32>
  %o2 = loom.reshape %ot {col} : tensor<1x8x8x4xf32> -> tensor<8x32xf32>
  %y = loom.matmul %o2, %wo {partial} : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}}"""


@pytest.mark.parametrize("n", [2, 4, 8])
def test_attention_by_heads(tools, tmp_path, n):
    """8 heads of 4 split over tp: Q/K/V projections by columns, attention
    on local heads, output projection by rows, one all_reduce."""
    weights(tmp_path, wq=(32, 32), wk=(32, 32), wv=(32, 32), wo=(32, 32))
    prog = ATTENTION.format(
        mesh=f"tp = {n}", col=S("[{}, {tp}]"), row=S("[{tp}, {}]"),
        heads3=S("[{}, {}, {tp}, {}]"), heads=S("[{}, {tp}, {}, {}]"),
        partial=S("[{}, {}], partial = {tp}"))
    check(tools, tmp_path, prog, [x_input()], n)


SEQUENCE_NORM = """
loom.mesh @m = <tp = {n}>
func.func @main(%x: tensor<8x32xf32> {rows}) -> tensor<8x32xf32> {{
  %w1 = loom.weight "w1" from <"w1.bin", offset = 0> {col} : tensor<32x64xf32>
  %w2 = loom.weight "w2" from <"w2.bin", offset = 0> {row} : tensor<64x32xf32>
  %n1 = loom.rms_norm %x epsilon = 1.0e-05 {rows} : tensor<8x32xf32> -> tensor<8x32xf32>
  %a = loom.shard %n1 to <@m, [{{}}, {{}}]> : tensor<8x32xf32>
  %h = loom.matmul %a, %w1 {col} : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
  %g = loom.gelu %h {col} : tensor<8x64xf32>
  %y = loom.matmul %g, %w2 {partial} : tensor<8x64xf32>, tensor<64x32xf32> -> tensor<8x32xf32>
  %ys = loom.shard %y to <@m, [{{tp}}, {{}}]> : tensor<8x32xf32>
  %r = loom.add %x, %ys {rows} : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  %n2 = loom.layer_norm %r axis = -1 epsilon = 1.0e-05 {rows} : tensor<8x32xf32> -> tensor<8x32xf32>
  return %n2 : tensor<8x32xf32>
}}"""


@pytest.mark.parametrize("n", [2, 4, 8])
def test_sequence_split_norm(tools, tmp_path, n):
    """Megatron sequence parallelism: norms and the residual on row shards,
    all_gather before the MLP, reduce_scatter after it."""
    weights(tmp_path, w1=(32, 64), w2=(64, 32))
    prog = SEQUENCE_NORM.format(
        n=n, rows=S("[{tp}, {}]"), col=S("[{}, {tp}]"), row=S("[{tp}, {}]"),
        partial=S("[{}, {}], partial = {tp}"))
    check(tools, tmp_path, prog, [x_input()], n)


# A run-time batch split over dp by hand (the planner never splits a
# dynamic dimension; a partitioned program written or edited by hand can).
# Shards are equal or the job fails: before the check, a batch of 3 on dp=2
# gave 2 rows and a batch of 1 gave 0 rows, exit 0.
DYNAMIC_DP = """
loom.mesh @m = <dp = 2>
func.func @main(%x: tensor<?x8xf32> {loom.sharding = #loom.sharding<@m, [{dp}, {}]>}) -> tensor<?x8xf32> {
  %y = loom.mul %x, %x {loom.sharding = #loom.sharding<@m, [{dp}, {}]>} : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
"""


@pytest.mark.parametrize("backend", ["threads", "mpi"])
def test_dynamic_batch_split_divides_or_fails(tools, tmp_path, backend):
    """The per-rank program of DYNAMIC_DP (loom-opt's partition pipeline,
    then loomc) on batches 4, 3 and 1: 4 rows give x*x on every rank; 3 and
    1 fail the job with loom.local_slice's message naming the size's
    dimension, the axis and the fix, and write no output."""
    import subprocess
    from loom_paths import tool
    if backend == "mpi" and not tools["mpirun"]:
        pytest.skip("mpirun not installed")
    src = tmp_path / "dyn.mlir"
    src.write_text(DYNAMIC_DP)
    part = tmp_path / "part.mlir"
    _run([tool("loom-opt"), src, "--loom-partition-pipeline", "-o", part])
    assert "loom.local_slice" in part.read_text()
    bundle = tmp_path / "b"
    _run([tools["loomc"], part, "-o", bundle])
    for n in (4, 3, 1):
        x = np.arange(n * 8, dtype=np.float32).reshape(n, 8)
        np.save(tmp_path / f"x{n}.npy", x)
        res = tmp_path / f"res{n}"
        cmd = [tools["loom-run"], bundle, "--input",
               f"input0={tmp_path / f'x{n}.npy'}", "--output", res,
               "--all-ranks", "--timeout", "60"]
        if backend == "mpi":
            cmd = [tools["mpirun"], *MPI_FLAGS, "-np", "2", *cmd,
                   "--backend", "mpi"]
        r = subprocess.run([str(c) for c in cmd], capture_output=True,
                           text=True, timeout=120)
        if n % 2 == 0:
            assert r.returncode == 0, r.stderr
            for rank in (0, 1):
                got = np.load(res / f"output0.rank{rank}.npy")
                np.testing.assert_array_equal(got, x * x)
        else:
            assert r.returncode != 0
            assert ("loom.local_slice" in r.stderr and "dimension 0 has a "
                    "run-time size that does not divide over the 2 ranks of "
                    "mesh axes [\"dp\"]" in r.stderr), r.stderr
            assert not list(res.glob("*.npy")) if res.exists() else True
