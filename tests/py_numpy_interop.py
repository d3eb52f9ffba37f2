#!/usr/bin/env python3
"""numpy and graphdirect read each other's dataset directories.

Usage: py_numpy_interop.py <path-to-graphdirect-cli>

The C side is the test_dataset program of the same build (<cli dir>/tests/test_dataset):
with GD_WRITE_SAMPLE_DIR it writes sample datasets (float32, float16 and bfloat16 features,
int32 and int64 indices) and prints a checksum of every array; this script opens every .npy
with numpy.load(mmap_mode='r'), checks dtypes and shapes against meta.json, the 4 KiB data
offset of large arrays and the checksums. Then it writes a dataset with numpy.save (numpy's
own 64-byte header alignment) and has test_dataset open it with GD_READ_SAMPLE_DIR, in both
open modes, comparing the checksums it prints. Exit 0 pass, 1 fail, 77 skip (no numpy).
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    if os.environ.get("CI"):
        print("numpy missing: run scripts/install-deps.sh", file=sys.stderr)
        sys.exit(1)
    print("numpy missing: skipping", file=sys.stderr)
    sys.exit(77)

NP_DTYPES = {
    "float32": np.float32, "float16": np.float16, "bfloat16": np.uint16, "float64": np.float64,
    "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "int32": np.int32,
    "int64": np.int64, "bool": np.bool_,
}


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def checksum(a):
    """The position-weighted byte sum test_dataset prints (exact, modulo 2^64)."""
    b = np.frombuffer(np.ascontiguousarray(a).tobytes(), dtype=np.uint8).astype(np.uint64)
    w = (np.arange(b.size, dtype=np.uint64) % np.uint64(251)) + np.uint64(1)
    with np.errstate(over="ignore"):
        return int(np.sum(b * w, dtype=np.uint64))


def parse_lines(text):
    """{label: {"dataset": [...], array_name: (dtype, s0, s1, checksum)}} from the C output."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "dataset":
            out.setdefault(f[1], {})["dataset"] = [f[2]] + [int(v) for v in f[3:7]]
        elif f[0] == "array":
            out.setdefault(f[1], {})[f[2]] = (f[3], int(f[4]), int(f[5]), int(f[6]))
    return out


def run(prog, env_name, path):
    env = dict(os.environ)
    env[env_name] = path
    r = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=240)
    if r.returncode != 0:
        fail("%s %s=%s exited %d:\n%s%s" % (prog, env_name, path, r.returncode, r.stdout,
                                            r.stderr))
    return parse_lines(r.stdout)


def check_written(root, printed):
    for sub, arrays in printed.items():
        d = os.path.join(root, sub)
        meta = json.load(open(os.path.join(d, "meta.json")))
        if meta["format"] != "graphdirect-dataset" or meta["version"] != 1:
            fail("%s: bad format/version in meta.json" % d)
        for key in ("num_nodes", "num_edges", "feature_dim", "num_classes"):
            if not isinstance(meta[key], int):
                fail("%s: meta.json %s is not an integer: %r" % (d, key, meta[key]))
        name, n, e, fdim, c = arrays["dataset"]
        if [meta["name"], meta["num_nodes"], meta["num_edges"], meta["feature_dim"],
                meta["num_classes"]] != [name, n, e, fdim, c]:
            fail("%s: meta.json counts disagree with the C side" % d)
        for aname, spec in meta["arrays"].items():
            path = os.path.join(d, spec["file"])
            a = np.load(path, mmap_mode="r")
            if a.dtype != np.dtype(NP_DTYPES[spec["dtype"]]):
                fail("%s: numpy dtype %s, meta.json says %s" % (path, a.dtype, spec["dtype"]))
            if list(a.shape) != spec["shape"]:
                fail("%s: numpy shape %s, meta.json says %s" % (path, a.shape, spec["shape"]))
            if a.nbytes >= 4096 and a.offset % 4096 != 0:
                fail("%s: data offset %d is not 4096-aligned" % (path, a.offset))
            if a.offset % 64 != 0:
                fail("%s: data offset %d is not 64-aligned" % (path, a.offset))
            dtype, s0, s1, cs = arrays[aname]
            if dtype != spec["dtype"] or s0 != a.shape[0] or s1 != (a.shape[1] if a.ndim == 2
                                                                   else 0):
                fail("%s: C reported %s %d %d" % (path, dtype, s0, s1))
            if checksum(a) != cs:
                fail("%s: checksum %d, C computed %d" % (path, checksum(a), cs))
        indptr = np.load(os.path.join(d, "indptr.npy"), mmap_mode="r")
        indices = np.load(os.path.join(d, "indices.npy"), mmap_mode="r")
        if indptr[0] != 0 or indptr[-1] != e or np.any(np.diff(indptr) < 0):
            fail("%s: indptr is not a valid CSC offset array" % d)
        if indices.size and (indices.min() < 0 or indices.max() >= n):
            fail("%s: indices out of range" % d)
    # The three samples share one seed-driven feature generator only in distribution, so the
    # float16/bfloat16 payloads are checked for what they must be: finite values of the format.
    f16 = np.load(os.path.join(root, "f16", "features.npy"), mmap_mode="r")
    if not np.all(np.isfinite(f16.astype(np.float32))):
        fail("f16 features are not finite")
    bf = np.load(os.path.join(root, "bf16", "features.npy"), mmap_mode="r")
    as_f32 = (bf.astype(np.uint32) << 16).view(np.float32)
    if not np.all(np.isfinite(as_f32)) or np.max(np.abs(as_f32)) > 1000 / 64 + 1e-3:
        fail("bf16 features do not decode to the generated range")


