#!/usr/bin/env python3
"""`graphdirect convert` of OGB's binary layout against the disk it reads (issue 19's target:
convert of a papers100M-layout .npz runs at >= 0.5 of the disk's sequential read bandwidth,
measured in the same run).

One run, in a work folder on the disk to measure:
  1. writes raw/data.npz (edge_index int64 2 x E, node_feat float32 N x D, node_year,
     num_nodes_list, num_edges_list), raw/node-label.npz (float64, NaN = unlabelled) and
     split/time/*.csv.gz, as numpy writes them (np.savez: stored members, zip64 past 4 GiB),
     at papers100M's size by default (111,059,956 nodes, 1,615,685,872 edges, 128 features:
     about 83 GB);
  2. the ceiling: the page cache of data.npz dropped (fsync, POSIX_FADV_DONTNEED), one
     sequential read of it in 8 MiB requests, GB/s;
  3. the page cache dropped again, `graphdirect convert DIR --out OUT` timed: the archive's
     bytes over the seconds, and its ratio to the ceiling (PASS at >= 0.5);
  4. the output's node and edge counts checked against what was written.

Usage (the 4-GPU machines have the disk for the full size; smaller sizes run anywhere):
  python3 bench/convert_npz.py --cli build/graphdirect --dir /scratch/npz [--nodes N]
      [--avg-degree K] [--dim D] [--json FILE] [--keep]
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np


def drop_cache(path):
    """Write back and drop the page cache of a file (its pages are not mapped by anyone)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def seq_read_gbs(path, chunk=8 << 20):
    """One sequential read of the file, GB/s (the page cache dropped first)."""
    drop_cache(path)
    buf = bytearray(chunk)
    view = memoryview(buf)
    total = 0
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(view)
            if not n:
                break
            total += n
    return total / (time.perf_counter() - t0) / 1e9, total


def write_layout(root, n, e, d, seed):
    """OGB's binary layout of a random graph; features filled in slices (one copy in memory)."""
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.join(root, "raw"), exist_ok=True)
    os.makedirs(os.path.join(root, "split", "time"), exist_ok=True)
    t0 = time.perf_counter()
    ei = np.empty((2, e), dtype=np.int64)
    step = 1 << 26
    for a in range(0, e, step):
        b = min(e, a + step)
        ei[:, a:b] = rng.integers(0, n, size=(2, b - a), dtype=np.int64)
    x = np.empty((n, d), dtype=np.float32)
    rows = max(1, step // d)
    for a in range(0, n, rows):
        b = min(n, a + rows)
        x[a:b] = rng.standard_normal((b - a, d), dtype=np.float32)
    np.savez(os.path.join(root, "raw", "data.npz"), edge_index=ei, node_feat=x,
             num_nodes_list=np.array([n]), num_edges_list=np.array([e]),
             node_year=rng.integers(1990, 2020, size=(n, 1)))
    del ei, x
    y = rng.integers(0, 172, size=(n, 1)).astype(np.float64)
    y[rng.random(n) < 0.9] = np.nan  # papers100M labels about a tenth of its nodes
    np.savez(os.path.join(root, "raw", "node-label.npz"), node_label=y)
    labelled = np.flatnonzero(~np.isnan(y[:, 0]))
    rng.shuffle(labelled)
    k = len(labelled)
    for name, ids in (("train", labelled[: k * 8 // 10]), ("valid", labelled[k * 8 // 10: k * 9 // 10]),
                      ("test", labelled[k * 9 // 10:])):
        with gzip.open(os.path.join(root, "split", "time", name + ".csv.gz"), "wt") as f:
            f.write("\n".join(map(str, ids)) + "\n")
    return time.perf_counter() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", required=True, help="the graphdirect command")
    p.add_argument("--dir", required=True, help="a work folder on the disk to measure")
    p.add_argument("--nodes", type=int, default=111059956)
    p.add_argument("--avg-degree", type=float, default=14.5478)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    a = p.parse_args(argv)
    n, d = a.nodes, a.dim
    e = int(round(n * a.avg_degree))
    root, out = os.path.join(a.dir, "papers-bin"), os.path.join(a.dir, "papers-out")
    for path in (root, out):
        shutil.rmtree(path, ignore_errors=True)
    need = 16 * e + 4 * n * d + 16 * n
    free = shutil.disk_usage(a.dir).free
    if 2.2 * need > free:
        sys.exit("convert_npz: %.1f GB of archives and about as much output need %.1f GB; %s "
                 "has %.1f GB free" % (need / 1e9, 2.2 * need / 1e9, a.dir, free / 1e9))
    gen_s = write_layout(root, n, e, d, a.seed)
    data = os.path.join(root, "raw", "data.npz")
    npz_bytes = os.path.getsize(data) + os.path.getsize(os.path.join(root, "raw", "node-label.npz"))
    print("wrote %s: %d nodes, %d edges, %d features, %.2f GB of .npz in %.1f s"
          % (root, n, e, d, npz_bytes / 1e9, gen_s))

    read_gbs, _ = seq_read_gbs(data)
    print("ceiling: sequential read of data.npz from a dropped page cache: %.3f GB/s" % read_gbs)

    for name in ("data.npz", "node-label.npz"):
        drop_cache(os.path.join(root, "raw", name))
    t0 = time.perf_counter()
    r = subprocess.run([a.cli, "convert", root, "--out", out], capture_output=True, text=True)
    conv_s = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit("convert failed (%d):\n%s" % (r.returncode, r.stderr[-3000:]))
    meta = json.load(open(os.path.join(out, "meta.json")))
    nodes = meta.get("num_nodes")
    edges = meta["arrays"]["indices"]["shape"][0]
    conv_gbs = npz_bytes / conv_s / 1e9
    ratio = conv_gbs / read_gbs
    print("convert: %.1f s, %.3f GB/s of archive; %s nodes, %d edges in the CSC (duplicates "
          "removed)" % (conv_s, conv_gbs, nodes, edges))
    ok = nodes == n and 0 < edges <= e
    print("  %s  convert / sequential read (>= 0.5)   %.2f" % ("PASS" if ratio >= 0.5 else "MISS",
                                                             ratio))
    if not ok:
        print("  FAIL  the output has %s nodes and %d edges (wrote %d and %d)" % (nodes, edges, n, e))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"benchmark": "convert_npz", "nodes": n, "edges": e, "dim": d,
                       "npz_bytes": npz_bytes, "generate_seconds": gen_s,
                       "sequential_read_gbs": read_gbs, "convert_seconds": conv_s,
                       "convert_gbs": conv_gbs, "ratio": ratio, "csc_edges": edges,
                       "convert_stderr_tail": r.stderr[-2000:]}, f, indent=1)
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
