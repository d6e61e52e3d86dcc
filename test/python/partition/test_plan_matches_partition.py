"""One reshard model (include/loom/Cost/Reshard.h): the collectives the
sharding planner predicts (loom.plan, loomc --emit=plan) are the
collectives of the partitioned program (loom.ir(phase="partition"), loomc
--compile-to=partition), op for op and in order:
kind, mesh axes, dimension and bytes, on the Llama and GPT-2 graphs and on
1-D and 2-D meshes."""

import re
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "llama"))
import llama_models as lm  # noqa: E402
from loom_paths import ir_text, plan_json  # noqa: E402

# The size the planner assumes for a dynamic dimension (--dynamic-size).
DYNAMIC = 128
ELEM_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i8": 1}

COLLECTIVE = re.compile(
    r"loom\.(all_reduce|reduce_scatter|all_gather|all_to_all) %\S+ on @\w+"
    r" axes = \[([^\]]*)\](.*?) : tensor<([^>]*)>(?: -> tensor<([^>]*)>)?")
DIM = re.compile(r"(scatter_dim|gather_dim|split_dim) = (\d+)")
CONCAT = re.compile(r"concat_dim = (\d+)")


def _bytes(tensor: str) -> int:
    *dims, elem = tensor.split("x")
    n = ELEM_BYTES[elem]
    for d in dims:
        n *= DYNAMIC if d == "?" else int(d)
    return n


def program_collectives(text: str) -> dict:
    """Per function, the collectives in program order, each as (kind, axes,
    dim, concat_dim, bytes of the buffer the cost model counts: the output
    of an all_gather, the input otherwise)."""
    out, fn = {}, None
    for line in text.splitlines():
        m = re.search(r"func\.func (?:\w+ )?@([\w.]+)", line)
        if m:
            fn = m.group(1)
            out[fn] = []
            continue
        m = COLLECTIVE.search(line)
        if not m:
            continue
        kind, axes, attrs, src, dst = m.groups()
        dim = DIM.search(attrs)
        concat = CONCAT.search(attrs)
        buf = dst if kind == "all_gather" else src
        out[fn].append((kind, [a.strip().strip('"') for a in axes.split(",")
                               if a.strip()],
                        int(dim.group(2)) if dim else -1,
                        int(concat.group(1)) if concat else -1, _bytes(buf)))
    return out


def plan_collectives(plan: dict) -> dict:
    return {f["name"]: [(c["kind"], c["axes"], c.get("dim", -1),
                         c.get("concat_dim", -1), int(c["bytes"]))
                        for c in f["collectives"]]
            for f in plan["functions"]}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    out = {}
    for family in ("llama", "gpt2"):
        cfg = lm.tiny_config(family, hidden=128, heads=8,
                             kv_heads=8 if family == "gpt2" else 4, ffn=256,
                             layers=2)
        out[family] = lm.write_hf(root / family, cfg, lm.make_weights(cfg))
    return out


@pytest.mark.parametrize("family", ["llama", "gpt2"])
@pytest.mark.parametrize("mesh", ["tp=2", "tp=4", "dp=2,tp=2", "tp=8"])
def test_plan_collectives_are_the_programs(tmp_path, models, family, mesh):
    model = models[family]
    planned = plan_collectives(plan_json(model, mesh=mesh))
    ran = program_collectives(ir_text(model, "partition", mesh=mesh))
    assert set(planned) == {"forward", "decode"}
    for fn, colls in planned.items():
        assert colls, f"@{fn} on {mesh}: a sharded plan needs collectives"
        assert colls == ran[fn], (fn, mesh, colls, ran[fn])


# A tied table stored split by its hidden dimension (pinned) that a head
# needs split by the vocabulary: the weight moves its split by all_to_all.
# (GPT-2's tied wte did so until the planner loaded each use of a weight
# in its own layout, docs/SHARDING.md "Weights read by several ops".)
PINNED_TIED = """
module {
  loom.mesh @mesh = <tp = 2>
  func.func @forward(%ids: tensor<1x8xi64>) -> tensor<1x8x96xf32> {
    %w = loom.weight "wte" {loom.sharding = #loom.sharding<@mesh, [{}, {tp}]>} : tensor<96x128xf32>
    %e = loom.embedding %w, %ids : tensor<96x128xf32>, tensor<1x8xi64> -> tensor<1x8x128xf32>
    %g = loom.gelu %e : tensor<1x8x128xf32>
    %l = loom.matmul %g, %w transpose_b {loom.sharding = #loom.sharding<@mesh, [{}, {}, {tp}]>} : tensor<1x8x128xf32>, tensor<96x128xf32> -> tensor<1x8x96xf32>
    return %l : tensor<1x8x96xf32>
  }
}
"""


def test_cases_the_models_used_to_disagree_on(tmp_path, models):
    """Where the planner's old model and the partitioner's differed: a
    transposed weight moves its split by all_to_all (the planner priced an
    all_gather), and on dp x tp a partial sum over both axes is
    reduce-scattered over tp and all-reduced over dp on the scattered
    buffer (the partitioner ran one all_reduce over both)."""
    pinned = tmp_path / "pinned.mlir"
    pinned.write_text(PINNED_TIED)
    planned = plan_collectives(plan_json(pinned))["forward"]
    assert planned[0][0] == "all_to_all", planned
    assert planned == program_collectives(ir_text(pinned, "partition"))["forward"]
    got = {}
    for family, mesh in (("llama", "dp=2,tp=2"),):
        got[family] = plan_collectives(plan_json(models[family],
                                                 mesh=mesh))["forward"]
    kinds = [(c[0], c[1]) for c in got["llama"]]
    # A partial sum over both axes is scattered, never all-reduced over both:
    # over tp then all-reduced over dp, or (since the planner prices tokens
    # at their dynamic size, passes/Sharding/OpCost.h) scattered over both.
    assert (("reduce_scatter", ["tp"]), ("all_reduce", ["dp"])) in \
        list(zip(kinds, kinds[1:])) or ("reduce_scatter", ["dp", "tp"]) in kinds
    assert ("all_reduce", ["dp", "tp"]) not in kinds
