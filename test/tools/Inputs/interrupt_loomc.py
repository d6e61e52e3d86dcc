"""Starts `loomc MODEL -o OUT` and interrupts it (SIGINT, then SIGTERM on a
second run) while it is linking the bundle's library, when both its staging
folder and its temporary bundle exist; checks it dies of the signal and
leaves neither OUT.stage-PID nor OUT.tmp-PID behind.
  interrupt_loomc.py LOOMC MODEL OUT

Deterministic: the C compiler driver loomc links with (`cc`, found through
PATH) is replaced by a script that marks that it started and then sleeps, so
loomc is interrupted at a known point instead of racing a fast compile."""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

loomc, model, out = sys.argv[1:4]
with tempfile.TemporaryDirectory() as bin_dir:
    marker = os.path.join(bin_dir, "linking")
    cc = os.path.join(bin_dir, "cc")
    with open(cc, "w") as f:
        f.write(f"#!/bin/sh\ntouch '{marker}'\nexec sleep 120\n")
    os.chmod(cc, 0o755)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
    for sig in (signal.SIGINT, signal.SIGTERM):
        if os.path.exists(marker):
            os.unlink(marker)
        p = subprocess.Popen([loomc, model, "-o", out], stderr=subprocess.PIPE,
                             env=env, start_new_session=True)
        t0 = time.time()
        while not os.path.exists(marker) and p.poll() is None \
                and time.time() - t0 < 120:
            time.sleep(0.01)
        if p.poll() is not None:
            sys.exit(f"loomc ended before linking ({p.returncode}): "
                     f"{p.stderr.read().decode(errors='replace')}")
        stage = f"{out}.stage-{p.pid}"
        tmp = f"{out}.tmp-{p.pid}"
        if not (os.path.isdir(stage) and os.path.isdir(tmp)):
            sys.exit(f"while linking, expected {stage} and {tmp} to exist")
        p.send_signal(sig)
        try:
            p.wait(timeout=60)
        finally:
            try:  # the sleeping `cc` of this session
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        left = glob.glob(f"{out}.stage-*") + glob.glob(f"{out}.tmp-*")
        if p.returncode != -sig:
            sys.exit(f"{sig.name}: exit {p.returncode}, expected death by "
                     "the signal")
        if left:
            sys.exit(f"{sig.name}: left behind: {left}")
        if os.path.exists(out):
            sys.exit(f"{sig.name}: {out} was written")
print("ok")
