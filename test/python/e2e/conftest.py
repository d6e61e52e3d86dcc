"""Shared fixtures of the end-to-end tests: tool paths from LOOM_BUILD_DIR."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from loom_paths import runtime_tools  # noqa: E402


@pytest.fixture(scope="session")
def tools():
    return runtime_tools()
