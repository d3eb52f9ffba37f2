"""graphdirect.Trainer: graphdirect's own models (GraphSAGE) trained on its data path, with the
run policy of `graphdirect train`.

A Trainer owns a gd_trainer_t (include/graphdirect.h, docs/train.md): the loader's data path
plus the model, the optimizer and the per-minibatch train stage, pipelined on the GPU in the GPU
modes. fit() trains up to a number of epochs, evaluating the valid split after each, keeping the
best valid model, writing checkpoints when asked and testing at the end, by sampled inference
and exactly (layer-wise over every neighbour). The randomness is keyed by (seed, epoch,
minibatch), so a run resumed from its checkpoint gives the losses of the uninterrupted run.

A trainer is not thread-safe: drive it from one thread.
"""
import ctypes
import math
import os
from typing import TYPE_CHECKING, Optional, Sequence

from . import _lib
from ._lib import check, lib
from ._types import Device, Path, Size
from .loader import _context_handle, parse_size

if TYPE_CHECKING:
    from .context import Context
    from .dataset import Dataset

_SPLITS = {"train": 4, "valid": 5, "test": 6}
_STATS = ("epoch", "batches", "loss", "train_acc", "valid_acc", "seconds", "sample_s",
          "gather_s", "train_s", "wait_s", "cpu_core_s", "gpu_mem_bytes", "improved",
          "best_valid", "best_epoch")
_RESULT = ("start_epoch", "epochs_done", "best_epoch", "best_valid", "mean_epoch_s", "test_acc",
           "test_count", "test_exact", "exact_seconds", "stopped")


def _nan_to_none(v):
    return None if isinstance(v, float) and math.isnan(v) else v


def _record(struct, names):
    out = {}
    for name in names:
        v = _nan_to_none(getattr(struct, name))
        out[name] = bool(v) if name in ("improved", "stopped") else v
    return out


def _path(value, what):
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError("graphdirect.Trainer: %s must be a path, not %s"
                        % (what, type(value).__name__))
    return os.fsencode(value)


def checkpoint_info(path):
    """What a model file or checkpoint holds (its model, shape, epochs, settings), as a dict."""
    info = _lib.CheckpointInfo.new()
    check(lib.gd_checkpoint_read_info(_path(path, "path"), ctypes.byref(info)))
    return {"model": info.model.decode(), "num_layers": info.num_layers,
            "in_dim": info.in_dim, "hidden": info.hidden, "num_classes": info.num_classes,
            "fanouts": list(info.fanouts[:info.num_layers]), "seed": info.seed,
            "epochs_done": info.epochs_done, "adam_step": info.adam_step,
            "best_valid": _nan_to_none(info.best_valid), "best_epoch": info.best_epoch,
            "has_state": bool(info.has_state),
            "dataset": info.dataset.decode("utf-8", "replace"),
            "config": info.config.decode("utf-8", "replace")}


def _ranks_context(context, device, rank, world_size, comm_id, comm_timeout):
    """The Context a Trainer makes itself from rank, world_size and comm_id (None when none of
    them is given: the trainer then uses `context`, or its device's default one)."""
    if rank is None and world_size is None and comm_id is None and comm_timeout is None:
        return None
    if context is not None:
        raise ValueError("graphdirect.Trainer: give either context= or rank/world_size/comm_id "
                         "(from which the trainer makes its context), not both")
    if rank is None or world_size is None:
        raise ValueError("graphdirect.Trainer: rank=%r, world_size=%r: give both (with comm_id "
                         "when world_size > 1)" % (rank, world_size))
    from .context import Context
    return Context(device=device, rank=rank, world_size=world_size, comm_id=comm_id,
                   comm_timeout=comm_timeout)


