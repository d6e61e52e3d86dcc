"""Custom sharding rules in Python: examples/python/pin_attention_heads.py
gives the same plan and the same sharded IR as the C++ plugin of
examples/sharding-plugin; a rule that raises or returns an illegal
sharding fails the compile naming the op, its location and the rule."""

import json
import sys
from pathlib import Path

import pytest

import loom
from conftest import SRC, run_cli
from loom_paths import build_dir

sys.path.insert(0, str(SRC / "examples" / "python"))
sys.path.insert(0, str(SRC / "test" / "python" / "llama"))
from pin_attention_heads import pin_attention_heads  # noqa: E402
import llama_models as lm  # noqa: E402


@pytest.fixture(scope="module")
def llama(tmp_path_factory, loomc):
    """A tiny llama (GGUF) and its imported program with a tp=2 mesh (the
    C++ plugin needs the program's loom.mesh)."""
    d = tmp_path_factory.mktemp("llama")
    cfg = lm.tiny_config("llama")
    lm.write_gguf(d / "tiny.gguf", cfg, lm.make_weights(cfg))
    run_cli(loomc, d / "tiny.gguf", "--compile-to=import", "-o",
            d / "tiny.mlir")
    head, rest = (d / "tiny.mlir").read_text().split("\n", 1)
    (d / "meshed.mlir").write_text(f"{head}\n  loom.mesh @mesh = <tp = 2>\n{rest}")
    return d


@pytest.fixture(scope="module")
def plugin():
    p = build_dir() / "lib" / "LoomPinAttentionHeads.so"
    if not p.exists():
        pytest.skip(f"{p} is not built")
    return p


def _no_time(text):
    d = json.loads(text)
    d.pop("planner_seconds")
    return d


def test_same_plan_as_the_cpp_plugin(tmp_path, llama, loomc, plugin):
    model = llama / "meshed.mlir"
    run_cli(loomc, model, "--plugin", plugin,
            "--shard-passes=loom-pin-attention-heads{axis=tp}", "--emit=plan",
            "-o", tmp_path / "plugin.json")
    want = _no_time((tmp_path / "plugin.json").read_text())
    got = loom.plan(model, sharding_rules=[pin_attention_heads])
    assert _no_time(got.to_json()) == want
    # The rule changes the plan (it is not the planner's own choice).
    assert _no_time(loom.plan(model).to_json()) != want
    # The same sharded program, and the plugin through loom.plan works too.
    run_cli(loomc, model, "--plugin", plugin,
            "--shard-passes=loom-pin-attention-heads{axis=tp}",
            "--compile-to=shard", "-o", tmp_path / "plugin.mlir")
    assert loom.ir(model, phase="shard",
                   sharding_rules=[pin_attention_heads]) == \
        (tmp_path / "plugin.mlir").read_text()
    via = loom.plan(model, plugins=[plugin],
                    shard_passes="loom-pin-attention-heads{axis=tp}")
    assert _no_time(via.to_json()) == want


def test_rule_on_a_model_without_a_mesh(llama):
    """mesh= declares the mesh the rules shard on (the C++ plugin needs a
    program with a loom.mesh); the plan keeps the pinned attention."""
    seen = []

    def rule(op):
        seen.append(op.kind)
        return pin_attention_heads(op)

    p = loom.plan(llama / "tiny.gguf", mesh="tp=2", sharding_rules=[rule])
    assert "attention" in seen and "matmul" in seen
    atts = [o for o in p.ops if o["op"] == "loom.attention"]
    assert atts and all(o["results"][0] == "[{}, {tp}, {}, {}]" for o in atts)


def _fails(model, rule, **kw):
    with pytest.raises(loom.CompileError) as e:
        loom.plan(model, sharding_rules=[rule], **kw)
    return str(e.value)


def test_bad_rules(llama):
    model = llama / "meshed.mlir"

    def raises(op):
        if op.kind == "attention":
            raise RuntimeError("no idea")

    msg = _fails(model, raises)
    assert "sharding rule 'test_bad_rules.<locals>.raises' raised on " \
           "loom.attention at loc(" in msg
    assert msg.endswith("RuntimeError: no idea")

    def bad_axis(op):
        if op.kind == "attention":
            return loom.Pin(results=[[None, "pp", None, None]])

    assert "'pp' is not an axis of mesh @mesh (tp)" in _fails(model, bad_axis)

    def bad_rank(op):
        if op.kind == "attention":
            return loom.Pin(operands={0: [None, "tp"]})

    msg = _fails(model, bad_rank)
    assert "on loom.attention at loc(" in msg
    assert "operand 0: 2 dimensions given for a tensor of rank 4" in msg

    def bad_operand(op):
        if op.kind == "attention":
            return {"operands": {99: [None] * 4}}

    assert "operand 99 does not exist" in _fails(model, bad_operand)

    def bad_type(op):
        return 42

    assert "returns a loom.Pin, a dict, a list of loom.Strategy or None, " \
           "not int" in _fails(model, bad_type)

    assert "need a mesh" in _fails(llama / "tiny.gguf", pin_attention_heads)
    with pytest.raises(TypeError, match="not callable"):
        loom.plan(model, sharding_rules=[42])


