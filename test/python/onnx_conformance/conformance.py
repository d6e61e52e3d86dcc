"""ONNX's own backend test data as a conformance suite for `loomc`.

Every model under the onnx wheel's `onnx/backend/test/data/{simple,
pytorch-operator,pytorch-converted,light,real}` is compiled with `loomc`
(a subprocess: a crash is a signal, not a dead test process) and run with
its `test_data_set_*` inputs through the `loom` package's `Bundle.run`
(else `loom-run`); the outputs are compared with the expected ones as
ONNX's backend runner does (`np.testing.assert_allclose`, rtol 1e-3, atol
1e-7, or the case's data.json). `real/*` cases name a `light/*` model in
their data.json: the runner's inputs for them are `arange(n)/n` (its
`generate_dummy_data`), the expected output is `light/<model>_output_0.pb`.

Each case ends as one of
  pass     the outputs match;
  refused  loomc exits 1 with one line naming the node and its op (or
           another refusal by name: opset, dtype, attribute);
  FAIL     wrong numbers, a signal, a run failure or an unclear error.

`python conformance.py [--jobs N] [--report FILE] [--expected FILE]`
writes the per-case table (Markdown) and prints the pass rate by folder.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from loom_paths import build_dir  # noqa: E402

FOLDERS = ("simple", "pytorch-operator", "pytorch-converted", "light", "real")
RTOL, ATOL = 1e-3, 1e-7


def data_root() -> Path:
    import onnx
    return Path(onnx.__file__).parent / "backend" / "test" / "data"


@dataclass
class Case:
    folder: str
    name: str
    model: Path
    data_sets: list  # [(inputs: [Path], outputs: [Path])]; light: [] (dummy)
    rtol: float = RTOL
    atol: float = ATOL

    @property
    def id(self) -> str:
        return f"{self.folder}/{self.name}"


def cases() -> list[Case]:
    root = data_root()
    out = []
    for folder in FOLDERS:
        d = root / folder
        if not d.is_dir():
            continue
        if folder == "light":
            for m in sorted(d.glob("light_*.onnx")):
                out.append(Case(folder, m.stem, m, []))
            continue
        for c in sorted(p for p in d.iterdir() if p.is_dir()):
            meta = c / "data.json"
            if meta.exists():
                j = json.loads(meta.read_text())
                url = j.get("url", "")
                prefix = "onnx/backend/test/data/"
                model = root / url[len(prefix):] if url.startswith(
                    prefix) else Path("/nonexistent") / url
                out.append(Case(folder, c.name, model, [],
                                j.get("rtol", RTOL), j.get("atol", ATOL)))
                continue
            sets = []
            for s in sorted(c.glob("test_data_set_*")):
                sets.append((sorted(s.glob("input_*.pb"),
                                    key=lambda p: int(p.stem.split("_")[1])),
                             sorted(s.glob("output_*.pb"),
                                    key=lambda p: int(p.stem.split("_")[1]))))
            out.append(Case(folder, c.name, c / "model.onnx", sets))
    return out


def _load_tensor(path: Path):
    """A TensorProto file as an array, or None when it is another kind of
    value (a sequence or map)."""
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    if not t.dims and not t.raw_data and t.data_type == 0:
        return None
    return numpy_helper.to_array(t)


def _dummy_data_sets(case: Case):
    """The backend runner's inputs for a light model: arange(n)/n in the
    input's shape (dims without a value are 1), and its stored output."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(str(case.model), load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    feeds = {}
    for x in m.graph.input:
        if x.name in inits:
            continue
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1
                      for d in x.type.tensor_type.shape.dim)
        n = int(np.prod(shape))
        feeds[x.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
    outs = []
    for i in range(len(m.graph.output)):
        p = case.model.parent / f"{case.model.stem}_output_{i}.pb"
        if not p.exists():
            return None
        t = onnx.TensorProto()
        t.ParseFromString(p.read_bytes())
        outs.append(numpy_helper.to_array(t))
    return [(feeds, outs)]


def _graph_io(model: Path):
    import onnx
    m = onnx.load(str(model), load_external_data=False)
    return [i.name for i in m.graph.input], [o.name for o in m.graph.output]


# A refusal: loomc's one-line error naming the node and its op, or the
# opset/dtype/attribute it does not support.
_REFUSAL = re.compile(
    r"(node '[^']*' \([A-Za-z0-9_.]+\): .*(not supported|unsupported|"
    r"only known at run time|known at import time|refused|"
    r"is too large to inline|cannot))"
    r"|(unsupported op '[A-Za-z0-9_.]+')"
    r"|(graph output '[^']*' is not supported as an output name)"
    r"|(opset \d+ could not be upgraded .* with ONNX's version converter)"
    r"|(has unsupported element type)"
    r"|(type .* is not supported)")


def classify_error(stderr: str) -> tuple[str, str]:
    """(status, reason) of a loomc failure (exit 1)."""
    lines = [ln for ln in stderr.strip().splitlines()
             if ln.strip() and ": note: " not in ln]
    if len(lines) == 1 and _REFUSAL.search(lines[0]):
        # The reason without the file path.
        reason = lines[0]
        m = re.search(r"(node '.*)$", reason)
        if m:
            reason = m.group(1)
        else:
            reason = re.sub(r"^.*?\.onnx: ", "", reason)
        return "refused", reason
    return "FAIL", "unclear error: " + " | ".join(lines)[:300]


def _run_bundle(bundle: Path, feeds: dict) -> dict:
    sys.path.insert(0, str(build_dir() / "python"))
    try:
        import loom
    except ImportError:
        loom = None
    if loom is not None:
        b = loom.Bundle.load(str(bundle))
        names = [n for n, _, _ in b.inputs("")]
        out = b.run({k: feeds[k] for k in names}, copy_inputs=True)
        return {k: np.array(v) for k, v in out.items()}
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        cmd = [str(build_dir() / "bin" / "loom-run"), str(bundle),
               "--output", str(d / "res")]
        for name, value in feeds.items():
            np.save(d / f"{name}.npy", value)
            cmd += ["--input", f"{name}={d / (name + '.npy')}"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"loom-run exit {r.returncode}: "
                               f"{r.stderr.strip()[-300:]}")
        return {f.stem: np.load(f) for f in (d / "res").glob("*.npy")}


def run_case(case: Case, workdir: Path) -> tuple[str, str]:
    """(status, reason): pass / refused / FAIL."""
    if not case.model.exists():
        return "FAIL", f"model {case.model} is missing"
    if case.folder in ("light", "real"):
        sets = _dummy_data_sets(case)
        if sets is None:
            return "FAIL", "no expected output file"
    else:
        sets = case.data_sets
    loomc = build_dir() / "bin" / "loomc"
    bundle = workdir / (case.id.replace("/", "__") + ".bundle")
    try:
        r = subprocess.run([str(loomc), str(case.model), "-o", str(bundle),
                            "-O", "1", "-j", "1"], capture_output=True,
                           text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "FAIL", "loomc timed out (300 s)"
    if r.returncode < 0 or r.returncode >= 128:
        return "FAIL", f"loomc died (exit {r.returncode}): " + \
            r.stderr.strip()[-200:]
    if r.returncode != 0:
        return classify_error(r.stderr)
    in_names, out_names = _graph_io(case.model)
    worst = 0.0
    for i, (inputs, outputs) in enumerate(sets):
        if case.folder in ("light", "real"):
            feeds, expected = inputs, outputs
        else:
            feeds = {}
            for k, p in enumerate(inputs):
                a = _load_tensor(p)
                if a is None:
                    return "FAIL", f"compiled, but input {p.name} is not a tensor"
                feeds[in_names[k]] = a
            expected = [_load_tensor(p) for p in outputs]
        try:
            got = _run_bundle(bundle, feeds)
        except Exception as e:  # a run failure is a FAIL, with its message
            return "FAIL", f"run failed: {str(e).strip()[:300]}"
        for k, exp in enumerate(expected):
            name = out_names[k]
            if name not in got:
                return "FAIL", f"output '{name}' missing (got {sorted(got)})"
            y = np.asarray(got[name])
            if y.shape != exp.shape:
                return "FAIL", (f"data set {i} output '{name}': shape "
                                f"{y.shape}, expected {exp.shape}")
            if y.dtype != exp.dtype:
                return "FAIL", (f"data set {i} output '{name}': dtype "
                                f"{y.dtype}, expected {exp.dtype}")
            try:
                np.testing.assert_allclose(y, exp, rtol=case.rtol,
                                           atol=case.atol)
            except AssertionError:
                diff = np.abs(y.astype(np.float64) - exp)
                return "FAIL", (f"data set {i} output '{name}': max abs err "
                                f"{diff.max():.3g} (rtol {case.rtol}, "
                                f"atol {case.atol})")
            if exp.size and np.issubdtype(exp.dtype, np.floating):
                e = np.abs(y.astype(np.float64) - exp).max() / max(
                    np.abs(exp).max(), 1e-30)
                worst = max(worst, float(e))
    return "pass", f"max rel err {worst:.2g}" if worst else "exact"


def run_all(jobs: int = 1, only=None) -> dict:
    from concurrent.futures import ThreadPoolExecutor
    cs = [c for c in cases() if only is None or c.id in only]
    with tempfile.TemporaryDirectory() as d:
        with ThreadPoolExecutor(jobs) as ex:
            res = list(ex.map(lambda c: run_case(c, Path(d)), cs))
    return {c.id: r for c, r in zip(cs, res)}


def summary(results: dict) -> str:
    lines = ["| folder | cases | pass | refused | FAIL |", "|---|---|---|---|---|"]
    tot = [0, 0, 0, 0]
    for folder in FOLDERS:
        rs = [s for k, (s, _) in results.items() if k.split("/")[0] == folder]
        if not rs:
            continue
        row = [len(rs), rs.count("pass"), rs.count("refused"), rs.count("FAIL")]
        tot = [a + b for a, b in zip(tot, row)]
        lines.append(f"| {folder} | " + " | ".join(map(str, row)) + " |")
    lines.append("| **all** | " + " | ".join(map(str, tot)) + " |")
    return "\n".join(lines)


def report(results: dict) -> str:
    out = ["# ONNX backend test data through loomc (generated)", "",
           "Generated by `test/python/onnx_conformance/conformance.py "
           "--report test/python/onnx_conformance/REPORT.md` "
           "(docs/IMPORT-ONNX.md).", "", summary(results), "",
           "| case | status | reason |", "|---|---|---|"]
    for k, (s, r) in sorted(results.items()):
        out.append(f"| {k} | {s} | {r.replace('|', '/')} |")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--report", type=Path)
    ap.add_argument("--expected", type=Path,
                    help="write the case -> pass|refused list here")
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()
    results = run_all(a.jobs, set(a.cases) or None)
    print(summary(results))
    for k, (s, r) in sorted(results.items()):
        if s == "FAIL":
            print(f"FAIL {k}: {r}")
    if a.report:
        a.report.write_text(report(results))
    if a.expected:
        a.expected.write_text(json.dumps(
            {k: s for k, (s, _) in sorted(results.items()) if s != "FAIL"},
            indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
