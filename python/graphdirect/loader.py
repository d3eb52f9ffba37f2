"""graphdirect.Loader: minibatches of sampled neighbourhoods with their gathered features, for
training with your own model code (PyTorch, PyG, DGL).

A Loader owns a gd_loader_t: the trainer's data path (sample -> gather, pipelined on the GPU in
the GPU modes) without the model. Iterating it runs one epoch and yields Batch objects whose
array fields are graphdirect.Array (DLPack, zero-copy). The C loader keeps a ring of `depth`
buffer sets; a Batch holds one until it is released, so iteration releases each batch when the
next one is asked for. Tensors already imported from a batch (torch.from_dlpack(...)) keep its
memory valid after that, and after the loader is closed: only the Batch handle dies, and using
it then raises ValueError instead of touching freed memory.

A loader is not thread-safe: drive it from one thread.
"""
import ctypes
import re
import weakref

_ref = weakref.ref

from . import _dlpack, _lib
from ._lib import GraphdirectError, check, lib

_MODES = ("cpu", "all-gpu", "zero-copy", "auto")
_INT32 = 8  # gd_dtype of block arrays
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(value, what):
    """Bytes from an int or a string such as "4G", "512M", "1.5GiB" (binary units)."""
    if value is None:
        return -1
    if isinstance(value, bool):
        raise TypeError("%s: expected a size such as \"4G\" or a number of bytes, not %r"
                        % (what, value))
    if isinstance(value, int):
        if value < 0:
            raise ValueError("%s: %d bytes is negative" % (what, value))
        return value
    m = _SIZE_RE.match(str(value))
    if not m:
        raise ValueError("%s: cannot read %r as a size: write a number of bytes with an optional "
                         "K, M, G or T suffix (binary units), e.g. \"4G\"" % (what, value))
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()])


class Block:
    """One layer of a minibatch in DGL's block layout: a CSC of num_dst destination nodes over
    num_src source nodes, in local ids (local id i is input node i in every layer; the
    destination nodes are the first num_dst source nodes). indptr: int32 [num_dst + 1],
    indices: int32 [num_edges] local source ids. Layer 0 is the input layer."""
    __slots__ = ("layer", "num_src", "num_dst", "num_edges", "indptr", "indices")

    def __init__(self, layer, num_src, num_dst, num_edges, indptr, indices):
        self.layer = layer
        self.num_src = num_src
        self.num_dst = num_dst
        self.num_edges = num_edges
        self.indptr = indptr
        self.indices = indices

    @property
    def sizes(self):
        """(num_src, num_dst), the shape DGL's create_block and PyG's `size=` expect."""
        return (self.num_src, self.num_dst)

    def __repr__(self):
        return ("graphdirect.Block(layer=%d, num_src=%d, num_dst=%d, num_edges=%d)"
                % (self.layer, self.num_src, self.num_dst, self.num_edges))


