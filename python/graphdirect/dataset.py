"""Datasets: graphdirect.Dataset(path) opens a dataset directory, graphdirect.generate() makes a
synthetic one (in memory, or written to a directory).

A Dataset owns a gd_dataset_t. Its arrays (the CSC graph, features, labels, splits) are exported
as graphdirect.Array over the library's memory, without a copy; an exported array keeps the C
dataset alive, so close() (or the end of a `with` block) frees it as soon as the last exported
array is gone, never under one. Closing a dataset closes the loaders made from it.
"""
import ctypes
import os
import weakref

from . import _dlpack, _lib
from ._lib import GraphdirectError, check, lib


class _Handle:
    """The gd_dataset_t *, freed when the last Python reference to it goes."""
    __slots__ = ("ptr", "__weakref__")

    def __init__(self, ptr):
        self.ptr = ptr

    def __del__(self):
        ptr, self.ptr = self.ptr, None
        if ptr and lib is not None:
            lib.gd_dataset_close(ptr)


class Dataset:
    """A graphdirect dataset directory (meta.json + .npy files; docs/formats.md).

    Dataset(path, load=False, validate=True): load=True reads the arrays into memory instead of
    mapping the files; validate=False checks sizes only instead of every index.
    """

    def __init__(self, path, load=False, validate=True):
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
    def name(self):
        return (lib.gd_dataset_name(self._ptr()) or b"").decode("utf-8", "replace")

    @property
    def num_nodes(self):
        return lib.gd_dataset_num_nodes(self._ptr())

    @property
    def num_edges(self):
        return lib.gd_dataset_num_edges(self._ptr())

    @property
    def feature_dim(self):
        return lib.gd_dataset_feature_dim(self._ptr())

    @property
    def num_classes(self):
        return lib.gd_dataset_num_classes(self._ptr())

    def has(self, name):
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

    def save(self, path, overwrite=False):
        """Write the dataset as a directory (atomically: complete or absent)."""
        check(lib.gd_dataset_save(self._ptr(), os.fsencode(path), 1 if overwrite else 0))


def generate(preset="tiny", seed=0, nodes=None, out=None, overwrite=False, threads=0,
             avg_degree=None, feature_dim=None, num_classes=None):
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
