"""graphdirect: GPU-centric minibatches for training graph neural networks, from Python.

A pure-Python binding (ctypes, standard library only) over libgraphdirect.so. Open or generate a
dataset, make a Loader, and iterate it: every field of a minibatch is a DLPack array that
torch.from_dlpack, numpy.from_dlpack and cupy.from_dlpack import without a copy, so existing
PyTorch / PyG / DGL model code trains on it unchanged (graphdirect.pyg has PyG helpers).

    import graphdirect, torch
    ds = graphdirect.Dataset("data/products")
    with graphdirect.Loader(ds, fanouts=[15, 10, 5], batch_size=1024, mode="zero-copy") as loader:
        for batch in loader:
            x = torch.from_dlpack(batch.features)
            y = torch.from_dlpack(batch.labels)
            ...

graphdirect.Trainer trains graphdirect's own models (GraphSAGE) with the same data path:

    with graphdirect.Trainer(ds, mode="auto", fanouts=[15, 10, 5]) as t:
        result = t.fit(10, on_epoch=print, checkpoint="ckpt")
        print(result["test_acc"], t.evaluate("test", exact=True))

Data parallelism with torch DDP: Loader(..., rank=r, world_size=n) gives each process its
share of every global minibatch (examples/pyg_ddp.py); Trainer(..., rank=r, world_size=n,
comm_id=graphdirect.comm_id() from rank 0) trains graphdirect's model over NCCL.

See docs/python.md and docs/multi_gpu.md.
"""
from ._dlpack import Array
from ._lib import GraphdirectError
from .context import Context, comm_available, comm_id, distributed_info
from .dataset import Dataset, generate, stripe
from .loader import Batch, Block, Loader
from .trainer import Trainer, checkpoint_info
from .unified import UnifiedTensor
from . import _lib, pyg  # pyg imports torch only when a helper is called


def version():
    """The version of the loaded libgraphdirect ("MAJOR.MINOR.PATCH")."""
    return _lib.lib.gd_version().decode()


def library_path():
    """The path of the libgraphdirect.so this binding loaded."""
    return _lib.path


def has_cuda():
    """Whether the library was built with CUDA."""
    return bool(_lib.lib.gd_has_cuda())


def device_count():
    """Usable GPUs (0 without CUDA or a driver)."""
    return _lib.lib.gd_device_count()


def status_string(status):
    """The text of a gd_status code."""
    return _lib.lib.gd_status_string(int(status)).decode()


def last_error():
    """The message of the last failing gd_* call on this thread ("" if none)."""
    return _lib.last_error()


__version__ = version()
__all__ = ["Array", "Batch", "Block", "Context", "Dataset", "GraphdirectError", "Loader",
           "Trainer", "checkpoint_info", "comm_available", "comm_id", "distributed_info",
           "generate", "stripe",
           "version", "library_path", "has_cuda", "device_count", "status_string",
           "last_error"]
