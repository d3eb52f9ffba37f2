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
from typing import TYPE_CHECKING, Optional, Sequence

from . import _dlpack, _lib
from ._lib import GraphdirectError, check, lib
from ._types import ArrayLike, Device, Size

if TYPE_CHECKING:
    from .context import Context
    from .dataset import Dataset

_MODES = ("cpu", "all-gpu", "zero-copy", "auto")
_INT32 = 8  # gd_dtype of block arrays
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:([kmgt])(i?))?b?\s*$", re.IGNORECASE)
_SIZE_POWER = {"k": 1, "m": 2, "g": 3, "t": 4}


def parse_size(value, what):
    """Bytes from an int or a string, read as the command line reads sizes: "4G" and "4GB" are
    4 * 1000**3, "4Gi" and "4GiB" are 4 * 1024**3 (K, M, G, T; a trailing B is optional)."""
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
                         "K, M, G or T suffix (x1000; Ki, Mi, Gi, Ti: x1024), e.g. \"4G\" or "
                         "\"4GiB\"" % (what, value))
    if not m.group(2):
        return int(float(m.group(1)))
    base = 1024 if m.group(3) else 1000
    return int(float(m.group(1)) * base ** _SIZE_POWER[m.group(2).lower()])


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


# The C calls of the per-batch path, looked up once (each attribute lookup on the CDLL costs).
_next = lib.gd_loader_next
_release = lib.gd_batch_release
_get_info = lib.gd_batch_get_info
_get_block = lib.gd_batch_block
_get_array = lib.gd_batch_array
_export_one = lib.gd_batch_export
_export_all = getattr(lib, "gd_batch_export_all", None)
_stream_pointer = _dlpack.stream_pointer
_Array = _dlpack.Array
_delete = _dlpack.delete_managed
_capsule_new = _dlpack._capsule_new
_NAME = _dlpack._NAME
_settle = _dlpack.settle
_byref = ctypes.byref


def _slot_field(slot):
    """(gd_batch_field, layer) of an export slot: gd_batch_export_all's order."""
    if slot < 3:
        return slot, 0
    return (_lib.FIELD_INDPTR if (slot - 3) % 2 == 0 else _lib.FIELD_INDICES), (slot - 3) // 2


class _Ring:
    """What a loader's batches share: the loader's constants, the ctypes buffers every batch
    reuses (the loader is driven from one thread, and each call's results are copied out before
    the next), and the live batch states. It is not the Loader: an Array kept after its batch
    and loader are dropped must not keep the loader alive."""
    __slots__ = ("live", "num_layers", "n", "on_device", "dev", "feature_dim", "has_labels",
                 "out", "out_ref", "batch", "batch_ref", "info", "info_ref", "block",
                 "block_ref")

    def __init__(self, num_layers, on_device, device, feature_dim):
        self.live = set()
        self.num_layers = num_layers
        self.n = 3 + 2 * num_layers
        self.on_device = bool(on_device)
        self.dev = (_dlpack.KDL_CUDA, device) if on_device else (_dlpack.KDL_CPU, 0)
        self.feature_dim = feature_dim
        self.has_labels = None  # known at the first batch that is asked for its labels
        self.out = (ctypes.c_void_p * self.n)()
        self.out_ref = self.out
        self.batch = ctypes.c_void_p()
        self.batch_ref = _byref(self.batch)
        self.info = _lib.BatchInfo.new()
        self.info_ref = _byref(self.info)
        self.block = _lib.Block()
        self.block_ref = _byref(self.block)


