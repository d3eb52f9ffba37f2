#!/usr/bin/env python3
"""`graphdirect convert` reads OGB's binary raw layout and IGB's (issue 19, item 3): raw/data.npz
(edge_index, node_feat, num_nodes_list, ...) and raw/node-label.npz (node_label, NaN for
unlabelled nodes), as ogbn-papers100M ships them, written here by numpy both ways (np.savez:
stored; np.savez_compressed: deflate), with split/time/*.csv.gz. The converted dataset must equal
a reference computed here with numpy: the CSC of the edges (duplicates removed), the features,
the labels (NaN -> -1) and the splits. A flipped byte and a truncated archive must fail with a
message naming the archive, and leave no output. The IGB layout ((E, 2) edges, float32
features, float labels with NaN) must convert to the same reference, its features linked into
the output rather than copied, with IGB's 60/20/20 split.

Usage: py_convert_npz.py <path-to-graphdirect-cli>. Exit 0 pass, 1 fail, 77 skip (no numpy).
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("numpy missing: skipping", file=sys.stderr)
    sys.exit(77)

cli = sys.argv[1]


def make(root, compressed, rng, n=20000, e=150000, d=64):
    """An OGB binary layout; its features (5 MB) span several of the reader's 4 MiB chunks."""
    os.makedirs(os.path.join(root, "raw"))
    os.makedirs(os.path.join(root, "split", "time"))
    ei = rng.integers(0, n, size=(2, e), dtype=np.int64)
    x = rng.standard_normal((n, d), dtype=np.float32)
    y = rng.integers(0, 11, size=(n, 1)).astype(np.float64)
    y[rng.random(n) < 0.4] = np.nan
    save = np.savez_compressed if compressed else np.savez
    save(os.path.join(root, "raw", "data.npz"), edge_index=ei, node_feat=x,
         num_nodes_list=np.array([n]), num_edges_list=np.array([e]),
         node_year=rng.integers(1990, 2020, size=(n, 1)))
    save(os.path.join(root, "raw", "node-label.npz"), node_label=y)
    perm = rng.permutation(n)
    splits = {"train": perm[: n // 2], "valid": perm[n // 2: 3 * n // 4], "test": perm[3 * n // 4:]}
    for name, ids in splits.items():
        with gzip.open(os.path.join(root, "split", "time", name + ".csv.gz"), "wt") as f:
            f.write("\n".join(map(str, ids)) + "\n")
    return ei, x, y, splits


def expected_csc(ei, n):
    """Each node's in-neighbours, sorted, without duplicates."""
    src, dst = ei
    key = np.unique(dst * n + src)
    d, s = key // n, key % n
    indptr = np.concatenate([[0], np.cumsum(np.bincount(d, minlength=n))])
    return indptr, s


def load(out, name):
    meta = json.load(open(os.path.join(out, "meta.json")))
    a = meta["arrays"][name]
    return np.load(os.path.join(out, a["file"]), mmap_mode="r")


def convert(src, out):
    return subprocess.run([cli, "convert", src, "--out", out], capture_output=True, text=True)


def igb(tmp, rng, n=3000, e=20000, d=32):
    """The IGB layout: (E, 2) edges, float32 features (linked into the output, not copied),
    float labels with NaN, and IGB's 60/20/20 split by node order."""
    root = os.path.join(tmp, "igb")
    os.makedirs(os.path.join(root, "processed", "paper"))
    os.makedirs(os.path.join(root, "processed", "paper__cites__paper"))
    ei = rng.integers(0, n, size=(e, 2), dtype=np.int64)
    x = rng.standard_normal((n, d), dtype=np.float32)
    y = rng.integers(0, 19, size=n).astype(np.float32)
    y[rng.random(n) < 0.1] = np.nan
    np.save(os.path.join(root, "processed", "paper__cites__paper", "edge_index.npy"), ei)
    feat = os.path.join(root, "processed", "paper", "node_feat.npy")
    np.save(feat, x)
    np.save(os.path.join(root, "processed", "paper", "node_label_19.npy"), y)
    out = os.path.join(tmp, "igb-out")
    r = convert(root, out)
    if r.returncode != 0:
        print("FAIL igb: convert exited %d\n%s" % (r.returncode, r.stderr))
        return 1
    indptr, indices = expected_csc(ei.T, n)
    checks = {
        "indptr": np.array_equal(load(out, "indptr"), indptr),
        "indices": np.array_equal(np.asarray(load(out, "indices"), np.int64), indices),
        "features": np.array_equal(load(out, "features"), x),
        "labels": np.array_equal(load(out, "labels"),
                                 np.where(np.isnan(y), -1, y).astype(np.int64)),
        "train_idx": np.array_equal(load(out, "train_idx"), np.arange(0, n * 6 // 10)),
        "valid_idx": np.array_equal(load(out, "valid_idx"), np.arange(n * 6 // 10, n * 8 // 10)),
        "test_idx": np.array_equal(load(out, "test_idx"), np.arange(n * 8 // 10, n)),
        # float32 features as they are: the output's file is the input's (a hard link)
        "features linked": os.stat(os.path.join(out, "features.npy")).st_ino == os.stat(feat).st_ino,
    }
    bad = [k for k, ok in checks.items() if not ok]
    print("igb: %d nodes, %d edges -> %d in the CSC; %s" %
          (n, e, indices.shape[0], "equal, features linked" if not bad else "DIFFER: %s" % bad))
    return 1 if bad else 0


def regress_inflates_past_member(tmp):
    """Regression, "convert writes past its buffer on a corrupt compressed data.npz" (ASan:
    heap-buffer-overflow in the member's sink, 2 of 12 runs of this test): a flipped byte can
    leave a deflate stream that inflates to more than the member's size, and the bytes past the
    array were written before the size check at the end. Seed 4's archive did so with Debian's
    zlib; each of these must be refused with the archive named, and nothing written."""
    bad = 0
    for seed in (4, 9, 21):
        root = os.path.join(tmp, "regress-%d" % seed)
        make(root, True, np.random.default_rng(seed))
        data = os.path.join(root, "raw", "data.npz")
        blob = bytearray(open(data, "rb").read())
        blob[len(blob) // 2] ^= 0x5A
        with open(data, "wb") as f:
            f.write(blob)
        out = os.path.join(tmp, "regress-%d-out" % seed)
        r = convert(root, out)
        ok = (r.returncode == 1 and "data.npz" in r.stderr and "Sanitizer" not in r.stderr
              and not os.path.exists(out))
        if not ok:
            print("compressed seed %d, a flipped byte: NOT REFUSED cleanly (rc %d)\n%s"
                  % (seed, r.returncode, r.stderr[-2000:]))
        bad += not ok
    print("corrupt deflate streams: %s" % ("refused" if not bad else "%d failures" % bad))
    return bad


def main():
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    failed = 0
    with tempfile.TemporaryDirectory(prefix="gd-npz-") as tmp:
        for compressed in (False, True):
            tag = "compressed" if compressed else "stored"
            root = os.path.join(tmp, tag)
            ei, x, y, splits = make(root, compressed, rng)
            out = os.path.join(tmp, tag + "-out")
            r = convert(root, out)
            if r.returncode != 0:
                print("FAIL %s: convert exited %d\n%s" % (tag, r.returncode, r.stderr))
                return 1
            n = x.shape[0]
            indptr, indices = expected_csc(ei, n)
            checks = {
                "indptr": np.array_equal(load(out, "indptr"), indptr),
                "indices": np.array_equal(np.asarray(load(out, "indices"), np.int64), indices),
                "features": np.array_equal(load(out, "features"), x),
                "labels": np.array_equal(load(out, "labels"),
                                         np.where(np.isnan(y[:, 0]), -1, y[:, 0]).astype(np.int64)),
            }
            for name, ids in splits.items():
                checks[name + "_idx"] = np.array_equal(load(out, name + "_idx"), ids)
            bad = [k for k, ok in checks.items() if not ok]
            print("%s data.npz: %d nodes, %d edges -> %d in the CSC; %s" %
                  (tag, n, ei.shape[1], indices.shape[0], "equal" if not bad else "DIFFER: %s" % bad))
            failed += bool(bad)

            # A flipped byte inside node_feat's data, then a truncated archive: an error naming
            # the archive, and no output directory.
            data = os.path.join(root, "raw", "data.npz")
            blob = bytearray(open(data, "rb").read())
            flip = len(blob) // 2  # inside node_feat, the largest member
            corrupt = os.path.join(tmp, tag + "-corrupt")
            os.makedirs(corrupt)
            os.symlink(os.path.join(root, "split"), os.path.join(corrupt, "split"))
            os.makedirs(os.path.join(corrupt, "raw"))
            for name in ("node-label.npz",):
                os.symlink(os.path.join(root, "raw", name), os.path.join(corrupt, "raw", name))
            for what, content in (("a flipped byte", blob[:flip] + bytes([blob[flip] ^ 0x5A]) +
                                   blob[flip + 1:]),
                                  ("a truncated archive", blob[: len(blob) * 2 // 3])):
                with open(os.path.join(corrupt, "raw", "data.npz"), "wb") as f:
                    f.write(content)
                bad_out = os.path.join(tmp, tag + "-bad-out")
                r = convert(corrupt, bad_out)
                msg = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
                ok = r.returncode != 0 and "data.npz" in r.stderr and not os.path.exists(bad_out)
                print("%s, %s: %s (%s)" % (tag, what, "refused" if ok else "NOT REFUSED", msg))
                failed += not ok
        failed += igb(tmp, rng)
        failed += regress_inflates_past_member(tmp)
    print("convert npz: %s" % ("ok" if not failed else "%d failures" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