def write_numpy_dataset(d, rng):
    n, fdim, c = 257, 20, 4
    deg = rng.integers(0, 9, size=n)
    indptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
    e = int(indptr[-1])
    indices = rng.integers(0, n, size=e).astype(np.int32)
    feats = rng.standard_normal((n, fdim)).astype(np.float32)
    bf16 = (feats.view(np.uint32) >> 16).astype(np.uint16)
    labels = rng.integers(-1, c, size=n).astype(np.int64)
    # Splits are disjoint sets of distinct node ids (validation refuses anything else).
    perm = rng.permutation(n)
    train = perm[:100].astype(np.int64)
    valid = np.sort(perm[100:110]).astype(np.int32)
    os.makedirs(d)
    arrays = {"indptr": indptr, "indices": indices, "features": bf16, "labels": labels,
              "train_idx": train, "valid_idx": valid}
    meta_arrays = {}
    for k, a in arrays.items():
        np.save(os.path.join(d, k + ".npy"), a)
        dtype = "bfloat16" if k == "features" else str(a.dtype)
        meta_arrays[k] = {"file": k + ".npy", "dtype": dtype, "shape": list(a.shape)}
    meta = {"format": "graphdirect-dataset", "version": 1, "name": "from-numpy",
            "num_nodes": n, "num_edges": e, "feature_dim": fdim, "num_classes": c,
            "graph": "csc", "arrays": meta_arrays, "info": {"writer": "numpy " + np.__version__}}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return arrays, (n, e, fdim, c)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    cli = os.path.abspath(sys.argv[1])
    prog = os.path.join(os.path.dirname(cli), "tests", "test_dataset")
    if not os.access(prog, os.X_OK):
        fail("%s is missing: build the tests first" % prog)
    rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    with tempfile.TemporaryDirectory() as tmp:
        printed = run(prog, "GD_WRITE_SAMPLE_DIR", tmp)
        if sorted(printed) != ["bf16", "f16", "f32"]:
            fail("test_dataset wrote %s" % sorted(printed))
        check_written(tmp, printed)

        d = os.path.join(tmp, "numpy")
        arrays, counts = write_numpy_dataset(d, rng)
        got = run(prog, "GD_READ_SAMPLE_DIR", d)
        for mode in ("mmap", "load"):
            if mode not in got:
                fail("test_dataset printed nothing for mode %s" % mode)
            if got[mode]["dataset"] != ["from-numpy"] + list(counts):
                fail("%s: counts %s" % (mode, got[mode]["dataset"]))
            for k, a in arrays.items():
                dtype, s0, s1, cs = got[mode][k]
                want = "bfloat16" if k == "features" else str(a.dtype)
                if (dtype, s0, s1) != (want, a.shape[0], a.shape[1] if a.ndim == 2 else 0):
                    fail("%s %s: C read %s %d %d" % (mode, k, dtype, s0, s1))
                if cs != checksum(a):
                    fail("%s %s: C checksum %d, numpy %d" % (mode, k, cs, checksum(a)))
    print("py_numpy_interop: ok")


if __name__ == "__main__":
    main()
