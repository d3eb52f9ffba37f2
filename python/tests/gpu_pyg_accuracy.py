#!/usr/bin/env python3
"""PyG's GraphSAGE trained on graphdirect minibatches reaches graphdirect's own accuracy.

Generates a preset (default `small`) into a directory, trains GraphSAGE on it twice with the
same settings (fanouts 10,5, batch 1024, hidden 128, dropout 0.5, Adam lr 0.003, 5 epochs, the
best-validation model tested by sampled inference): once with `graphdirect train` (its metrics
file gives the test accuracy) and once with examples/pyg_graphsage.py (PyG SAGEConv fed by
graphdirect.Loader). Prints both and one JSON line; exit 0 when they are within --tolerance
points (default 1), 1 otherwise, 77 without torch, torch_geometric or a GPU.

Usage (on the GPU machine, after building):
  GRAPHDIRECT_LIB=build/libgraphdirect.so.0 python3 python/tests/gpu_pyg_accuracy.py \
      --cli build/graphdirect --json bench/results/<date>-pyg-accuracy.json
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

try:
    import torch
    import torch_geometric  # noqa: F401
except ImportError as e:
    print("skipping: %s" % e, file=sys.stderr)
    sys.exit(77)

import graphdirect  # noqa: E402

if not (torch.cuda.is_available() and graphdirect.has_cuda() and graphdirect.device_count()):
    print("skipping: no CUDA GPU for torch and graphdirect", file=sys.stderr)
    sys.exit(77)

import pyg_graphsage  # noqa: E402


def graphdirect_train(cli, data, mode, settings, metrics):
    cmd = [cli, "train", data, "--mode", mode, "--no-baseline", "--metrics", metrics,
           "--epochs", str(settings["epochs"]), "--batch", str(settings["batch"]),
           "--fanouts", settings["fanouts"], "--hidden", str(settings["hidden"]),
           "--dropout", str(settings["dropout"]), "--lr", str(settings["lr"]),
           "--seed", str(settings["seed"])]
    print("$ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    with open(metrics) as f:
        tests = [r for r in map(json.loads, f) if r.get("type") == "test" and
                 r.get("model") == "graphsage"]
    if not tests or tests[-1].get("test_acc") is None:
        sys.exit("gpu_pyg_accuracy: %s has no graphsage test record" % metrics)
    return tests[-1]


def main():
    p = argparse.ArgumentParser(description="PyG on graphdirect vs graphdirect train")
    p.add_argument("--cli", default=os.environ.get("GRAPHDIRECT_CLI"),
                   help="the graphdirect program (default: beside $GRAPHDIRECT_LIB)")
    p.add_argument("--preset", default="small")
    p.add_argument("--mode", default="zero-copy")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tolerance", type=float, default=1.0, help="points of accuracy")
    p.add_argument("--json", help="also write the result here (bench/results/...)")
    args = p.parse_args()
    cli = args.cli or os.path.join(os.path.dirname(graphdirect.library_path()), "graphdirect")
    if not os.path.exists(cli):
        sys.exit("gpu_pyg_accuracy: %s not found: pass --cli build/graphdirect" % cli)
    settings = {"epochs": args.epochs, "batch": 1024, "fanouts": "10,5", "hidden": 128,
                "dropout": 0.5, "lr": 0.003, "seed": args.seed}
    with tempfile.TemporaryDirectory(prefix="gd-pygacc-") as tmp:
        data = os.path.join(tmp, args.preset)
        graphdirect.generate(args.preset, seed=args.seed, out=data).close()
        t0 = time.perf_counter()
        gd = graphdirect_train(cli, data, args.mode, settings, os.path.join(tmp, "m.jsonl"))
        gd_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        pyg = pyg_graphsage.main([data, "--device", "cuda", "--mode", args.mode,
                                  "--epochs", str(settings["epochs"]),
                                  "--batch", str(settings["batch"]),
                                  "--fanouts", settings["fanouts"],
                                  "--hidden", str(settings["hidden"]),
                                  "--dropout", str(settings["dropout"]),
                                  "--lr", str(settings["lr"]), "--seed", str(settings["seed"])])
        pyg_s = time.perf_counter() - t0
    diff = 100.0 * (pyg["test_acc"] - gd["test_acc"])
    ok = abs(diff) <= args.tolerance
    result = {
        "benchmark": "pyg_accuracy", "preset": args.preset, "mode": args.mode,
        "settings": settings, "graphdirect_test_acc": gd["test_acc"],
        "graphdirect_test_acc_full": gd.get("test_acc_full"),
        "graphdirect_best_epoch": gd.get("best_epoch"), "pyg_test_acc": pyg["test_acc"],
        "pyg_best_epoch": pyg["best_epoch"], "diff_points": round(diff, 3),
        "tolerance_points": args.tolerance, "pass": ok, "graphdirect_s": round(gd_s, 2),
        "pyg_s": round(pyg_s, 2), "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
        "library": graphdirect.version(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": os.environ.get("GD_GIT_COMMIT") or _git_commit(),
    }
    print("test accuracy: graphdirect train %.4f, PyG SAGEConv on graphdirect.Loader %.4f "
          "(%+.2f points; %s within %.1f)" % (gd["test_acc"], pyg["test_acc"], diff,
                                              "PASS" if ok else "FAIL", args.tolerance))
    line = json.dumps(result)
    print(line)
    if args.json:
        with open(args.json + ".tmp", "w") as f:
            f.write(line + "\n")
        os.replace(args.json + ".tmp", args.json)
    return 0 if ok else 1


def _git_commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip() or None
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(main())
