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

    assert "returns a loom.Pin, a dict or None, not int" in \
        _fails(model, bad_type)

    assert "need a mesh" in _fails(llama / "tiny.gguf", pin_attention_heads)
    with pytest.raises(TypeError, match="not callable"):
        loom.plan(model, sharding_rules=[42])