HEADS = [None, "tp", None, None]


def _attention_results(plan):
    return [o["results"] for o in plan.ops if o["op"] == "loom.attention"]


def test_candidates_the_planner_chooses_among(tmp_path, llama, loomc, plugin):
    """A rule offering strategies: the planner keeps only those and picks
    the cheapest. Offered heads-only, every attention is split by heads,
    as the C++ plugin pins it; offered heads or nothing, the planner takes
    heads (cheaper on tp=2); offered nothing (replicated) only, it keeps
    attention whole."""
    model = llama / "meshed.mlir"
    run_cli(loomc, model, "--plugin", plugin,
            "--shard-passes=loom-pin-attention-heads{axis=tp}", "--emit=plan",
            "-o", tmp_path / "plugin.json")
    plugin_plan = loom.Plan((tmp_path / "plugin.json").read_text())
    want = _attention_results(plugin_plan)
    assert want and all(set(r) == {"[{}, {tp}, {}, {}]"} for r in want)

    # The forward's attention has one result; the decode's (with a KV
    # cache) three: the output and the updated caches.
    def heads_only(op):
        if op.kind == "attention":
            return [loom.Strategy(results=[HEADS] * len(op.results))]

    def heads_or_whole(op):
        if op.kind == "attention":
            return [loom.Strategy(results=[[None] * 4] * len(op.results)),
                    loom.Strategy(results=[HEADS] * len(op.results))]

    def whole(op):
        if op.kind == "attention":
            return [loom.Strategy(results=[[None] * 4] * len(op.results))]

    assert _attention_results(loom.plan(model, sharding_rules=[heads_only])) \
        == want
    chosen = loom.plan(model, sharding_rules=[heads_or_whole])
    assert _attention_results(chosen) == want
    kept = loom.plan(model, sharding_rules=[whole])
    assert all(set(r) == {"[{}, {}, {}, {}]"}
               for r in _attention_results(kept))
    assert _no_time(kept.to_json()) != _no_time(chosen.to_json())
    # The candidates are gone from the sharded program: the choice is made.
    text = loom.ir(model, phase="shard", sharding_rules=[heads_or_whole])
    assert "sharding_candidates" not in text and "sharding_rule" not in text


def test_candidates_with_partial_sums(llama):
    """A candidate names the axes a result is a partial sum over: the first
    matmul offered only its K split gives a partial result (its operands
    split on K); offered that or replicated, the planner picks one of the
    two."""
    first = []

    def offer(*strategies):
        def rule(op):
            if op.kind != "matmul" or (first and op.location != first[0]):
                return None
            first[:] = [op.location]
            rank = len(op.results[0].shape)
            return [loom.Strategy(**s(rank)) for s in strategies]
        return rule

    k_split = lambda r: {"results": [[None] * r], "partial": [["tp"]]}
    whole = lambda r: {"results": [[None] * r]}
    model = llama / "meshed.mlir"

    def first_matmul(plan):
        return next(o for o in plan.ops if o["op"] == "loom.matmul"
                    and o["loc"] == first[0])

    op = first_matmul(loom.plan(model, sharding_rules=[offer(k_split)]))
    assert op["results"] == ["[{}, {}, {}] partial {tp}"]
    assert op["operands"] == ["[{}, {}, {tp}]", "[{}, {tp}]"]
    op = first_matmul(loom.plan(model, sharding_rules=[offer(k_split, whole)]))
    assert op["results"] in (["[{}, {}, {}] partial {tp}"], ["[{}, {}, {}]"])


def test_bad_candidates(llama):
    model = llama / "meshed.mlir"

    def seq_split(op):
        if op.kind == "attention":
            # Query positions of a causal attention are never split.
            n = len(op.results)
            return [loom.Strategy(results=[HEADS] * n),
                    loom.Strategy(results=[[None, None, "tp", None]] * n)]

    msg = _fails(model, seq_split)
    assert "error: candidate #1 of sharding rule " \
           "'test_bad_candidates.<locals>.seq_split': dimension 2 of " \
           "result #0 cannot be split over 'tp'" in msg, msg

    def bad_axis(op):
        if op.kind == "attention":
            return [loom.Strategy(results=[[None, "zz", None, None]] *
                                  len(op.results))]

    msg = _fails(model, bad_axis)
    assert "sharding rule 'test_bad_candidates.<locals>.bad_axis' on " \
           "loom.attention at loc(" in msg
    assert "candidate #0 result 0: 'zz' is not an axis of mesh @mesh (tp)" \
        in msg

    def too_few(op):
        if op.kind == "attention":
            return [loom.Strategy(results=[])]

    assert "candidate #0: results is the sharding of each result" in \
        _fails(model, too_few)

    def not_a_strategy(op):
        if op.kind == "attention":
            return [HEADS]

    msg = _fails(model, not_a_strategy)
    assert "raised on loom.attention" in msg and \
        "candidate #0: expected a loom.Strategy, got list" in msg

    def empty(op):
        if op.kind == "attention":
            return []

    assert "an empty list of candidate strategies" in _fails(model, empty)
