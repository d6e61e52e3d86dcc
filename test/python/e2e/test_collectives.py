"""Hand-written per-rank programs with every collective, compiled by loomc
and run by loom-run on 2, 4 and 8 ranks over both backends (threads, MPI),
against numpy on the same per-rank inputs."""
import os
import numpy as np
import pytest

from e2e_util import run

MPI_FLAGS = ["--allow-run-as-root", "--oversubscribe"]


def compile_and_run(tools, tmp_path, program, inputs, nranks, backend):
    """inputs: list over ranks of arrays (one input). Returns per-rank outputs."""
    src = tmp_path / "prog.mlir"
    src.write_text(program)
    out = tmp_path / "bundle"
    run([tools["loomc"], str(src), "-o", str(out)])
    for r, x in enumerate(inputs):
        np.save(tmp_path / f"x{r}.npy", x)
    res = tmp_path / "res"
    res.mkdir(exist_ok=True)
    args = [str(out), "--input", f"input0={tmp_path}/x{{rank}}.npy",
            "--output", str(res), "--all-ranks", "--timeout", "60"]
    if backend == "threads":
        run([tools["loom-run"], *args])
    else:
        if not tools["mpirun"]:
            pytest.skip("mpirun not installed")
        run([tools["mpirun"], *MPI_FLAGS, "-np", str(nranks),
             tools["loom-run"], *args])
    return [np.load(res / f"output0.rank{r}.npy") for r in range(nranks)]


def rank_inputs(nranks, shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for _ in range(nranks)]


BACKENDS = ["threads", "mpi"]
RANKS = [2, 4, 8]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", RANKS)
@pytest.mark.parametrize("reduction", ["sum", "max"])
def test_all_reduce(tools, tmp_path, backend, n, reduction):
    # 5x7 = 35 elements: uneven over every rank count.
    prog = f"""
loom.mesh @mesh = <tp = {n}>
func.func @main(%x: tensor<5x7xf32>) -> tensor<5x7xf32> {{
  %0 = loom.all_reduce %x on @mesh axes = ["tp"] reduction = {reduction} : tensor<5x7xf32>
  return %0 : tensor<5x7xf32>
}}"""
    xs = rank_inputs(n, (5, 7))
    outs = compile_and_run(tools, tmp_path, prog, xs, n, backend)
    ref = np.sum(xs, axis=0) if reduction == "sum" else np.max(xs, axis=0)
    for o in outs:
        np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", RANKS)
def test_all_gather(tools, tmp_path, backend, n):
    prog = f"""
loom.mesh @mesh = <tp = {n}>
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x{4 * n}xf32> {{
  %0 = loom.all_gather %x on @mesh axes = ["tp"] gather_dim = 1 : tensor<3x4xf32> -> tensor<3x{4 * n}xf32>
  return %0 : tensor<3x{4 * n}xf32>
}}"""
    xs = rank_inputs(n, (3, 4))
    outs = compile_and_run(tools, tmp_path, prog, xs, n, backend)
    ref = np.concatenate(xs, axis=1)
    for o in outs:
        np.testing.assert_array_equal(o, ref)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", RANKS)
def test_reduce_scatter(tools, tmp_path, backend, n):
    prog = f"""
loom.mesh @mesh = <tp = {n}>
func.func @main(%x: tensor<{4 * n}x3xf32>) -> tensor<4x3xf32> {{
  %0 = loom.reduce_scatter %x on @mesh axes = ["tp"] scatter_dim = 0 : tensor<{4 * n}x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}}"""
    xs = rank_inputs(n, (4 * n, 3))
    outs = compile_and_run(tools, tmp_path, prog, xs, n, backend)
    total = np.sum(xs, axis=0)
    for r, o in enumerate(outs):
        np.testing.assert_allclose(o, total[4 * r:4 * (r + 1)], rtol=1e-5,
                                   atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", RANKS)
def test_all_to_all(tools, tmp_path, backend, n):
    prog = f"""
loom.mesh @mesh = <ep = {n}>
func.func @main(%x: tensor<{2 * n}x3xf32>) -> tensor<2x{3 * n}xf32> {{
  %0 = loom.all_to_all %x on @mesh axes = ["ep"] split_dim = 0 concat_dim = 1 : tensor<{2 * n}x3xf32> -> tensor<2x{3 * n}xf32>
  return %0 : tensor<2x{3 * n}xf32>
}}"""
    xs = rank_inputs(n, (2 * n, 3))
    outs = compile_and_run(tools, tmp_path, prog, xs, n, backend)
    for r, o in enumerate(outs):
        # member r receives block r (rows 2r..2r+1) of every member i,
        # concatenated along dim 1 in member order.
        ref = np.concatenate([xs[i][2 * r:2 * (r + 1)] for i in range(n)],
                             axis=1)
        np.testing.assert_array_equal(o, ref)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", RANKS)
def test_send_recv_ring(tools, tmp_path, backend, n):
    prog = f"""
loom.mesh @mesh = <pp = {n}>
func.func @main(%x: tensor<6xf32>) -> tensor<6xf32> {{
  loom.send %x to @mesh axes = ["pp"] shift = 1 channel = 7 : tensor<6xf32>
  %0 = loom.recv from @mesh axes = ["pp"] shift = -1 channel = 7 : tensor<6xf32>
  return %0 : tensor<6xf32>
}}"""
    xs = rank_inputs(n, (6,))
    outs = compile_and_run(tools, tmp_path, prog, xs, n, backend)
    for r, o in enumerate(outs):
        np.testing.assert_array_equal(o, xs[(r - 1) % n])


@pytest.mark.parametrize("backend", BACKENDS)
def test_sub_groups_2d_mesh(tools, tmp_path, backend):
    """On a 2x4 mesh, an all-reduce over `tp` sums within each row and an
    all-gather over `dp` concatenates within each column."""
    prog = """
loom.mesh @mesh = <dp = 2, tp = 4>
func.func @main(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = loom.all_reduce %x on @mesh axes = ["tp"] : tensor<2x3xf32>
  %1 = loom.all_gather %0 on @mesh axes = ["dp"] gather_dim = 0 : tensor<2x3xf32> -> tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}"""
    xs = rank_inputs(8, (2, 3))
    outs = compile_and_run(tools, tmp_path, prog, xs, 8, backend)
    rows = [np.sum(xs[4 * d:4 * d + 4], axis=0) for d in range(2)]
    ref = np.concatenate(rows, axis=0)
    for o in outs:
        np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_rows(tools, tmp_path, backend):
    """A dynamic batch dimension flows through a collective."""
    prog = """
loom.mesh @mesh = <tp = 2>
func.func @main(%x: tensor<?x4xf32>) -> tensor<?x8xf32> {
  %0 = loom.all_gather %x on @mesh axes = ["tp"] gather_dim = 1 : tensor<?x4xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}"""
    xs = rank_inputs(2, (9, 4))
    outs = compile_and_run(tools, tmp_path, prog, xs, 2, backend)
    for o in outs:
        np.testing.assert_array_equal(o, np.concatenate(xs, axis=1))
