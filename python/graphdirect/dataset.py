"""Datasets: graphdirect.Dataset(path) opens a dataset directory, graphdirect.generate() makes a
synthetic one (in memory, or written to a directory).

A Dataset owns a gd_dataset_t. Its arrays (the CSC graph, features, labels, splits) are exported
as graphdirect.Array over the library's memory, without a copy; an exported array keeps the C
dataset alive, so close() (or the end of a `with` block) frees it as soon as the last exported
array is gone, never under one. Closing a dataset closes the loaders made from it.
"""
from __future__ import annotations

import ctypes
import os
import weakref
from typing import Optional

from . import _dlpack, _lib
from ._lib import GraphdirectError, check, lib
from ._types import ArrayLike, Path


class _Handle:
    """The gd_dataset_t *, freed when the last Python reference to it goes (with the arrays it
    borrows, `keep`)."""
    __slots__ = ("ptr", "keep", "__weakref__")

    def __init__(self, ptr):
        self.ptr = ptr
        self.keep = None

    def __del__(self):
        ptr, self.ptr = self.ptr, None
        if ptr and lib is not None:
            lib.gd_dataset_close(ptr)


class Dataset:
    """A graphdirect dataset directory (meta.json + .npy files; docs/formats.md).

    Dataset(path, load=False, validate=True): load=True reads the arrays into memory instead of
    mapping the files; validate=False checks sizes only instead of every index.
    """

    def __init__(self, path: Path, load: bool = False, validate: bool = True) -> None:
        self._handle = None
        self._loaders = weakref.WeakSet()
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise TypeError("graphdirect.Dataset: path must be a directory path, not %s"
                            % type(path).__name__)
        opts = _lib.DatasetOpenOptions.new()
        opts.mode = 1 if load else 0
        opts.validate_graph = 1 if validate else 0
        out = ctypes.c_void_p()
        check(lib.gd_dataset_open(os.fsencode(path), ctypes.byref(opts), ctypes.byref(out)))
        self._handle = _Handle(out.value)
        self.path = os.fsdecode(path)

    @classmethod
    def _adopt(cls, ptr, path):
        self = cls.__new__(cls)
        self._handle = _Handle(ptr)
        self._loaders = weakref.WeakSet()
        self.path = path
        return self

    # ------------------------------------------------------------------ lifetime

    def _ptr(self):
        if self._handle is None:
            raise ValueError("graphdirect.Dataset: the dataset is closed")
        return self._handle.ptr

    @property
    def closed(self):
        return self._handle is None

    def close(self):
        """Close the loaders made from this dataset, then the dataset itself (its memory lives
        on while arrays exported from it do). Closing twice is allowed."""
        for loader in list(getattr(self, "_loaders", ())):
            loader.close()
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # No __del__: dropping a Dataset drops its reference to the handle, and loaders and exported
    # arrays hold their own, so the C dataset is freed when the last of them goes.

    def __repr__(self):
        if self.closed:
            return "graphdirect.Dataset(closed)"
        return ("graphdirect.Dataset(%r, nodes=%d, edges=%d, feature_dim=%d, classes=%d)"
                % (self.name, self.num_nodes, self.num_edges, self.feature_dim,
                   self.num_classes))

    # ----------------------------------------------------------------- accessors

    @property
    def name(self) -> str:
        return (lib.gd_dataset_name(self._ptr()) or b"").decode("utf-8", "replace")

    @property
    def num_nodes(self) -> int:
        return lib.gd_dataset_num_nodes(self._ptr())

    @property
    def num_edges(self) -> int:
        return lib.gd_dataset_num_edges(self._ptr())

    @property
    def feature_dim(self) -> int:
        return lib.gd_dataset_feature_dim(self._ptr())

    @property
    def num_classes(self) -> int:
        return lib.gd_dataset_num_classes(self._ptr())

    @property
    def feature_files(self) -> dict:
        """The files that hold the feature table: {"files": [paths], "unit_rows": N}. No file
        (in memory, or loaded): []; features.npy: one; striped (graphdirect.stripe): one a
        disk, with the rows of a stripe unit (else 0)."""
        n = lib.gd_dataset_feature_files(self._ptr(), None, 0, None)
        paths = (ctypes.c_char_p * max(n, 1))()
        unit = ctypes.c_int64(0)
        n = lib.gd_dataset_feature_files(self._ptr(), paths, n, ctypes.byref(unit))
        return {"files": [os.fsdecode(paths[i]) for i in range(n)], "unit_rows": unit.value}

    # ------------------------------------------------------ heterogeneous graphs

    @property
    def node_types(self) -> list:
        """The node types of a heterogeneous dataset, in id order ([] for a homogeneous one):
        dicts of name, offset (its first node id), count and feature_dim (0: no features)."""
        out = []
        for t in range(lib.gd_dataset_num_node_types(self._ptr())):
            info = _lib.NodeTypeInfo.new()
            check(lib.gd_dataset_node_type(self._ptr(), t, ctypes.byref(info)))
            out.append({"name": info.name.decode(), "offset": info.offset, "count": info.count,
                        "feature_dim": info.feature_dim})
        return out

    @property
    def edge_types(self) -> list:
        """The edge types of a heterogeneous dataset as (source type, relation, destination
        type) name triples, PyG's edge types, in id order ([] for a homogeneous one)."""
        names = [t["name"] for t in self.node_types]
        out = []
        for r in range(lib.gd_dataset_num_edge_types(self._ptr())):
            info = _lib.EdgeTypeInfo.new()
            check(lib.gd_dataset_edge_type(self._ptr(), r, ctypes.byref(info)))
            out.append((names[info.src_type], info.name.decode(), names[info.dst_type]))
        return out

    @property
    def target_type(self) -> Optional[str]:
        """The node type the labels and splits belong to (None for a homogeneous dataset)."""
        t = lib.gd_dataset_target_type(self._ptr())
        return None if t < 0 else self.node_types[t]["name"]

    def type_features(self, node_type: str):
        """A node type's feature table (count x feature_dim) as a host graphdirect.Array, as
        array() gives the others; ValueError for an unknown type, a type without features, or
        a homogeneous dataset."""
        names = [t["name"] for t in self.node_types]
        if node_type not in names:
            raise ValueError("graphdirect.Dataset: no node type %r; the types are %s"
                             % (node_type, ", ".join(names) or "none (homogeneous dataset)"))
        t = names.index(node_type)
        view = _lib.ArrayView()
        status = lib.gd_dataset_type_features(self._ptr(), t, ctypes.byref(view))
        if status == _lib.GD_ERR_NOT_FOUND:
            raise ValueError("graphdirect.Dataset: node type %r has no features" % node_type)
        check(status)
        return _dlpack.host_array(view.data, view.dtype, tuple(view.shape[:view.ndim]),
                                  self._handle)

    def has(self, name: str) -> bool:
        """Whether the dataset has the array `name` (labels and the splits are optional)."""
        return self._view(name, missing_ok=True) is not None

    def _view(self, name, missing_ok=False):
        if name not in _lib.ARRAY_IDS:
            raise ValueError("graphdirect.Dataset: no array %r; the arrays are %s"
                             % (name, ", ".join(_lib.ARRAY_IDS)))
        view = _lib.ArrayView()
        status = lib.gd_dataset_array(self._ptr(), _lib.ARRAY_IDS[name], ctypes.byref(view))
        if status == _lib.GD_ERR_NOT_FOUND and missing_ok:
            return None
        check(status)
        return view

    def array(self, name):
        """The array `name` ("indptr", "indices", "features", "labels", "train_idx",
        "valid_idx", "test_idx") as a host graphdirect.Array (numpy.from_dlpack(...) reads it
        without a copy; it stays valid after the dataset is closed)."""
        view = self._view(name)
        shape = tuple(view.shape[:view.ndim])
        handle = self._handle
        return _dlpack.host_array(view.data, view.dtype, shape, handle)

    def save(self, path: Path, overwrite: bool = False) -> None:
        """Write the dataset as a directory (atomically: complete or absent)."""
        check(lib.gd_dataset_save(self._ptr(), os.fsencode(path), 1 if overwrite else 0))

    # ------------------------------------------------------------- your own data

    @classmethod
    def from_arrays(cls, edge_index: Optional[ArrayLike] = None, *,
                    indptr: Optional[ArrayLike] = None, indices: Optional[ArrayLike] = None,
                    features: Optional[ArrayLike] = None, labels: Optional[ArrayLike] = None,
                    train_idx: Optional[ArrayLike] = None, valid_idx: Optional[ArrayLike] = None,
                    test_idx: Optional[ArrayLike] = None, num_nodes: Optional[int] = None,
                    num_classes: Optional[int] = None, symmetrize: bool = False,
                    borrow: bool = True, validate: bool = True,
                    name: Optional[str] = None) -> "Dataset":
        """A dataset from arrays you have: numpy arrays, CPU torch tensors or lists.

        The graph: edge_index ([2, E]: edges edge_index[0][i] -> edge_index[1][i], PyG's
        layout; a CSC is built, duplicates removed, reverse edges added with symmetrize), or
        the CSC itself (indptr [num_nodes + 1], indices: each node's in-neighbours).
        features [num_nodes, dim] (float32, float16 or bfloat16; float64 is converted),
        labels [num_nodes] (integers, -1 = unlabelled), and the splits (node ids, or boolean
        masks of num_nodes) are optional. num_nodes: with edge_index, None = 1 + the largest
        id seen. borrow=True (the default) reads features, labels and a given CSC in place,
        without a copy: the Dataset keeps them alive, and they must not change while it is
        open; borrow=False copies them. validate checks every index and feature value.
        """
        np = _numpy("graphdirect.Dataset.from_arrays")
        who = "graphdirect.Dataset.from_arrays"
        keep = []
        a = _lib.DatasetArrays.new()
        a.name = _lib.text(name) if name is not None else None
        n = -1 if num_nodes is None else _lib.int_arg(num_nodes, who, "num_nodes", 1,
                                                          2 ** 62)
        if (edge_index is None) == (indptr is None):
            raise ValueError("%s: give the graph as edge_index, or as indptr and indices "
                             "(one of the two)" % who)
        if edge_index is not None:
            ei = _int64(np, edge_index, who, "edge_index", keep)
            if ei.ndim != 2 or ei.shape[0] != 2:
                raise ValueError("%s: edge_index must have shape [2, num_edges], not %s"
                                 % (who, tuple(ei.shape)))
            src, dst = np.ascontiguousarray(ei[0]), np.ascontiguousarray(ei[1])
            keep += [src, dst]
            a.src, a.dst, a.num_edges = src.ctypes.data, dst.ctypes.data, src.shape[0]
            a.symmetrize = 1 if symmetrize else 0
        else:
            if indices is None:
                raise ValueError("%s: indptr needs indices" % who)
            ip = _int64(np, indptr, who, "indptr", keep)
            ix = _contiguous(np, indices, who, "indices", keep)
            if ix.dtype not in (np.int32, np.int64):
                ix = ix.astype(np.int64)
                keep.append(ix)
            a.indptr, a.indices = ip.ctypes.data, ix.ctypes.data
            a.indices_dtype = 8 if ix.dtype == np.int32 else 9
            a.num_edges = int(ip[-1]) if ip.shape[0] else 0
            if n < 0:
                n = ip.shape[0] - 1
        if features is not None:
            x, code = _features(np, features, who, keep)
            if x.ndim != 2:
                raise ValueError("%s: features must have shape [num_nodes, dim], not %s"
                                 % (who, tuple(x.shape)))
            if n < 0:
                n = x.shape[0]
            a.features, a.feature_dtype, a.feature_dim = x.ctypes.data, code, x.shape[1]
            _rows(x, n, who, "features")
        if labels is not None:
            y = _int64(np, labels, who, "labels", keep)
            if n < 0:
                n = y.shape[0]
            _rows(y, n, who, "labels")
            a.labels = y.ctypes.data
        for field, value in (("train", train_idx), ("valid", valid_idx), ("test", test_idx)):
            if value is None:
                continue
            ids = _ids(np, value, n, who, field + "_idx", keep)
            setattr(a, field + "_idx", ids.ctypes.data)
            setattr(a, "num_" + field, ids.shape[0])
        a.num_nodes = max(n, 0)
        a.num_classes = 0 if num_classes is None else _lib.int_arg(num_classes, who,
                                                                   "num_classes", 1, 2 ** 31)
        a.borrow = 1 if borrow else 0
        a.validate = 1 if validate else 0
        out = ctypes.c_void_p()
        check(lib.gd_dataset_from_arrays(ctypes.byref(a), ctypes.byref(out)))
        self = cls._adopt(out.value, None)
        # Borrowed arrays live as long as the C dataset: on its handle, which loaders and
        # exported arrays hold too.
        self._handle.keep = keep if borrow else None
        return self

    @classmethod
    def from_pyg(cls, data, **kw) -> "Dataset":
        """A dataset from a PyG `Data`: edge_index, x, y, and train_mask / val_mask / test_mask
        (or train_idx / valid_idx / test_idx) when present; num_nodes from the Data. Other
        arguments go to from_arrays (symmetrize=True for a directed edge_index you want
        undirected; PyG's own datasets are usually stored undirected already)."""
        get = lambda name: getattr(data, name, None)  # noqa: E731
        args = dict(edge_index=get("edge_index"), features=get("x"), labels=get("y"),
                    num_nodes=get("num_nodes"))
        for split, names in (("train_idx", ("train_idx", "train_mask")),
                             ("valid_idx", ("valid_idx", "val_mask", "valid_mask")),
                             ("test_idx", ("test_idx", "test_mask"))):
            for n in names:
                if get(n) is not None:
                    args[split] = get(n)
                    break
        y = args["labels"]
        if y is not None and getattr(y, "ndim", 1) == 2 and y.shape[1] == 1:
            args["labels"] = y.reshape(-1)
        args.update(kw)
        return cls.from_arrays(**args)

    @classmethod
    def from_scipy(cls, adjacency, **kw) -> "Dataset":
        """A dataset from a scipy.sparse adjacency matrix (A[u, v] != 0: an edge u -> v), with
        from_arrays' other arguments (features=, labels=, the splits, ...). Its CSC form is the
        graph as graphdirect stores it: each node's in-neighbours."""
        csc = adjacency.tocsc()
        csc.sort_indices()
        return cls.from_arrays(indptr=csc.indptr, indices=csc.indices,
                               num_nodes=csc.shape[0], borrow=False, **kw)


