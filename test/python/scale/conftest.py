"""Fixtures of the scale-test tooling checks: tool paths from LOOM_BUILD_DIR."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
