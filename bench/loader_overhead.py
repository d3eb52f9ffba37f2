#!/usr/bin/env python3
"""What iterating graphdirect.Loader from Python costs over iterating it from C (issue 6, item 6).

Four loops over whole epochs of the same loader settings (default: the `products` preset,
mode zero-copy, fanouts 15,10,5, batch 1024, seed 1, as `graphdirect bench loader`):

  c        `graphdirect bench loader --json ...` (the C reference: every minibatch fetched,
           every field exported as DLPack and deleted, released), run as a subprocess;
  ctypes   the least Python can do: gd_loader_next / gd_batch_release through ctypes;
  floor    the least a binding can do that imports every field: gd_loader_next,
           gd_batch_export_all, each tensor wrapped in a bare capsule and given to the
           consumer, gd_batch_release (so python - floor is what graphdirect's own classes add);
  python   `for batch in loader:` with graphdirect's Batch objects, every field (input_nodes,
           features, labels, each block's indptr and indices) imported by the consumer:
           torch.from_dlpack when torch is installed, else numpy.from_dlpack for host batches,
           else exported through __dlpack__ and dropped.

Each loop runs one warm-up epoch and then --epochs timed epochs; the fastest epoch counts (as
in the C benchmark). Reported: seconds per epoch, the ratios python/c (the target: <= 1.05)
and python/ctypes, and per-minibatch microseconds that Python adds over the C loop and over
the floor. Prints one JSON object (and writes it to --json FILE).

On a machine without a GPU the same comparison runs in cpu mode, e.g. with a small, cheap
minibatch so that the Python cost is not lost in the sampling:
  python3 bench/loader_overhead.py --preset tiny --mode cpu --fanouts 2,2,2 --batch 8 \
      --threads 1 --epochs 15

Usage (on the GPU machine):
  GRAPHDIRECT_LIB=build/libgraphdirect.so.0 python3 bench/loader_overhead.py \
      --cli build/graphdirect --json bench/results/<date>-loader-overhead.json
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import graphdirect  # noqa: E402
from graphdirect import _dlpack, _lib  # noqa: E402
import graphdirect.pyg  # noqa: E402,F401

try:
    import torch
except ImportError:
    torch = None
try:
    import numpy
except ImportError:
    numpy = None


class _Capsule:
    """Hands numpy.from_dlpack (which wants a producer object) a capsule made beforehand."""
    __slots__ = ("cap", "dev")

    def __init__(self, dev):
        self.cap, self.dev = None, dev

    def __dlpack__(self, **_kw):
        return self.cap

    def __dlpack_device__(self):
        return self.dev


def epoch_ctypes(loader, epoch):
    """The C loop's minimum from Python: fetch and release, nothing else."""
    lib, ptr = _lib.lib, loader._ptr
    loader._release_batches("a benchmark epoch started")
    _lib.check(lib.gd_loader_start_epoch(ptr, epoch))
    out = ctypes.c_void_p()
    ref = ctypes.byref(out)
    nxt, rel = lib.gd_loader_next, lib.gd_batch_release
    n = 0
    while True:
        st = nxt(ptr, ref)
        if st:
            _lib.check(st)
        if not out.value:
            return n
        rel(out.value)
        n += 1


def epoch_floor(loader, epoch, consumer):
    """One export call a minibatch and the consumer's import of each tensor, nothing else."""
    lib, ptr = _lib.lib, loader._ptr
    loader._release_batches("a benchmark epoch started")
    _lib.check(lib.gd_loader_start_epoch(ptr, epoch))
    out = ctypes.c_void_p()
    ref = ctypes.byref(out)
    nfields = 3 + 2 * len(loader.fanouts)
    tensors = (ctypes.c_void_p * nfields)()
    nxt, rel, export_all = lib.gd_loader_next, lib.gd_batch_release, lib.gd_batch_export_all
    if export_all.argtypes is None:  # a binding older than gd_batch_export_all (a comparison)
        export_all.restype = ctypes.c_int
        export_all.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                               ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
    new = ctypes.pythonapi.PyCapsule_New  # argtypes and restype set by graphdirect._dlpack
    dev = (2, int(loader.device[5:])) if loader.on_device else (1, 0)
    wrap = _Capsule(dev)
    destructor = _dlpack._DESTRUCTOR_PTR  # an unconsumed capsule deletes its tensor
    if consumer == "torch":
        def imp(cap):
            torch.from_dlpack(cap)
    elif consumer == "numpy":
        def imp(cap):
            wrap.cap = cap
            numpy.from_dlpack(wrap)
            wrap.cap = None
    else:
        imp = None
    n = 0
    while True:
        st = nxt(ptr, ref)
        if st:
            _lib.check(st)
        if not out.value:
            return n
        _lib.check(export_all(out.value, None, tensors, nfields))
        for m in tensors[:]:
            if m:
                if imp is None:
                    ctypes.pythonapi.PyCapsule_New(m, b"dltensor", destructor)
                else:
                    imp(new(m, b"dltensor", None))
        rel(out.value)
        n += 1