# Helpers of from_arrays: numpy arrays from numpy, torch (CPU) or lists, kept alive in `keep`.

def _numpy(who):
    try:
        import numpy
    except ImportError:
        raise ImportError("%s needs numpy (pip install numpy)" % who) from None
    return numpy


def _host(value, who, what):
    """value as something numpy reads without a copy: torch tensors via .numpy()."""
    if type(value).__module__.startswith("torch"):
        if getattr(value, "is_cuda", False) or getattr(value, "device", None) is not None and \
                str(value.device) != "cpu":
            raise ValueError("%s: %s is on %s: pass a CPU tensor (graphdirect reads host memory "
                             "and moves what each minibatch needs)" % (who, what, value.device))
        return value.detach()
    return value


def _contiguous(np, value, who, what, keep):
    v = _host(value, who, what)
    if type(v).__module__.startswith("torch"):
        v = v.contiguous().numpy()
    arr = np.ascontiguousarray(v)
    keep.append(arr)
    return arr


def _int64(np, value, who, what, keep):
    arr = _contiguous(np, value, who, what, keep)
    if arr.dtype.kind not in "iu":
        raise ValueError("%s: %s must hold integers, not %s" % (who, what, arr.dtype))
    if arr.dtype != np.int64:
        arr = arr.astype(np.int64)
        keep.append(arr)
    return arr


