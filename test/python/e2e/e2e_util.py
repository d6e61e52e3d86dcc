"""Helpers of the end-to-end tests (kept out of conftest.py so that the
test folders' conftest modules do not shadow each other)."""
import subprocess


def run(cmd, **kw):
    """Runs cmd, failing the test with its output when it fails."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    if p.returncode != 0:
        raise AssertionError(
            f"command failed ({p.returncode}): {' '.join(map(str, cmd))}\n"
            f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p