class _BatchState:
    """A C batch and what was exported from it: what a batch's Arrays hold (the Batch itself
    only holds this, so dropping the last reference to a Batch releases it at once, whatever
    Arrays are still around).

    The first export asks the library for every field at once (gd_batch_export_all, one call
    instead of one a field) with that export's stream; each field's first export on the same
    stream hands out its tensor from there, any other export gets a fresh one
    (gd_batch_export). Tensors nobody took are deleted when the batch is released. The
    capsules handed out are kept until then too, without a destructor: the release gives the
    still unconsumed ones theirs (_dlpack.settle)."""
    __slots__ = ("ptr", "dead", "epoch", "index", "ring", "pre", "pre_stream", "caps")

    def __init__(self, ptr, ring, epoch):
        self.ptr = ptr
        self.dead = None
        self.ring = ring
        self.epoch = epoch
        self.index = -1
        self.pre = None
        self.pre_stream = None
        self.caps = []

    def error(self):
        return ValueError("graphdirect.Batch %d of epoch %d: %s, so its arrays can no longer "
                          "be read (arrays imported from it before stay valid)"
                          % (self.index, self.epoch, self.dead))

    def invalidate(self, reason):
        ptr = self.ptr
        if ptr is None:
            return
        self.ptr = None
        self.dead = reason
        pre, self.pre = self.pre, None
        caps, self.caps = self.caps, None
        try:
            if caps:
                _settle(caps)
            if pre is not None:
                for m in pre:
                    if m:
                        _delete(m)
        finally:
            _release(ptr)
            self.ring.live.discard(self)

    def _capsule(self, slot, stream):
        # The hot path of every field's import, in one frame: the tensor from the batch's
        # one-call export when it can come from there, then a capsule without a destructor.
        ptr = self.ptr
        if ptr is None:
            raise self.error()
        ring = self.ring
        # Host memory needs no stream, and None is the common device case: no bookkeeping.
        sp = _stream_pointer(stream, True) if stream is not None and ring.on_device else None
        pre = self.pre
        if pre is None and _export_all is not None:
            st = _export_all(ptr, sp, ring.out_ref, ring.n)
            if st:
                check(st)
            pre = self.pre = ring.out[:]
            self.pre_stream = sp
        m = None
        if pre is not None and sp == self.pre_stream:
            m = pre[slot]
            pre[slot] = None
        if not m:
            field, layer = _slot_field(slot)
            out = ctypes.c_void_p()
            check(_export_one(ptr, field, layer, sp, _byref(out)))
            m = out.value
        try:
            cap = _capsule_new(m, _NAME, None)
        except BaseException:
            _delete(m)
            raise
        self.caps.append(cap)
        return cap

    def _data_ptr(self, slot):
        ptr = self.ptr
        if ptr is None:
            raise self.error()
        field, layer = _slot_field(slot)
        view = _lib.ArrayView()
        check(_get_array(ptr, field, layer, _byref(view)))
        return view.data or 0


class Batch:
    """A minibatch: input_nodes (int64 [num_input] global ids, seeds first), features
    (float32 [num_input, feature_dim]), labels (int64 [num_seeds], -1 = unlabelled; None when
    the dataset has no labels) and blocks (a list of Block, layer 0 = input layer).

    Release it with release() (or a `with` block, or by dropping it); iteration releases each
    batch when the next is asked for. Arrays imported from it before stay valid."""
    __slots__ = ("_s", "_loader", "epoch", "index", "num_seeds", "num_input", "num_layers",
                 "on_device", "device_index", "_dev", "_input_nodes", "_features", "_labels",
                 "_blocks", "__weakref__")

    def __init__(self, loader, ptr, epoch):
        ring = loader._ring
        # The info first: if it fails, no state exists yet, and the caller releases ptr.
        st = _get_info(ptr, ring.info_ref)
        if st:
            check(st)
        info = ring.info
        s = self._s = _BatchState(ptr, ring, epoch)
        self._loader = loader
        self.epoch = epoch
        self._input_nodes = self._features = self._labels = self._blocks = None
        self.index = s.index = info.index
        self.num_seeds = info.num_seeds
        self.num_input = info.num_input
        self.num_layers = ring.num_layers
        self.on_device = ring.on_device
        self.device_index = info.device
        self._dev = ring.dev
        ring.live.add(s)

    # ------------------------------------------------------------------ lifetime

    def _require(self):
        if self._s.ptr is None:
            raise self._s.error()

    @property
    def released(self):
        return self._s.ptr is None

    @property
    def _ptr(self):
        """The gd_batch_t * (None once released), for tests that call the C API directly."""
        return self._s.ptr

    def _invalidate(self, reason):
        self._s.invalidate(reason)

    def release(self):
        """Give the batch's buffers back to the loader (once tensors imported from it are gone
        too). Releasing twice is allowed."""
        self._s.invalidate("it was released")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._s.invalidate("it was released")

    def __del__(self):
        try:
            self._s.invalidate("it was garbage-collected")
        except Exception:
            pass

    def __repr__(self):
        state = " released" if self._s.ptr is None else ""
        return ("graphdirect.Batch(epoch=%d, index=%d, seeds=%d, input_nodes=%d, layers=%d, "
                "device=%s%s)" % (self.epoch, self.index, self.num_seeds, self.num_input,
                                  self.num_layers, self.device, state))

    # -------------------------------------------------------------------- fields

    @property
    def device(self):
        """"cpu" or "cuda:N": where the arrays live (the spelling torch accepts)."""
        return "cuda:%d" % self.device_index if self.on_device else "cpu"

    # The shapes come from the batch info and the loader; the addresses are asked of the
    # library only when data_ptr is read, so making an Array costs no C call.

    @property
    def input_nodes(self):
        s = self._s
        if s.ptr is None:
            raise s.error()
        a = self._input_nodes
        if a is None:
            a = self._input_nodes = _Array((self.num_input,), "int64", None, self._dev, s, 0)
        return a

    @property
    def features(self):
        s = self._s
        if s.ptr is None:
            raise s.error()
        a = self._features
        if a is None:
            a = self._features = _Array((self.num_input, s.ring.feature_dim), "float32", None,
                                        self._dev, s, 1)
        return a

    @property
    def labels(self):
        s = self._s
        if s.ptr is None:
            raise s.error()
        a = self._labels
        if a is None:
            ring = s.ring
            if ring.has_labels is None:
                view = _lib.ArrayView()
                st = _get_array(s.ptr, _lib.FIELD_LABELS, 0, _byref(view))
                if st != _lib.GD_ERR_NOT_FOUND:
                    check(st)
                ring.has_labels = st == _lib.GD_OK
            if not ring.has_labels:
                return None
            a = self._labels = _Array((self.num_seeds,), "int64", None, self._dev, s, 2)
        return a

    @property
    def blocks(self):
        s = self._s
        ptr = s.ptr
        if ptr is None:
            raise s.error()
        blocks = self._blocks
        if blocks is None:
            blocks = []
            dev = self._dev
            ring = s.ring
            b, ref = ring.block, ring.block_ref
            for layer in range(ring.num_layers):
                st = _get_block(ptr, layer, ref)
                if st:
                    check(st)
                # The block's own sizes and pointers: no gd_batch_array call per array.
                num_dst, num_edges = b.num_dst, b.num_edges
                slot = 3 + 2 * layer
                indptr = _Array((num_dst + 1,), "int32", b.indptr or 0, dev, s, slot)
                indices = _Array((num_edges,), "int32", b.indices or 0, dev, s, slot + 1)
                blocks.append(Block(layer, b.num_src, num_dst, num_edges, indptr, indices))
            self._blocks = blocks
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
        prev = self._prev
        if prev is not None:
            self._prev = None
            prev._s.invalidate("it was released")
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