def _features(np, value, who, keep):
    """(array, gd_dtype): float32 / float16 as they are, bfloat16 torch tensors as their bits,
    float64 converted to float32."""
    v = _host(value, who, "features")
    if type(v).__module__.startswith("torch") and str(v.dtype) == "torch.bfloat16":
        import torch
        arr = np.ascontiguousarray(v.contiguous().view(torch.int16).numpy())
        keep.append(arr)
        return arr, 3
    arr = _contiguous(np, v, who, "features", keep)
    if arr.dtype == np.float32:
        return arr, 1
    if arr.dtype == np.float16:
        return arr, 2
    if arr.dtype.kind in "fiu":
        arr = arr.astype(np.float32)
        keep.append(arr)
        return arr, 1
    raise ValueError("%s: features must be float32, float16 or bfloat16, not %s"
                     % (who, arr.dtype))


def _rows(arr, n, who, what):
    if arr.shape[0] != n:
        raise ValueError("%s: %s has %d rows, but the graph has %d nodes"
                         % (who, what, arr.shape[0], n))


def _ids(np, value, n, who, what, keep):
    """Node ids of a split: ids as they are, or a boolean mask of the nodes."""
    arr = _contiguous(np, value, who, what, keep)
    if arr.dtype == np.bool_:
        if n >= 0 and arr.shape[0] != n:
            raise ValueError("%s: the mask %s has %d entries, but the graph has %d nodes"
                             % (who, what, arr.shape[0], n))
        arr = np.flatnonzero(arr).astype(np.int64)
        keep.append(arr)
        return arr
    return _int64(np, arr, who, what, keep)


