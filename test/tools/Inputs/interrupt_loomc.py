"""Starts `loomc MODEL -o OUT` and interrupts it (SIGINT, then SIGTERM on a
second run) once its staging folder exists; checks it dies of the signal
and leaves neither OUT.stage-PID nor OUT.tmp-PID behind.
  interrupt_loomc.py LOOMC MODEL OUT"""
import glob
import os
import signal
import subprocess
import sys
import time

loomc, model, out = sys.argv[1:4]
for sig in (signal.SIGINT, signal.SIGTERM):
    p = subprocess.Popen([loomc, model, "-o", out], stderr=subprocess.PIPE)
    stage = f"{out}.stage-{p.pid}"
    t0 = time.time()
    while not os.path.exists(stage) and p.poll() is None and time.time() - t0 < 60:
        time.sleep(0.002)
    if p.poll() is not None:
        sys.exit(f"loomc finished before it could be interrupted ({p.returncode})")
    p.send_signal(sig)
    p.wait(timeout=60)
    left = glob.glob(f"{out}.stage-*") + glob.glob(f"{out}.tmp-*")
    if p.returncode != -sig:
        sys.exit(f"{sig.name}: exit {p.returncode}, expected death by the signal")
    if left:
        sys.exit(f"{sig.name}: left behind: {left}")
    if os.path.exists(out):
        sys.exit(f"{sig.name}: {out} was written")
print("ok")
