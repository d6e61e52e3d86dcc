"""ONNX's backend test data as a conformance suite (conformance.py;
docs/IMPORT-ONNX.md). Each case must pass or be refused by name; a FAIL
(wrong numbers, a signal, an unclear error) fails. `expected.json` keeps CI
honest: a case listed as `pass` must still pass, one listed as `refused`
may start to pass (reported as a warning: update the list), and a case
missing from the list fails until it is added."""

import json
import warnings
from pathlib import Path

import pytest

import conformance

HERE = Path(__file__).resolve().parent
EXPECTED = json.loads((HERE / "expected.json").read_text())
CASES = conformance.cases()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("bundles")


@pytest.fixture(scope="module", autouse=True)
def tools():
    from loom_paths import tool
    tool("loomc")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case, workdir):
    status, reason = conformance.run_case(case, workdir)
    assert status != "FAIL", f"{case.id}: {reason}"
    want = EXPECTED.get(case.id)
    assert want is not None, (
        f"{case.id} is not in expected.json (now {status}: {reason}); "
        "regenerate it with conformance.py --expected")
    if want == "pass":
        assert status == "pass", f"{case.id} passed before, now: {reason}"
    elif status == "pass":
        warnings.warn(f"{case.id} now passes (expected.json says refused); "
                      "update expected.json")


def test_all_folders_present():
    """The wheel still ships the folders the table in IMPORT-ONNX.md counts."""
    folders = {c.folder for c in CASES}
    assert {"simple", "pytorch-operator", "pytorch-converted"} <= folders