def generate(preset: str = "tiny", seed: int = 0, nodes: Optional[int] = None,
             out: Optional[Path] = None, overwrite: bool = False, threads: int = 0,
             avg_degree: Optional[float] = None, feature_dim: Optional[int] = None,
             num_classes: Optional[int] = None) -> Dataset:
    """Generate a synthetic dataset (docs: `graphdirect generate`): "tiny", "small", "products"
    or "papers", deterministic in seed. nodes, avg_degree, feature_dim and num_classes override
    the preset's. With out=DIR the arrays are written straight into DIR (replaced only with
    overwrite=True) and the returned Dataset is opened from there; otherwise it lives in memory.
    """
    opts = _lib.GenerateOptions.new()
    opts.preset = _lib.text(preset)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError("graphdirect.generate: seed must be an integer >= 0, not %r" % (seed,))
    opts.seed = seed
    for field, value in (("num_nodes", nodes), ("avg_degree", avg_degree),
                         ("feature_dim", feature_dim), ("num_classes", num_classes)):
        if value is not None:
            if value <= 0:
                raise ValueError("graphdirect.generate: %s must be > 0, not %r"
                                 % ({"num_nodes": "nodes"}.get(field, field), value))
            setattr(opts, field, value)
    opts.out_dir = os.fsencode(out) if out is not None else None
    opts.overwrite = 1 if overwrite else 0
    opts.threads = int(threads)
    ptr = ctypes.c_void_p()
    check(lib.gd_generate(ctypes.byref(opts), ctypes.byref(ptr)))
    if not ptr.value:
        raise GraphdirectError(_lib.STATUS["GD_ERR_INTERNAL"],
                               "gd_generate returned no dataset")
    return Dataset._adopt(ptr.value, os.fsdecode(out) if out is not None else None)


def stripe(path: Path, targets, unit_bytes: int = 0) -> None:
    """Spread the feature table of the dataset directory path over the directories targets (one
    a disk; docs/formats.md, "Striped features"): one .npy file in each, units of unit_bytes
    (0: 64 MiB) striped round-robin, for the SSD tier to read side by side. The dataset then
    names the manifest features.stripes and trains as before; a failure leaves it as it was.
    Close every Dataset opened from path first: their mappings keep the old files' space."""
    if isinstance(targets, (str, bytes, os.PathLike)):
        targets = [targets]
    targets = list(targets)
    if not targets:
        raise ValueError("graphdirect.stripe: give at least one target directory")
    if isinstance(unit_bytes, bool) or not isinstance(unit_bytes, int) or unit_bytes < 0:
        raise ValueError("graphdirect.stripe: unit_bytes must be an integer >= 0, not %r"
                         % (unit_bytes,))
    opts = _lib.StripeOptions.new()
    opts.unit_bytes = unit_bytes
    arr = (ctypes.c_char_p * len(targets))(*[os.fsencode(t) for t in targets])
    check(lib.gd_dataset_stripe(os.fsencode(path), arr, len(targets), ctypes.byref(opts)))