class Batch:
    """A minibatch: input_nodes (int64 [num_input] global ids, seeds first), features
    (float32 [num_input, feature_dim]), labels (int64 [num_seeds], -1 = unlabelled; None when
    the dataset has no labels) and blocks (a list of Block, layer 0 = input layer).

    Release it with release() (or a `with` block, or by dropping it); iteration releases each
    batch when the next is asked for. Arrays imported from it before stay valid."""
    __slots__ = ("_ptr", "_loader", "_dead", "epoch", "index", "num_seeds", "num_input",
                 "num_layers", "on_device", "device_index", "_dev", "_cache", "__weakref__")

    def __init__(self, loader, ptr, epoch):
        self._ptr = ptr
        self._loader = loader
        self._dead = None
        self._cache = {}
        self.epoch = epoch
        info = _lib.BatchInfo.new()
        check(lib.gd_batch_get_info(ptr, ctypes.byref(info)))
        self.index = info.index
        self.num_seeds = info.num_seeds
        self.num_input = info.num_input
        self.num_layers = info.num_layers
        self.on_device = bool(info.on_device)
        self.device_index = info.device
        self._dev = (_dlpack.KDL_CUDA, info.device) if info.on_device else (_dlpack.KDL_CPU, 0)

    # ------------------------------------------------------------------ lifetime

    def _require(self):
        if self._ptr is None:
            raise ValueError("graphdirect.Batch %d of epoch %d: %s, so its arrays can no longer "
                             "be read (arrays imported from it before stay valid)"
                             % (self.index, self.epoch, self._dead))

    @property
    def released(self):
        return self._ptr is None

    def _invalidate(self, reason, release=True):
        ptr, self._ptr = self._ptr, None
        if ptr is not None:
            self._dead = reason
            if release:
                lib.gd_batch_release(ptr)
            self._loader._batches.discard(self)

    def release(self):
        """Give the batch's buffers back to the loader (once tensors imported from it are gone
        too). Releasing twice is allowed."""
        self._invalidate("it was released")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        try:
            self._invalidate("it was garbage-collected")
        except Exception:
            pass

    def __repr__(self):
        state = " released" if self._ptr is None else ""
        return ("graphdirect.Batch(epoch=%d, index=%d, seeds=%d, input_nodes=%d, layers=%d, "
                "device=%s%s)" % (self.epoch, self.index, self.num_seeds, self.num_input,
                                  self.num_layers, self.device, state))

    # -------------------------------------------------------------------- fields

    @property
    def device(self):
        """"cpu" or "cuda:N": where the arrays live (the spelling torch accepts)."""
        return "cuda:%d" % self.device_index if self.on_device else "cpu"

    def _export(self, field, layer, stream):
        self._require()
        out = ctypes.c_void_p()
        check(lib.gd_batch_export(self._ptr, field, layer, stream, ctypes.byref(out)))
        return out.value

    def _array(self, field, missing_ok=False):
        self._require()
        a = self._cache.get(field)
        if a is not None or field in self._cache:
            return a
        view = _lib.ArrayView()
        status = lib.gd_batch_array(self._ptr, field, 0, ctypes.byref(view))
        if status == _lib.GD_ERR_NOT_FOUND and missing_ok:
            a = None
        else:
            check(status)
            a = _dlpack.Array(tuple(view.shape[:view.ndim]), view.dtype, view.data,
                              self._dev, _ref(self), field)
        self._cache[field] = a
        return a

    @property
    def input_nodes(self):
        return self._array(_lib.FIELD_INPUT_NODES)

    @property
    def features(self):
        return self._array(_lib.FIELD_FEATURES)

    @property
    def labels(self):
        return self._array(_lib.FIELD_LABELS, missing_ok=True)

    @property
    def blocks(self):
        self._require()
        blocks = self._cache.get("blocks")
        if blocks is None:
            blocks = []
            dev, me = self._dev, _ref(self)
            b = _lib.Block()
            ref = ctypes.byref(b)
            for layer in range(self.num_layers):
                check(lib.gd_batch_block(self._ptr, layer, ref))
                # The block's own sizes and pointers: no gd_batch_array call per array.
                indptr = _dlpack.Array((b.num_dst + 1,), _INT32, b.indptr, dev, me,
                                       _lib.FIELD_INDPTR, layer)
                indices = _dlpack.Array((b.num_edges,), _INT32, b.indices, dev, me,
                                        _lib.FIELD_INDICES, layer)
                blocks.append(Block(layer, b.num_src, b.num_dst, b.num_edges, indptr, indices))
            self._cache["blocks"] = blocks
        return blocks


