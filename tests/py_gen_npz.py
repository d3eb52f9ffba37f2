#!/usr/bin/env python3
"""bench/helpers/gen_ogb_npz's archives, and convert's parallel read of stored members (issue 19).

gen_ogb_npz writes OGB's binary raw layout in parallel chunks whose CRC-32s it joins; convert
reads stored members in 32 MiB chunks on every core and joins their CRCs the same way. Both are
checked here on members of several chunks (numpy's own tests use arrays of one chunk): numpy
must read the generated archives (zipfile checks every CRC), and the converted dataset must hold
numpy's features exactly and the CSC of numpy's edge_index (duplicates removed).

Usage: py_gen_npz.py <graphdirect-cli> <gen_ogb_npz>. Exit 0 pass, 1 fail, 77 skip (no numpy).
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("numpy is not installed: skipped")
    sys.exit(77)


def main():
    cli, gen = sys.argv[1], sys.argv[2]
    n, e, d = 60000, 5000000, 160  # node_feat 38 MB, each edge row 40 MB: 2 chunks each
    with tempfile.TemporaryDirectory() as tmp:
        root, out = os.path.join(tmp, "bin"), os.path.join(tmp, "out")
        r = subprocess.run([gen, root, "--nodes", str(n), "--edges", str(e), "--dim", str(d),
                            "--seed", "7"], capture_output=True, text=True)
        if r.returncode != 0:
            print("gen_ogb_npz failed:", r.stderr)
            return 1
        z = np.load(os.path.join(root, "raw", "data.npz"))
        ei, x = z["edge_index"], z["node_feat"]
        assert ei.shape == (2, e) and ei.dtype == np.int64, ei.shape
        assert x.shape == (n, d) and x.dtype == np.float32, x.shape
        assert int(z["num_nodes_list"][0]) == n and int(z["num_edges_list"][0]) == e
        assert ei.min() >= 0 and ei.max() < n
        y = np.load(os.path.join(root, "raw", "node-label.npz"))["node_label"]
        assert y.shape == (n, 1) and np.isnan(y).sum() > n * 9 // 10
        r = subprocess.run([cli, "convert", root, "--out", out], capture_output=True, text=True)
        if r.returncode != 0:
            print("convert failed:", r.stderr[-2000:])
            return 1
        feat = np.load(os.path.join(out, "features.npy"), mmap_mode="r")
        if not np.array_equal(feat, x):
            print("FAIL: the converted features differ from node_feat")
            return 1
        indptr = np.load(os.path.join(out, "indptr.npy"))
        indices = np.load(os.path.join(out, "indices.npy")).astype(np.int64)
        dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        got = np.unique(dst * n + indices)
        want = np.unique(ei[1] * n + ei[0])
        if got.shape != want.shape or not np.array_equal(got, want):
            print("FAIL: the CSC holds %d edges, numpy's unique edges are %d" % (got.size, want.size))
            return 1
        labels = np.load(os.path.join(out, "labels.npy"))
        want_l = np.where(np.isnan(y[:, 0]), -1, np.nan_to_num(y[:, 0])).astype(np.int64)
        if not np.array_equal(labels, want_l):
            print("FAIL: labels differ")
            return 1
        # A flipped byte in the second chunk of node_feat: the joined CRC must catch it.
        path = os.path.join(root, "raw", "data.npz")
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) - 8 * n - 400 - (1 << 20))  # inside node_feat's tail
            b = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([b[0] ^ 0x40]))
        r = subprocess.run([cli, "convert", root, "--out", out + "2"], capture_output=True,
                           text=True)
        if r.returncode == 0 or "CRC-32" not in r.stderr:
            print("FAIL: a corrupt stored member was not refused:", r.returncode, r.stderr[-500:])
            return 1
    print("gen_ogb_npz archives read by numpy; convert (multi-chunk stored members) equals numpy; "
          "a flipped byte is refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