def _relation_fanouts(spec):
    """relation_fanouts as the library's text: None, a str as given, or a list of {edge: count}
    per hop (edge: a relation name or a (src, relation, dst) triple)."""
    if spec is None or isinstance(spec, str):
        return spec
    hops = []
    for h, hop in enumerate(spec):
        if not isinstance(hop, dict):
            raise TypeError("graphdirect.Trainer: relation_fanouts[%d] must be a dict of "
                            "{edge: count}, not %s" % (h, type(hop).__name__))
        items = []
        for edge, count in hop.items():
            name = ":".join(edge) if isinstance(edge, tuple) else str(edge)
            if isinstance(count, bool) or not isinstance(count, int) or count < -1:
                raise ValueError("graphdirect.Trainer: relation_fanouts[%d][%r] is %r; give "
                                 "-1 (all), 0 (none) or a count" % (h, edge, count))
            items.append("%s=%d" % (name, count))
        hops.append(",".join(items))
    return ";".join(hops)


class Trainer(_lib.Closing):
    """A model of graphdirect's trained on `dataset`.

    Trainer(dataset, mode="auto", model="sage", fanouts=(10, 5), batch_size=1024, hidden=128,
            dropout=0.5, lr=3e-3, weight_decay=0.0, seed=0, threads=0, device=0,
            gpu_cache=None, graph_cache=None, gpu_mem_budget=None, gather_sms=None, depth=3,
            mlp=False, context=None, host_mem_budget=None, rank=None, world_size=None,
            comm_id=None, comm_timeout=None, placement=None, locality=0, host_gather=None)

    mode: "cpu", "all-gpu", "zero-copy", "cpu-centric" or "auto" (docs/train.md). fanouts:
    neighbours drawn per node from the seeds outward (-1 = all), one layer each. mlp=True: the
    baseline with the graph removed. host_mem_budget: host memory the trainer may take beyond
    the dataset (default: what is available, or GD_HOST_MEM_MB); a model and buffers that need
    more are refused here, naming both sizes. close() (or `with`) frees it; closing the dataset
    closes its trainers.

    Data parallelism (one process per GPU, docs/multi_gpu.md): a trainer whose context has
    world_size > 1 trains on this rank's share of every global minibatch of world_size *
    batch_size seeds (batch_size is per rank) and all-reduces the gradients with NCCL, so N
    ranks give the losses of one GPU at N times the batch. Pass such a graphdirect.Context as
    `context`, or rank, world_size and comm_id (graphdirect.comm_id()'s bytes from rank 0; and
    comm_timeout, in seconds) and the trainer makes that context on `device` itself (its
    `context` attribute, closed with the trainer). Rank 0 writes the checkpoints. placement:
    where zero-copy ranks cache the hot feature rows, "replicate", "partition" or "auto" (the
    default; docs/multi_gpu.md). locality: locality-aware sampling in zero-copy training, 0 (off),
    a factor >= 2 by which rows in GPU memory are favoured, or "auto" (adapted each epoch).
    host_gather: how zero-copy's feature rows outside the GPU cache reach the GPU, "zero-copy"
    (the default: the gather kernel reads pinned host memory), "cpu" (CPU threads copy them
    into pinned staging, one DMA), "split" (both at once: CPU threads copy a fraction of them,
    "split=0.6" names it, else GD_HOST_SPLIT or the start-up probe's rates, while the kernel
    reads the rest) or "auto" (the first training minibatches try eight CPU fractions from 1 to 0,
    GD_HOST_TRIAL each, and the fastest is kept; the plan says which).
    model: "sage" (GraphSAGE) or "gat" (PyG's GATConv, `heads` attention heads, hidden layers
    heads x hidden wide; its exact test runs attention over every neighbour, layer by layer);
    attn_dropout: GAT's dropout on the attention weights in training, keyed by each edge's nodes
    (the same masks on any number of GPUs).

    Heterogeneous datasets (node and edge types, docs/hetero.md) train with model="rsage"
    (relational GraphSAGE, PyG's to_hetero(SAGEConv)), "rgcn" (relational GCN, PyG's
    RGCNConv with a root weight and bias per node type) or "rgat" in any mode (all-gpu and
    zero-copy keep the graph in GPU memory; zero-copy reads the per-type feature tables from
    pinned host memory; one rank). `fanouts` then
    apply to every edge type; relation_fanouts sets them per (hop, edge type): a list with a
    dict per hop, {edge: count}, an edge being a relation name ("cites") or a (source,
    relation, destination) triple, e.g. [{"cites": 10, "writes": 5}, {"cites": 5}]; or the
    same as the CLI's text, "cites=10,writes=5;cites=5". Edge types a hop does not name keep
    that hop's fanout.
    """

    def __init__(self, dataset: "Dataset", mode: str = "auto", model: str = "sage",
                 fanouts: Sequence[int] = (10, 5), batch_size: int = 1024, hidden: int = 128,
                 dropout: float = 0.5, lr: float = 3e-3, weight_decay: float = 0.0,
                 seed: int = 0, threads: int = 0, device: Device = 0, gpu_cache: Size = None,
                 graph_cache: Size = None, gpu_mem_budget: Size = None,
                 gather_sms: Optional[str] = None, depth: int = 3, mlp: bool = False,
                 context: Optional["Context"] = None, host_mem_budget: Size = None,
                 rank: Optional[int] = None, world_size: Optional[int] = None,
                 comm_id: Optional[bytes] = None, comm_timeout: Optional[float] = None,
                 placement: Optional[str] = None, locality: int = 0, heads: int = 1,
                 attn_dropout: float = 0.0, relation_fanouts=None,
                 host_gather: Optional[str] = None) -> None:
        self._ptr = None
        self._own_context = None
        from .dataset import Dataset
        if not isinstance(dataset, Dataset):
            raise TypeError("graphdirect.Trainer: dataset must be a graphdirect.Dataset, not %s"
                            % type(dataset).__name__)
        o = _lib.TrainOptions.new()
        o.mode = _lib.text(mode)
        o.model = _lib.text(model)
        o.heads = _lib.int_arg(heads, "graphdirect.Trainer", "heads", 1, 64)
        fanouts = list(fanouts)
        if not 1 <= len(fanouts) <= _lib.GD_SAMPLER_MAX_LAYERS:
            raise ValueError("graphdirect.Trainer: %d fanouts; give 1 to %d (one per layer)"
                             % (len(fanouts), _lib.GD_SAMPLER_MAX_LAYERS))
        o.num_layers = len(fanouts)
        for i, f in enumerate(fanouts):
            if isinstance(f, bool) or not isinstance(f, int) or not -1 <= f <= _lib.INT_MAX:
                raise ValueError("graphdirect.Trainer: fanout %r (position %d) must be an "
                                 "integer from 0 to %d, or -1 for all neighbours"
                                 % (f, i, _lib.INT_MAX))
            o.fanouts[i] = f
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError("graphdirect.Trainer: seed must be an integer >= 0, not %r"
                             % (seed,))
        who = "graphdirect.Trainer"
        o.batch_size = _lib.int_arg(batch_size, who, "batch_size", _lib.INT64_MIN, _lib.INT64_MAX)
        o.hidden = _lib.int_arg(hidden, who, "hidden", _lib.INT64_MIN, _lib.INT64_MAX)
        o.dropout = float(dropout)
        o.attn_dropout = float(attn_dropout)
        o.relation_fanouts = _lib.text(_relation_fanouts(relation_fanouts))
        o.lr = float(lr)
        o.weight_decay = float(weight_decay)
        o.seed = seed
        o.threads = _lib.int_arg(threads, who, "threads", _lib.INT_MIN, _lib.INT_MAX)
        o.device = _lib.device_arg(device, who)
        o.gpu_cache_bytes = parse_size(gpu_cache, "graphdirect.Trainer: gpu_cache")
        o.graph_cache_bytes = parse_size(graph_cache, "graphdirect.Trainer: graph_cache")
        budget = parse_size(gpu_mem_budget, "graphdirect.Trainer: gpu_mem_budget")
        o.gpu_mem_budget = 0 if budget < 0 else budget
        budget = parse_size(host_mem_budget, "graphdirect.Trainer: host_mem_budget")
        o.host_mem_budget = 0 if budget < 0 else budget
        o.gather_sms = _lib.text(gather_sms)
        o.depth = _lib.int_arg(depth, who, "depth", _lib.INT_MIN, _lib.INT_MAX)
        o.mlp = 1 if mlp else 0
        o.placement = _lib.text(placement)
        o.host_gather = _lib.text(host_gather)
        o.locality = -1 if locality == "auto" else _lib.int_arg(locality, who, "locality",
                                                                  _lib.INT_MIN, _lib.INT_MAX)
        _context_handle(context, "graphdirect.Trainer")  # checked before a context is made
        _lib.need("gd_trainer_create")
        self._own_context = _ranks_context(context, o.device, rank, world_size, comm_id,
                                           comm_timeout)
        context = self._own_context or context
        o.context = _context_handle(context, "graphdirect.Trainer")
        out = ctypes.c_void_p()
        try:
            check(lib.gd_trainer_create(dataset._ptr(), ctypes.byref(o), ctypes.byref(out)))
        except BaseException:
            self.close()
            raise
        self._ptr = out.value
        # The C dataset must outlive the C trainer: hold its handle; the Dataset closes us.
        self._dataset_handle = dataset._handle
        dataset._loaders.add(self)
        self.fanouts = fanouts
        self.batch_size = int(batch_size)
        self.context = context
        self.rank = context.rank if context is not None else 0
        self.world_size = context.world_size if context is not None else 1

    # ------------------------------------------------------------------ lifetime

    def _require(self):
        if self._ptr is None:
            raise ValueError("graphdirect.Trainer: the trainer is closed")
        return self._ptr

    @property
    def closed(self):
        return self._ptr is None

    def close(self):
        """Free the trainer (its model goes with it: save() it first). Closing twice is
        allowed."""
        ptr, self._ptr = self._ptr, None
        if ptr:
            lib.gd_trainer_destroy(ptr)
        self._dataset_handle = None
        own, self._own_context = self._own_context, None
        if own is not None:
            own.close()

    # ------------------------------------------------------------------ reports

    @property
    def info(self):
        """What the trainer is: mode, plan, model, sizes, epochs done, best valid so far."""
        i = _lib.TrainerInfo.new()
        check(lib.gd_trainer_get_info(self._require(), ctypes.byref(i)))
        out = {name: getattr(i, name) for name, _ in _lib.TrainerInfo._fields_
               if name not in ("size", "mode", "plan", "model")}
        out.update(mode=(i.mode or b"").decode(), model=(i.model or b"").decode(),
                   plan=i.plan.decode("utf-8", "replace"), mlp=bool(i.mlp),
                   on_device=bool(i.on_device), best_valid=_nan_to_none(i.best_valid))
        return out

    def __repr__(self):
        if self._ptr is None:
            return "graphdirect.Trainer(closed)"
        i = self.info
        return ("graphdirect.Trainer(mode=%r, model=%r, fanouts=%r, parameters=%d, "
                "epochs_done=%d)" % (i["mode"], "mlp" if i["mlp"] else i["model"], self.fanouts,
                                     i["num_params"], i["epochs_done"]))

    # ------------------------------------------------------------------ training

    def fit(self, epochs, on_epoch=None, checkpoint=None, resume=False, checkpoint_every=1,
            validate=True, keep_best=True, test=True, exact_test=True, max_batches=0,
            progress=None, report_every=0, overwrite=False):
        """Train until `epochs` epochs are done (from the epochs already done: 0, or a
        checkpoint's after resume=True) and return a dict: start_epoch, epochs_done,
        best_epoch, best_valid, mean_epoch_s, test_acc, test_count, test_exact,
        exact_seconds, stopped, and history (one dict of stats per epoch trained).

        on_epoch(stats) is called after every epoch with its stats (a dict: epoch, loss,
        train_acc, valid_acc, seconds, ...); a true return value stops the run there (the best
        model is still restored and tested). An exception raised in a callback stops the run
        at once and comes out of fit(). checkpoint: a directory for checkpoint.gdc (every
        `checkpoint_every` epochs and at the last) and best.gdc; resume=True goes on from it.
        A checkpoint directory that holds an earlier run is refused unless resume=True, or
        overwrite=True (which replaces that run); one that another trainer or process is
        writing is refused at once (the trainer holds it until it is closed).
        progress(epoch, done, total, loss) is called every `report_every` minibatches (0: 20).
        With keep_best the trainer ends holding the best valid model, which a further fit goes
        on training.
        """
        ptr = self._require()
        f = _lib.FitOptions.new()
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 0:
            raise ValueError("graphdirect.Trainer.fit: epochs must be an integer >= 0, not %r"
                             % (epochs,))
        f.epochs = epochs
        f.validate, f.keep_best = int(bool(validate)), int(bool(keep_best))
        f.test, f.exact_test = int(bool(test)), int(bool(exact_test))
        f.checkpoint_dir = None if checkpoint is None else _path(checkpoint, "checkpoint")
        f.checkpoint_every = int(checkpoint_every)
        f.resume = 1 if resume else 0
        f.overwrite = 1 if overwrite else 0
        f.max_batches = int(max_batches)
        f.report_every = int(report_every)
        history, raised = [], []

        def epoch_cb(_user, stats):
            try:
                s = _record(stats.contents, _STATS)
                history.append(s)
                return 1 if on_epoch is not None and on_epoch(dict(s)) else 0
            except BaseException as e:  # noqa: B902 - handed back to the caller after the call
                raised.append(e)
                return -1

        def progress_cb(_user, epoch, done, total, loss):
            try:
                progress(epoch, done, total, _nan_to_none(loss))
                return 0
            except BaseException as e:  # noqa: B902
                raised.append(e)
                return 1

        f.on_epoch = _lib.EPOCH_FN(epoch_cb)
        if progress is not None:
            f.progress = _lib.PROGRESS_FN(progress_cb)
        r = _lib.FitResult.new()
        st = lib.gd_trainer_fit(ptr, ctypes.byref(f), ctypes.byref(r))
        if raised:
            raise raised[0]
        check(st)
        out = _record(r, _RESULT)
        out["history"] = history
        return out

    def resume(self, checkpoint):
        """Load checkpoint/checkpoint.gdc (same settings required) and its best model: the
        next fit goes on from there."""
        check(lib.gd_trainer_resume(self._require(), _path(checkpoint, "checkpoint")))

    def evaluate(self, split: str = "test", exact: bool = False) -> Optional[float]:
        """Accuracy of the current model on split ("train", "valid" or "test"), None when the
        split has no labelled node. exact=True: layer-wise inference over every neighbour
        (its predictions are kept until the model changes); else sampled inference."""
        if split not in _SPLITS:
            raise ValueError("graphdirect.Trainer.evaluate: split %r is not one of train, valid, "
                             "test" % (split,))
        acc, count = ctypes.c_double(), ctypes.c_int64()
        check(lib.gd_trainer_evaluate(self._require(), _SPLITS[split], 1 if exact else 0,
                                      ctypes.byref(acc), ctypes.byref(count)))
        return _nan_to_none(acc.value)

    def save(self, path: Path) -> None:
        """Save the current model (no optimizer) atomically: a model file for load() and
        `graphdirect eval`."""
        check(lib.gd_trainer_save(self._require(), _path(path, "path")))

    def load(self, path: Path) -> None:
        """Load the parameters of a model file or checkpoint of a model of this shape."""
        check(lib.gd_trainer_load(self._require(), _path(path, "path")))