def _context_handle(context, who):
    """The C handle of a graphdirect.Context (None: the device's default context)."""
    if context is None:
        return None
    from .context import Context
    if not isinstance(context, Context):
        raise TypeError("%s: context must be a graphdirect.Context, not %s"
                        % (who, type(context).__name__))
    return context._handle()


def _shard(rank, world_size):
    """(rank, world_size) for gd_loader_options, checked: (0, 0) asks for the context's."""
    if rank is None and world_size is None:
        return 0, 0
    if rank is None or world_size is None:
        raise ValueError("graphdirect.Loader: rank=%r, world_size=%r: give both (this process's "
                         "rank among world_size processes) or neither (the context's, 0 of 1 "
                         "unless it has several ranks)" % (rank, world_size))
    return _lib.rank_args(rank, world_size, "graphdirect.Loader")


def _place(opts, context):
    """The rank and world size a created loader shards by: the options', or its context's."""
    if opts.world_size:
        return opts.rank, opts.world_size
    if context is None:
        return 0, 1  # a device's default context never has several ranks
    return context.rank, context.world_size


def _seed_ids(value, num_nodes):
    """input_nodes as int64 node ids the C loader copies: a numpy int64 array (ids, or a boolean
    mask of the nodes; numpy, torch or a list), or a ctypes array without numpy (range, list)."""
    who = "graphdirect.Loader: input_nodes"
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is None:
        ids = list(value)
        if any(isinstance(v, bool) or not isinstance(v, int) for v in ids):
            raise ValueError("%s: node ids must be integers (install numpy for masks and "
                             "arrays)" % who)
        return (ctypes.c_int64 * len(ids))(*ids)
    from .dataset import _ids
    if isinstance(value, range):
        value = np.arange(value.start, value.stop, value.step, dtype=np.int64)
    arr = _ids(np, value, num_nodes, "graphdirect.Loader", "input_nodes", [])
    if arr.ndim != 1:
        raise ValueError("%s: expected a 1-D array of node ids or a mask, not shape %s"
                         % (who, tuple(arr.shape)))
    return arr