def epoch_python(loader, epoch, consumer):
    """The user's loop: Batch objects, every field imported (torch, numpy) or exported."""
    n = 0
    if consumer == "torch":
        imp = torch.from_dlpack
    elif consumer == "numpy":
        imp = numpy.from_dlpack
    else:
        def imp(a):
            return a.__dlpack__()
    for batch in loader.epoch(epoch):
        imp(batch.input_nodes)
        imp(batch.features)
        imp(batch.labels)
        for blk in batch.blocks:
            imp(blk.indptr)
            imp(blk.indices)
        n += 1
    return n


def epoch_python_tensors(loader, epoch):
    """The torch user's fast path: graphdirect.pyg.tensors(batch), every field as a tensor."""
    n = 0
    for batch in loader.epoch(epoch):
        graphdirect.pyg.tensors(batch)
        n += 1
    return n


def run_c(cli, args):
    with tempfile.TemporaryDirectory(prefix="gd-lo-") as tmp:
        path = os.path.join(tmp, "c.json")
        cmd = [cli, "bench", "loader", "--preset", args.preset, "--mode", args.mode,
               "--fanouts", args.fanouts, "--batch", str(args.batch), "--epochs",
               str(args.epochs), "--seed", str(args.seed), "--device", str(args.device),
               "--json", path]
        if args.nodes:
            cmd += ["--nodes", str(args.nodes)]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, stdout=sys.stderr)
        with open(path) as f:
            return json.load(f)


