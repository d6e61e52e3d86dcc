"""Fixtures of the plan-from-a-config checks: tool paths from LOOM_BUILD_DIR,
and the tiny model writers of the llama importer tests."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llama"))