class Loader(_lib.Closing):
    """Minibatches of `dataset` for training with your own model.

    Loader(dataset, fanouts=[15, 10, 5], batch_size=1024, mode="auto", gpu_cache="4G",
           shuffle=True, seed=0, device=0, split="train", drop_last=False, depth=3, threads=0,
           graph_cache=None, gpu_mem_budget=None, gather_sms=None, context=None, rank=None,
           world_size=None, host_mem_budget=None, input_nodes=None, max_held=None,
           host_gather=None)

    context: a graphdirect.Context (its device replaces `device`); loaders and trainers of one
    context share the registration of a zero-copy feature table.
    host_gather: zero-copy's rows outside the GPU cache by "zero-copy" loads (default), "cpu"
    gather + one DMA, "split" / "split=F" (both at once) or "auto" (a trial of eight ways over
    the first minibatches, the fastest kept), as graphdirect.Trainer's.
    rank, world_size: seed sharding for data parallelism (torch DDP, one process per GPU).
    Minibatch b of an epoch is then this rank's share of global minibatch b, the
    world_size * batch_size seeds that one loader of that batch size would give (shuffled and
    drawn the same, whatever world_size): its seeds [rank * batch_size, (rank + 1) *
    batch_size). Every rank sees the same number of minibatches; at the end of an epoch a rank
    may get fewer seeds, or none: a batch with num_seeds == 0, whose arrays are empty (0 rows),
    which a DDP step must still take (its loss is 0 with the model's graph, see
    examples/pyg_ddp.py). Give both or neither; neither: the context's (0 of 1 unless it was
    made with several ranks).
    fanouts: neighbours drawn per node, from the seeds outward (-1 = all); one layer each.
    mode: "cpu" (host memory, CPU threads), "all-gpu", "zero-copy" (graph and features in
    pinned host memory read by the GPU, hot rows cached in `gpu_cache` bytes of GPU memory) or
    "auto" (the default: a GPU mode that fits when there is a GPU, else the CPU).
    device: the GPU, as an ordinal, "cuda:N" or a torch.device. Sizes (gpu_cache,
    graph_cache, gpu_mem_budget, host_mem_budget) read as on the command line: "4G" is
    4 * 1000**3 bytes, "4GiB" 4 * 1024**3. split: "train", "valid" or "test" seeds. depth: buffer sets in the ring (2..8).
    host_mem_budget: host memory the loader may take ("64G"; None: GD_HOST_MEM_MB or what is
    available); a feature table larger than it is read from its file (the SSD tier).
    input_nodes: any seeds instead of `split` (node ids, or a boolean mask of the nodes; numpy,
    torch or a list), e.g. range(dataset.num_nodes) with shuffle=False for an inference over
    every node; copied at creation.
    max_held: memory for batches kept past their turn. A batch whose tensors you keep
    (`ys.append(y)`, `total = total + loss` without `.detach()`) keeps its buffer set, and the
    loader takes another for the minibatches that follow, until the sets outside the ring would
    pass this size ("2G"); only then does the next batch raise, naming the batches that hold
    memory. None: a quarter of the memory free at creation (GPU memory in the GPU modes); 0:
    none (a held set raises as soon as the ring comes round to it).

    `for batch in loader:` runs the next epoch (0, 1, 2, ...); `loader.epoch(n)` runs epoch n.
    The shuffle and the draws are functions of (seed, epoch). close() (or `with`) frees it.
    """

    def __init__(self, dataset: "Dataset", fanouts: Sequence[int] = (15, 10, 5),
                 batch_size: int = 1024, mode: Optional[str] = "auto", gpu_cache: Size = "4G",
                 shuffle: bool = True, seed: int = 0, device: Device = 0, split: str = "train",
                 drop_last: bool = False, depth: int = 3, threads: int = 0,
                 graph_cache: Size = None, gpu_mem_budget: Size = None,
                 gather_sms: Optional[str] = None, context: Optional["Context"] = None,
                 rank: Optional[int] = None, world_size: Optional[int] = None,
                 host_mem_budget: Size = None, input_nodes: Optional[ArrayLike] = None,
                 max_held: Size = None, host_gather: Optional[str] = None) -> None:
        self._ptr = None
        self._ring = None
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
            if isinstance(f, bool) or not isinstance(f, int) or not -1 <= f <= _lib.INT_MAX:
                raise ValueError("graphdirect.Loader: fanout %r (position %d) must be an "
                                 "integer from 0 to %d, or -1 for all neighbours"
                                 % (f, i, _lib.INT_MAX))
            opts.fanouts[i] = f
        if split not in _lib.SPLITS:
            raise ValueError("graphdirect.Loader: split %r is not one of train, valid, test"
                             % (split,))
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError("graphdirect.Loader: seed must be an integer >= 0, not %r" % (seed,))
        who = "graphdirect.Loader"
        opts.batch_size = _lib.int_arg(batch_size, who, "batch_size", _lib.INT64_MIN, _lib.INT64_MAX)
        opts.split = _lib.SPLITS[split]
        opts.shuffle = 1 if shuffle else 0
        opts.drop_last = 1 if drop_last else 0
        opts.seed = seed
        opts.device = _lib.device_arg(device, who)
        opts.threads = _lib.int_arg(threads, who, "threads", _lib.INT_MIN, _lib.INT_MAX)
        opts.depth = _lib.int_arg(depth, who, "depth", _lib.INT_MIN, _lib.INT_MAX)
        # The feature cache is a zero-copy setting; the other modes keep their default.
        if mode in ("zero-copy", "auto", None):
            opts.gpu_cache_bytes = parse_size(gpu_cache, "graphdirect.Loader: gpu_cache")
        opts.graph_cache_bytes = parse_size(graph_cache, "graphdirect.Loader: graph_cache")
        budget = parse_size(gpu_mem_budget, "graphdirect.Loader: gpu_mem_budget")
        opts.gpu_mem_budget = 0 if budget < 0 else budget
        budget = parse_size(host_mem_budget, "graphdirect.Loader: host_mem_budget")
        opts.host_mem_budget = 0 if budget < 0 else budget
        held = parse_size(max_held, "graphdirect.Loader: max_held")
        opts.max_held_bytes = 0 if held < 0 else (-1 if held == 0 else held)
        opts.gather_sms = _lib.text(gather_sms)
        opts.host_gather = _lib.text(host_gather)
        opts.context = _context_handle(context, "graphdirect.Loader")
        opts.rank, opts.world_size = _shard(rank, world_size)
        seeds = None
        if input_nodes is not None:
            seeds = _seed_ids(input_nodes, dataset.num_nodes)
            opts.seeds = ctypes.addressof(seeds) if isinstance(seeds, ctypes.Array) \
                else seeds.ctypes.data
            opts.num_seeds = len(seeds)
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
        self.set_bytes = info.set_bytes
        self.max_held_bytes = info.max_held_bytes
        self.plan = info.plan.decode("utf-8", "replace")
        self.fanouts = fanouts
        self.batch_size = int(batch_size)
        self.rank, self.world_size = _place(opts, context)
        self.global_batch_size = self.batch_size * self.world_size
        self._ring = _Ring(len(fanouts), info.on_device, info.device, info.feature_dim)

    # ------------------------------------------------------------------ lifetime

    def _require(self):
        if self._ptr is None:
            raise ValueError("graphdirect.Loader: the loader is closed")
        return self._ptr

    @property
    def closed(self):
        return self._ptr is None

    def _release_batches(self, reason):
        ring = self._ring
        if ring is not None:
            for s in list(ring.live):
                s.invalidate(reason)

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

    def __repr__(self):
        if self._ptr is None:
            return "graphdirect.Loader(closed)"
        shard = (", rank=%d, world_size=%d" % (self.rank, self.world_size)
                 if self.world_size > 1 else "")
        return ("graphdirect.Loader(mode=%s, device=%s, fanouts=%s, batch_size=%d%s, "
                "batches_per_epoch=%d)" % (self.mode, self.device, self.fanouts,
                                           self.batch_size, shard, self.batches_per_epoch))

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
    def sets_outside(self):
        """Buffer sets outside the ring now (held batches' memory, and spares released since);
        at most max_held_bytes // set_bytes."""
        info = _lib.LoaderInfo.new()
        check(lib.gd_loader_get_info(self._require(), ctypes.byref(info)))
        return info.sets_outside

    @property
    def current_epoch(self):
        """The epoch in progress (-1 before the first)."""
        return self._epoch

    def next_batch(self):
        """The next Batch of the current epoch, or None after its last one. The caller releases
        it (release(), `with`, or dropping it); holding it, or its tensors, past its turn costs
        one buffer set of memory within max_held."""
        ptr = self._require()
        if self._epoch < 0:
            raise ValueError("graphdirect.Loader: no epoch was started: iterate the loader or "
                             "call loader.epoch(n) first")
        ring = self._ring
        st = _next(ptr, ring.batch_ref)
        if st:
            check(st)
        bp = ring.batch.value
        if not bp:
            return None
        try:
            return Batch(self, bp, self._epoch)
        except BaseException:
            _release(bp)
            raise