def main():
    p = argparse.ArgumentParser(description="Python vs C loader iteration")
    p.add_argument("--cli", default=os.environ.get("GRAPHDIRECT_CLI"),
                   help="the graphdirect program for the C reference (default: beside "
                        "$GRAPHDIRECT_LIB; skipped if absent)")
    p.add_argument("--preset", default="products")
    p.add_argument("--nodes", type=int, help="scale the preset to N nodes")
    p.add_argument("--mode", default="zero-copy")
    p.add_argument("--fanouts", default="15,10,5")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--epochs", type=int, default=8,
                   help="timed epochs of each loop, taken in turns (the best counts)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="CPU threads (default: all cores)")
    p.add_argument("--no-torch", action="store_true", help="do not import into torch (numpy "
                   "for host batches, else export capsules and drop them)")
    p.add_argument("--json", help="write the result here")
    args = p.parse_args()
    cli = args.cli or os.path.join(os.path.dirname(graphdirect.library_path()), "graphdirect")
    use_torch = torch is not None and not args.no_torch

    c = run_c(cli, args) if os.path.exists(cli) else None
    print("generating %s in memory" % args.preset, file=sys.stderr, flush=True)
    ds = graphdirect.generate(args.preset, seed=args.seed, nodes=args.nodes)
    # gpu_cache=None: what the GPU memory budget leaves, as the C benchmark's default.
    loader = graphdirect.Loader(ds, fanouts=[int(f) for f in args.fanouts.split(",")],
                                batch_size=args.batch, mode=args.mode, gpu_cache=None,
                                seed=args.seed, device=args.device, threads=args.threads)
    if use_torch:
        consumer = "torch"
    elif numpy is not None and not loader.on_device:
        consumer = "numpy"
    else:
        consumer = "capsules"
    print("loader: %s; %d minibatches an epoch" % (loader.plan, len(loader)), file=sys.stderr)
    # The loops take turns, epoch by epoch, so that a slow spell of the machine (they vary by
    # 20 % between processes on the lent VM) falls on all of them alike; the best epoch of each.
    loops = [("ctypes", lambda e: epoch_ctypes(loader, e)),
             ("floor", lambda e: epoch_floor(loader, e, consumer)),
             ("python", lambda e: epoch_python(loader, e, consumer))]
    if use_torch:
        loops.append(("tensors", lambda e: epoch_python_tensors(loader, e)))
    times = {name: [] for name, _ in loops}
    counts = {}
    for name, fn in loops:  # warm-up
        fn(0)
    for r in range(1, args.epochs + 1):
        for name, fn in loops:
            t0 = time.perf_counter()
            counts[name] = fn(r)
            times[name].append(time.perf_counter() - t0)
    ct_best, ct_times, n1 = min(times["ctypes"]), times["ctypes"], counts["ctypes"]
    fl_best, fl_times, n3 = min(times["floor"]), times["floor"], counts["floor"]
    py_best, py_times, n2 = min(times["python"]), times["python"], counts["python"]
    if use_torch:
        pt_best, pt_times, n4 = min(times["tensors"]), times["tensors"], counts["tensors"]
        assert n4 == n2, (n4, n2)
    loader.close()
    if c is not None:
        # The C reference again after the Python loops: the better of its two runs.
        c2 = run_c(cli, args)
        if c2["best_epoch_s"] < c["best_epoch_s"]:
            c2["c_runs_best_epoch_s"] = [c["best_epoch_s"], c2["best_epoch_s"]]
            c = c2
        else:
            c["c_runs_best_epoch_s"] = [c["best_epoch_s"], c2["best_epoch_s"]]
    ds.close()
    assert n1 == n2 == n3, (n1, n2, n3)

    result = {
        "benchmark": "loader_overhead", "preset": args.preset, "mode": loader.mode,
        "fanouts": args.fanouts, "batch": args.batch, "minibatches": n2,
        "consumer": {"torch": "torch.from_dlpack", "numpy": "numpy.from_dlpack",
                     "capsules": "__dlpack__ capsules"}[consumer],
        "ctypes_epoch_s": ct_best, "ctypes_epochs_s": ct_times,
        "floor_epoch_s": fl_best, "floor_epochs_s": fl_times,
        "python_epoch_s": py_best, "python_epochs_s": py_times,
        "python_over_ctypes": py_best / ct_best,
        # Microseconds a minibatch: the whole Python loop over bare next/release, and what
        # graphdirect's classes add over the floor (one export call, the consumer's imports).
        "python_per_batch_us": 1e6 * (py_best - ct_best) / max(n2, 1),
        "binding_per_batch_us": 1e6 * (py_best - fl_best) / max(n2, 1),
        "library": graphdirect.version(),
        "torch": torch.__version__ if torch is not None else None,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if c is not None:
        result["c_epoch_s"] = c["best_epoch_s"]
        result["c_exports"] = c.get("exports")
        result["c_runs_best_epoch_s"] = c.get("c_runs_best_epoch_s")
        result["python_over_c"] = py_best / c["best_epoch_s"]
        result["python_over_c_per_batch_us"] = 1e6 * (py_best - c["best_epoch_s"]) / max(n2, 1)
        result["target"] = 1.05
        result["pass"] = result["python_over_c"] <= 1.05
        if use_torch:
            # The documented torch path (graphdirect.pyg.tensors): the same tensors, one call.
            result["python_tensors_epoch_s"] = pt_best
            result["python_tensors_epochs_s"] = pt_times
            result["python_tensors_over_c"] = pt_best / c["best_epoch_s"]
            result["python_tensors_pass"] = result["python_tensors_over_c"] <= 1.05
        for k in ("device", "commit", "git_commit"):
            if k in c:
                result["c_" + k] = c[k]
    print("epoch: python %.4f s, ctypes next/release %.4f s (x%.3f), floor %.4f s; a minibatch: "
          "python +%.1f us over next/release, +%.1f us over the floor%s"
          % (py_best, ct_best, py_best / ct_best, fl_best, result["python_per_batch_us"],
             result["binding_per_batch_us"],
             ", C %.4f s: python/C = %.3f (target <= 1.05: %s)"
             % (c["best_epoch_s"], result["python_over_c"], "PASS" if result["pass"] else "FAIL")
             if c is not None else ", no C reference (--cli)"))
    if use_torch and c is not None:
        print("graphdirect.pyg.tensors(batch) loop: %.4f s: python/C = %.3f (target <= 1.05: %s)"
              % (pt_best, result["python_tensors_over_c"],
                 "PASS" if result["python_tensors_pass"] else "FAIL"))
    line = json.dumps(result)
    print(line)
    if args.json:
        with open(args.json + ".tmp", "w") as f:
            f.write(line + "\n")
        os.replace(args.json + ".tmp", args.json)
    return 0 if result.get("pass", True) else 1


if __name__ == "__main__":
    sys.exit(main())