class _Epoch:
    """The iterator of one epoch: yields its batches, releasing each when the next is asked."""
    __slots__ = ("_loader", "_token", "epoch", "_prev")

    def __init__(self, loader, token, epoch):
        self._loader = loader
        self._token = token
        self.epoch = epoch
        self._prev = None

    def __iter__(self):
        return self

    def __len__(self):
        return self._loader.batches_per_epoch

    def __next__(self):
        loader = self._loader
        if self._prev is not None:
            self._prev.release()
            self._prev = None
        if loader._token != self._token:
            if loader._ptr is None:
                raise ValueError("graphdirect.Loader: the loader was closed during epoch %d"
                                 % self.epoch)
            raise ValueError("graphdirect.Loader: epoch %d was started while epoch %d was being "
                             "iterated; use one epoch iterator at a time"
                             % (loader._epoch, self.epoch))
        b = loader.next_batch()
        if b is None:
            raise StopIteration
        self._prev = b
        return b


class Loader:
    """Minibatches of `dataset` for training with your own model.

    Loader(dataset, fanouts=[15, 10, 5], batch_size=1024, mode="zero-copy", gpu_cache="4G",
           shuffle=True, seed=0, device=0, split="train", drop_last=False, depth=3, threads=0,
           graph_cache=None, gpu_mem_budget=None, gather_sms=None)

    fanouts: neighbours drawn per node, from the seeds outward (-1 = all); one layer each.
    mode: "cpu" (host memory, CPU threads), "all-gpu", "zero-copy" (graph and features in
    pinned host memory read by the GPU, hot rows cached in `gpu_cache` bytes of GPU memory) or
    "auto". split: "train", "valid" or "test" seeds. depth: buffer sets in the ring (2..8).

    `for batch in loader:` runs the next epoch (0, 1, 2, ...); `loader.epoch(n)` runs epoch n.
    The shuffle and the draws are functions of (seed, epoch). close() (or `with`) frees it.
    """

    def __init__(self, dataset, fanouts=(15, 10, 5), batch_size=1024, mode="zero-copy",
                 gpu_cache="4G", shuffle=True, seed=0, device=0, split="train",
                 drop_last=False, depth=3, threads=0, graph_cache=None, gpu_mem_budget=None,
                 gather_sms=None):
        self._ptr = None
        self._batches = weakref.WeakSet()
        self._token = 0
        self._epoch = -1
        self._next_epoch = 0
        from .dataset import Dataset
        if not isinstance(dataset, Dataset):
            raise TypeError("graphdirect.Loader: dataset must be a graphdirect.Dataset, not %s"
                            % type(dataset).__name__)
        opts = _lib.LoaderOptions.new()
        if mode is not None and mode not in _MODES:
            raise ValueError("graphdirect.Loader: mode %r is not one of %s"
                             % (mode, ", ".join(_MODES)))
        opts.mode = _lib.text(mode)
        fanouts = list(fanouts)
        if not 1 <= len(fanouts) <= _lib.GD_SAMPLER_MAX_LAYERS:
            raise ValueError("graphdirect.Loader: %d fanouts; give 1 to %d (one per layer)"
                             % (len(fanouts), _lib.GD_SAMPLER_MAX_LAYERS))
        opts.num_layers = len(fanouts)
        for i, f in enumerate(fanouts):
            if isinstance(f, bool) or not isinstance(f, int) or f < -1:
                raise ValueError("graphdirect.Loader: fanout %r (position %d) must be an "
                                 "integer >= 0, or -1 for all neighbours" % (f, i))
            opts.fanouts[i] = f
        if split not in _lib.SPLITS:
            raise ValueError("graphdirect.Loader: split %r is not one of train, valid, test"
                             % (split,))
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError("graphdirect.Loader: seed must be an integer >= 0, not %r" % (seed,))
        opts.batch_size = int(batch_size)
        opts.split = _lib.SPLITS[split]
        opts.shuffle = 1 if shuffle else 0
        opts.drop_last = 1 if drop_last else 0
        opts.seed = seed
        opts.device = int(device)
        opts.threads = int(threads)
        opts.depth = int(depth)
        # The feature cache is a zero-copy setting; the other modes keep their default.
        if mode in ("zero-copy", "auto", None):
            opts.gpu_cache_bytes = parse_size(gpu_cache, "graphdirect.Loader: gpu_cache")
        opts.graph_cache_bytes = parse_size(graph_cache, "graphdirect.Loader: graph_cache")
        budget = parse_size(gpu_mem_budget, "graphdirect.Loader: gpu_mem_budget")
        opts.gpu_mem_budget = 0 if budget < 0 else budget
        opts.gather_sms = _lib.text(gather_sms)
        _lib.need("gd_loader_create")
        out = ctypes.c_void_p()
        check(lib.gd_loader_create(dataset._ptr(), ctypes.byref(opts), ctypes.byref(out)))
        self._ptr = out.value
        # The C dataset must outlive the C loader: hold its handle, and let the Dataset close us.
        self._dataset_handle = dataset._handle
        dataset._loaders.add(self)
        info = _lib.LoaderInfo.new()
        check(lib.gd_loader_get_info(self._ptr, ctypes.byref(info)))
        self.mode = (info.mode or b"").decode()
        self.on_device = bool(info.on_device)
        self.device = "cuda:%d" % info.device if info.on_device else "cpu"
        self.num_seeds = info.num_seeds
        self.batches_per_epoch = info.batches_per_epoch
        self.feature_dim = info.feature_dim
        self.max_input_nodes = info.max_input_nodes
        self.plan = info.plan.decode("utf-8", "replace")
        self.fanouts = fanouts
        self.batch_size = int(batch_size)

    # ------------------------------------------------------------------ lifetime

    def _require(self):
        if self._ptr is None:
            raise ValueError("graphdirect.Loader: the loader is closed")
        return self._ptr

    @property
    def closed(self):
        return self._ptr is None

    def _release_batches(self, reason):
        for b in list(self._batches):
            b._invalidate(reason)

    def close(self):
        """Free the loader. Its unreleased batches become unusable (ValueError); tensors
        imported from them stay valid. Closing twice is allowed."""
        if self._ptr is None:
            return
        self._release_batches("its loader was closed")
        ptr, self._ptr = self._ptr, None
        self._token += 1
        lib.gd_loader_destroy(ptr)
        self._dataset_handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        if self._ptr is None:
            return "graphdirect.Loader(closed)"
        return ("graphdirect.Loader(mode=%s, device=%s, fanouts=%s, batch_size=%d, "
                "batches_per_epoch=%d)" % (self.mode, self.device, self.fanouts,
                                           self.batch_size, self.batches_per_epoch))

    # ----------------------------------------------------------------- iteration

    def __len__(self):
        return self.batches_per_epoch

    def __iter__(self):
        return self.epoch(self._next_epoch)

    def epoch(self, n):
        """Start epoch n (ending the one in progress: its unreleased batches are released) and
        return its iterator. The next plain iteration runs epoch n + 1."""
        ptr = self._require()
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError("graphdirect.Loader.epoch: the epoch must be an integer >= 0, not %r"
                             % (n,))
        self._release_batches("epoch %d was started" % n)
        self._token += 1
        self._epoch = -1
        check(lib.gd_loader_start_epoch(ptr, n))
        self._epoch = n
        self._next_epoch = n + 1
        return _Epoch(self, self._token, n)

    @property
    def current_epoch(self):
        """The epoch in progress (-1 before the first)."""
        return self._epoch

    def next_batch(self):
        """The next Batch of the current epoch, or None after its last one. The caller releases
        it (release(), `with`, or dropping it); at most depth - 1 may be held at once."""
        ptr = self._require()
        if self._epoch < 0:
            raise ValueError("graphdirect.Loader: no epoch was started: iterate the loader or "
                             "call loader.epoch(n) first")
        out = ctypes.c_void_p()
        check(lib.gd_loader_next(ptr, ctypes.byref(out)))
        if not out.value:
            return None
        try:
            b = Batch(self, out.value, self._epoch)
        except BaseException:
            lib.gd_batch_release(out.value)
            raise
        self._batches.add(b)
        return b
