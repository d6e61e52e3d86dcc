"""Planning from a config alone (issue 15 item 1; docs/IMPORT-LLAMA.md,
"Planning from a config alone"): `loomc hf_dir/ --emit=plan` without
safetensors, a bare config.json, or a GGUF whose tensor data is absent.

- The plan of a config alone equals the plan of the same model with its
  weights (a tiny llama / gpt2 the importer tests build), also under --quant
  (the quantized types the quantize phase gives, nothing computed).
- The published Llama-3-8B / -70B configs (configs/) and the Llama-3.1-405B
  shape plan, in well under a second and without memory proportional to
  the weights (Llama-3.1-405B's rope_scaling "llama3" is implemented;
  another scaling type is refused by name).
- --weight-dtype and --quant change the planned weight bytes as their
  element sizes say.
- A bundle needs the weights and says so, naming the file and the fix.
"""
import json
import resource
import shutil
import subprocess
from pathlib import Path

import pytest

from loom_paths import package, tool
from llama_models import make_weights, tiny_config, write_gguf, write_hf

CONFIGS = Path(__file__).resolve().parent / "configs"


def loomc(*args, ok=True):
    r = subprocess.run([str(tool("loomc")), *map(str, args)],
                       capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, r.stderr
    else:
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert "Stack dump" not in r.stderr
    return r


def plan(model, out: Path, *flags) -> dict:
    loomc(model, "--emit=plan", "-o", out, *flags)
    p = json.loads(out.read_text())
    p.pop("planner_seconds", None)  # wall time of the planner
    return p


def weights_bytes(p: dict, fn: str = "forward") -> int:
    f = next(f for f in p["functions"] if f["name"] == fn)
    return f["memory_per_device_bytes"]["unsplit"] - \
        f["memory_per_device_bytes"]["inputs"] - \
        f["memory_per_device_bytes"]["kv_cache"]


def config_only(model_dir: Path, dest: Path) -> Path:
    dest.mkdir()
    shutil.copy(model_dir / "config.json", dest / "config.json")
    return dest


@pytest.mark.parametrize("family,mesh,quant", [
    ("llama", "tp=2", None),
    ("llama", "dp=2,tp=2", None),
    ("llama", "tp=2", "int4:32"),
    ("gpt2", "tp=2", None),
])
def test_config_plan_equals_weights_plan(tmp_path, family, mesh, quant):
    cfg = tiny_config(family, layers=3, tied=False)
    model = write_hf(tmp_path / "m", cfg, make_weights(cfg), "f32")
    alone = config_only(model, tmp_path / "alone")
    flags = ["--mesh", mesh] + (["--quant", quant] if quant else [])
    with_weights = plan(model, tmp_path / "w.json", *flags)
    from_config = plan(alone, tmp_path / "c.json", *flags)
    assert from_config == with_weights
    # The bare config.json plans the same as its folder.
    bare = plan(alone / "config.json", tmp_path / "b.json", *flags)
    assert bare == with_weights
    # Nothing was quantized for the config alone: no blocks were written.
    assert not (tmp_path / "c.json.qweights").exists()


def test_index_without_shards_plans(tmp_path):
    """A download of only the *.json files (config.json and
    model.safetensors.index.json, no shards) plans from the config; a bundle
    names the first missing shard."""
    cfg = tiny_config("llama", layers=2, tied=False)
    model = write_hf(tmp_path / "m", cfg, make_weights(cfg), "f32",
                     sharded=True)
    with_weights = plan(model, tmp_path / "w.json", "--mesh", "tp=2")
    jsons = tmp_path / "jsons"
    jsons.mkdir()
    for f in model.glob("*.json"):
        shutil.copy(f, jsons / f.name)
    assert plan(jsons, tmp_path / "j.json", "--mesh", "tp=2") == with_weights
    r = loomc(jsons, "-o", tmp_path / "b", ok=False)
    assert (f"weights not found: {jsons}/model-00001-of-00002.safetensors; "
            "--emit=plan plans from the config alone") in r.stderr


def test_weight_dtype_and_quant_change_planned_memory(tmp_path):
    cfg = tiny_config("llama", layers=2, tied=False, hidden=128, ffn=256)
    model = write_hf(tmp_path / "m", cfg, make_weights(cfg), "f32")
    alone = config_only(model, tmp_path / "alone")
    f32 = weights_bytes(plan(alone, tmp_path / "a.json", "--mesh", "tp=2"))
    bf16 = weights_bytes(plan(alone, tmp_path / "b.json", "--mesh", "tp=2",
                              "--weight-dtype=bf16"))
    f16 = weights_bytes(plan(alone, tmp_path / "c.json", "--mesh", "tp=2",
                             "--weight-dtype=f16"))
    assert bf16 == f16 == f32 // 2
    # int8:32 (symmetric, f16 scales): 34 bytes per 32 weights for every
    # matmul weight but the embedding and LM head (kept by --quant-skip's
    # default), whose f32 bytes stay.
    q = weights_bytes(plan(alone, tmp_path / "q.json", "--mesh", "tp=2",
                           "--quant", "int8:32"))
    D, V = cfg.hidden, cfg.vocab
    kept = 2 * V * D * 4 + (2 * cfg.layers + 1) * D * 4  # embed, head, norms
    matmul = f32 - kept
    assert q == kept + matmul // 4 * 34 // 32
    # The config's torch_dtype is the default.
    conf = json.loads((alone / "config.json").read_text())
    conf["torch_dtype"] = "bfloat16"
    (alone / "config.json").write_text(json.dumps(conf))
    assert weights_bytes(plan(alone, tmp_path / "d.json", "--mesh",
                              "tp=2")) == bf16


def test_bundle_needs_the_weights(tmp_path):
    cfg = tiny_config("llama")
    alone = config_only(write_hf(tmp_path / "m", cfg, make_weights(cfg)),
                        tmp_path / "alone")
    out = tmp_path / "bundle"
    for phase in ("bundle", "partition", "import"):
        r = loomc(alone, f"--compile-to={phase}", "-o", out, ok=False)
        assert (f"weights not found: {alone}/model.safetensors; "
                "--emit=plan plans from the config alone") in r.stderr
        assert not out.exists()
    # --weight-dtype is for a config alone: with weights it is refused.
    r = loomc(tmp_path / "m", "--emit=plan", "-o", tmp_path / "p.json",
              "--mesh", "tp=2", "--weight-dtype=bf16", ok=False)
    assert "--weight-dtype=bf16 applies when planning from a config alone" \
        in r.stderr
    r = loomc(alone, "--emit=plan", "-o", tmp_path / "p.json",
              "--weight-dtype=f8", ok=False)
    assert "--weight-dtype=f8: unknown; expected f32, f16 or bf16" in r.stderr


def test_unknown_model_type_refused(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    conf = json.loads((CONFIGS / "llama-3-8b" / "config.json").read_text())
    conf["model_type"] = "falcon"
    (d / "config.json").write_text(json.dumps(conf))
    r = loomc(d, "--emit=plan", "-o", tmp_path / "p.json", "--mesh", "tp=8",
              ok=False)
    assert "model type 'falcon' is not supported (supported: llama, " \
        "mistral, qwen2, gpt2)" in r.stderr
    # An unknown key is refused by name as with weights.
    conf["model_type"] = "llama"
    conf["moe_experts"] = 8
    (d / "config.json").write_text(json.dumps(conf))
    r = loomc(d, "--emit=plan", "-o", tmp_path / "p.json", "--mesh", "tp=8",
              ok=False)
    assert "key 'moe_experts'" in r.stderr


def test_other_rope_scaling_refused_by_name(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    conf = json.loads((CONFIGS / "llama-3.1-405b" / "config.json").read_text())
    conf["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0,
                            "original_max_position_embeddings": 8192}
    (d / "config.json").write_text(json.dumps(conf))
    r = loomc(d, "--emit=plan", "-o", tmp_path / "p.json", "--mesh", "tp=8",
              ok=False)
    assert "rope_scaling of type 'yarn' is not supported (supported: " \
        "default, llama3)" in r.stderr
    # A key of rope_scaling Loom does not read is refused by name.
    conf["rope_scaling"] = dict(
        json.loads((CONFIGS / "llama-3.1-405b" / "config.json").read_text())
        ["rope_scaling"], beta_fast=32)
    (d / "config.json").write_text(json.dumps(conf))
    r = loomc(d, "--emit=plan", "-o", tmp_path / "p.json", "--mesh", "tp=8",
              ok=False)
    assert "key 'beta_fast' is not one Loom reads" in r.stderr


# (config, mesh, parameters in billions as published, rough bound)
BIG = [
    ("llama-3-8b", "tp=8", 8.03),
    ("llama-3-70b", "tp=8", 70.55),
    ("llama-3.1-405b", "dp=4,tp=8", 405.85),
]


@pytest.mark.parametrize("name,mesh,billions", BIG)
def test_published_configs_plan(tmp_path, name, mesh, billions):
    out = tmp_path / "p.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    p = plan(CONFIGS / name, out, "--mesh", mesh, "--device", "h100-sxm")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # bf16 (the config's torch_dtype): 2 bytes per parameter.
    params = weights_bytes(p) / 2
    assert abs(params / 1e9 - billions) < 0.01 * billions, params
    # Far from the weights' size (16 GB to 812 GB): the IR and the plan only.
    assert max(before, peak_kib) < 1024 * 1024, peak_kib
    fwd = next(f for f in p["functions"] if f["name"] == "forward")
    # Split over tp=8, but for the embedding table: the gather reads only
    # its rows (docs/COST-MODEL.md "Formulas"), so with memory to spare a
    # replicated table is as fast and needs no collective after it.
    conf = json.loads((CONFIGS / name / "config.json").read_text())
    table = conf["vocab_size"] * conf["hidden_size"] * 2
    assert fwd["memory_per_device_bytes"]["weights"] < \
        weights_bytes(p) / 7 + table


def test_gguf_header_alone_plans(tmp_path):
    """A GGUF whose header is whole but whose tensor data is cut off (or
    absent) plans from the header, as the whole file does; compiling it
    further says the weights are not all there."""
    import gguf
    cfg = tiny_config("llama", layers=2, tied=False)
    full = write_gguf(tmp_path / "m.gguf", cfg, make_weights(cfg), "q8_0")
    data_start = gguf.GGUFReader(str(full)).data_offset
    whole = plan(full, tmp_path / "w.json", "--mesh", "tp=2")
    for keep in (data_start, data_start + 1000):
        cut = tmp_path / f"cut{keep}.gguf"
        cut.write_bytes(full.read_bytes()[:keep])
        assert plan(cut, tmp_path / "c.json", "--mesh", "tp=2") == whole
        r = loomc(cut, "-o", tmp_path / "b", ok=False)
        assert "runs past the end of the file" in r.stderr
        assert "--emit=plan plans from the GGUF header alone" in r.stderr
    # The GGUF gives its weights' types: --weight-dtype is refused.
    r = loomc(cut, "--emit=plan", "-o", tmp_path / "d.json", "--mesh", "tp=2",
              "--weight-dtype=f16", ok=False)
    assert "--weight-dtype applies to a Hugging Face config" in r.stderr
    # A header cut short is refused even for a plan.
    cut = tmp_path / "short.gguf"
    cut.write_bytes(full.read_bytes()[:data_start - 100])
    r = loomc(cut, "--emit=plan", "-o", tmp_path / "s.json", ok=False)
    assert "GGUF import" in r.stderr


def test_python_package_plans_a_config(tmp_path):
    """loom.plan takes the folder as loomc does (weight_dtype: --weight-dtype)."""
    loom = package()
    if loom is None:
        pytest.skip("the loom Python package is not built")
    d = CONFIGS / "llama-3-70b"
    bf16 = loom.plan(str(d), "tp=8", device="h100-sxm")
    f32 = loom.plan(str(d), "tp=8", device="h100-sxm", weight_dtype="f32")
    fwd = lambda p: next(f for f in p.data["functions"]  # noqa: E731
                         if f["name"] == "forward")
    assert fwd(f32)["memory_per_device_bytes"]["weights"] == \
        2 * fwd(bf16)["memory_per_device_bytes"]["weights"]
