#!/usr/bin/env python3
"""Compares loom-run's output with the numpy reference written by
make_model.py; exits non-zero on a mismatch."""
import sys
import numpy as np

out, ref = np.load(sys.argv[1]), np.load(sys.argv[2])
err = np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-30)
print(f"{sys.argv[1]}: shape {out.shape}, max relative error {err:.2e}")
sys.exit(0 if out.shape == ref.shape and err <= 1e-4 else 1)
