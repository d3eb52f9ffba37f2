#!/usr/bin/env python3
"""bench step's relational dump replayed in PyG (bench/pyg_step.py, bench/pyg_hetero_step.py).

Usage: py_hetero_step_pyg.py PATH/TO/graphdirect PATH/TO/bench/pyg_step.py

For R-SAGE, R-GCN and R-GAT: `graphdirect bench step --model M --cpu --dump DIR` on mag-tiny (the model
on the CPU backend, so that the dump exists without a GPU), then `pyg_step.py DIR --device cpu`.
The script must read the dump, build the model from our initial parameters, find the same
evaluation loss of the first timed minibatch as ours (it exits non-zero otherwise), and train
with finite losses in both forms. Exits 77 (skipped) without torch or torch_geometric.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import torch  # noqa: F401
    import torch_geometric  # noqa: F401
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)


def check(cli, script, tmp, model):
    d = os.path.join(tmp, model)
    subprocess.run([cli, "bench", "step", "--model", model, "--heads", "2", "--cpu", "--preset",
                    "mag-tiny", "--batch", "128", "--hidden", "16", "--steps", "3", "--warmup",
                    "1", "--dump", d], check=True, stdout=subprocess.DEVNULL)
    out = os.path.join(tmp, f"{model}-pyg.json")
    subprocess.run([sys.executable, script, d, "--device", "cpu", "--warmup", "1", "--json",
                    out], check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        rec = json.load(f)
    ours = rec["ours_eval_loss_step0"]
    assert rec["model"] == model and rec["steps"] == 3, rec
    for r in rec["forms"]:
        assert r["available"], r
        assert math.isfinite(r["first_loss"]) and math.isfinite(r["last_loss"]), r
        assert r["eval_loss_diff_vs_ours"] <= 1e-3 * max(1.0, abs(ours)), r
        print(f"{model} {r['form']}: first loss {r['first_loss']:.4f}, evaluation loss of step "
              f"0 {r['eval_loss_step0']:.6f} (ours {ours:.6f})")
    assert rec["best_form"] in ("heteroconv", "trimmed"), rec["best_form"]


def main():
    cli, script = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="gd-hstep-") as tmp:
        for model in ("rsage", "rgcn", "rgat"):
            check(cli, script, tmp, model)
    print("ok")


if __name__ == "__main__":
    main()
