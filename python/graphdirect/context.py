"""graphdirect.Context: the GPU that loaders and trainers use and what they share on it.

A feature table read zero-copy is page-locked once per context and shared by the context's
loaders and trainers (a training loader beside a validation one). Objects made without one use
the device's default context, which Context.default(device) also gives. The C context lives
while any object made on it does, so closing a Context before its loaders is allowed.

    ctx = graphdirect.Context(device=0)
    train = graphdirect.Loader(ds, mode="zero-copy", context=ctx)
    valid = graphdirect.Loader(ds, mode="zero-copy", split="valid", context=ctx)
    ctx.info()  # {"device": 0, "is_default": False, "pinned_ranges": 3, ...}

Data parallelism (docs/multi_gpu.md): one process per GPU, each with a context of its rank,
the world size and the communicator id that rank 0 made with comm_id() and handed to the others
(through torch.distributed, a file, MPI ...). A Trainer on such a context trains on its share of
every global minibatch and all-reduces the gradients with NCCL:

    ctx = graphdirect.Context(device=local_rank, rank=rank, world_size=n, comm_id=id)
    with graphdirect.Trainer(ds, mode="zero-copy", context=ctx) as t:
        t.fit(10)
"""
import ctypes
import os
import sys

from . import _lib
from ._lib import GraphdirectError, check, lib


def comm_available():
    """Whether this libgraphdirect can train on several GPUs (it was built with NCCL)."""
    _lib.need("gd_comm_available")
    return bool(lib.gd_comm_available())


def comm_id():
    """A new communicator id (GD_COMM_ID_BYTES = 128 bytes, NCCL's unique id) for the ranks of
    one run: rank 0 makes it and hands the same bytes to every rank's Context. The process that
    made it must live until every rank has made its context. Raises GraphdirectError
    (GD_ERR_UNSUPPORTED) when the library was built without NCCL."""
    if not comm_available():
        raise GraphdirectError(_lib.STATUS["GD_ERR_UNSUPPORTED"],
                               "graphdirect.comm_id: %s was built without NCCL, so it cannot "
                               "train on several GPUs; rebuild it where NCCL is found (the CUDA "
                               "toolkit's, or libnccl-dev), or train on one GPU" % _lib.path)
    _lib.need("gd_comm_id_create")
    buf = (ctypes.c_ubyte * _lib.GD_COMM_ID_BYTES)()
    check(lib.gd_comm_id_create(ctypes.byref(buf)))
    return bytes(buf)


def distributed_info():
    """(rank, world_size, local_rank) of this process: torch.distributed's when it is
    initialised, else torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK), else (0, 1, 0).
    What to pass to Loader(rank=, world_size=) and as the device of each rank."""
    env = os.environ
    local = int(env.get("LOCAL_RANK", "0"))
    dist = getattr(sys.modules.get("torch"), "distributed", None)  # never imports torch
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size(), local
    return int(env.get("RANK", "0")), int(env.get("WORLD_SIZE", "1")), local


def _comm_options(o, rank, world_size, comm_id, comm_timeout):
    """Fill the data-parallel fields of gd_context_options, checked; returns the id's buffer,
    which must live until gd_context_create returns."""
    who = "graphdirect.Context"
    o.rank, o.world_size = _lib.rank_args(rank, world_size, who)
    if comm_timeout is not None:
        if isinstance(comm_timeout, bool) or not isinstance(comm_timeout, (int, float)) or \
                not comm_timeout > 0:
            raise ValueError("%s: comm_timeout must be seconds > 0 (None: GD_COMM_TIMEOUT, else "
                             "600), not %r" % (who, comm_timeout))
        o.comm_timeout_s = float(comm_timeout)
    if world_size == 1:
        return None  # alone: no communicator, so an id (torchrun with one process) is unused
    if comm_id is None:
        raise ValueError("%s: %d ranks need the communicator id that rank 0 made with "
                         "graphdirect.comm_id() (comm_id=, the same bytes on every rank)"
                         % (who, world_size))
    if not isinstance(comm_id, (bytes, bytearray, memoryview)):
        raise TypeError("%s: comm_id must be the bytes of graphdirect.comm_id(), not %s"
                        % (who, type(comm_id).__name__))
    comm_id = bytes(comm_id)
    if len(comm_id) != _lib.GD_COMM_ID_BYTES:
        raise ValueError("%s: comm_id has %d bytes; graphdirect.comm_id() gives %d"
                         % (who, len(comm_id), _lib.GD_COMM_ID_BYTES))
    buf = (ctypes.c_ubyte * _lib.GD_COMM_ID_BYTES).from_buffer_copy(comm_id)
    o.comm_id = ctypes.cast(buf, ctypes.c_void_p)
    return buf


class Context(_lib.Closing):
    """Context(device=0, rank=0, world_size=1, comm_id=None, comm_timeout=None): a context on
    GPU `device` (usable without a GPU, in cpu mode). With world_size > 1 it is rank `rank` of
    a data-parallel run: comm_id is graphdirect.comm_id()'s bytes, the same on every rank, and
    making the context joins the NCCL communicator (every rank must make its own; the call
    returns when all have). comm_timeout: seconds a collective may take before the run is
    aborted with an error naming the cause (None: GD_COMM_TIMEOUT, else 600)."""

    def __init__(self, device=0, rank=0, world_size=1, comm_id=None, comm_timeout=None,
                 _default=False):
        self._ptr = None
        if isinstance(device, bool) or device is None:
            raise TypeError("graphdirect.Context: device must be a GPU ordinal, \"cuda:N\" or "
                            "a torch.device, not %r" % (device,))
        device = _lib.device_arg(device, "graphdirect.Context")
        out = ctypes.c_void_p()
        if _default:
            _lib.need("gd_context_default")
            check(lib.gd_context_default(device, ctypes.byref(out)))
        else:
            _lib.need("gd_context_create")
            o = _lib.ContextOptions.new()
            o.device = device
            # o points into this buffer, which must live until the call returns.
            self._comm_id_buf = _comm_options(o, rank, world_size, comm_id, comm_timeout)
            check(lib.gd_context_create(ctypes.byref(o), ctypes.byref(out)))
        self._ptr = out.value
        self.device = device
        self.rank = 0 if _default else rank
        self.world_size = 1 if _default else world_size

    @classmethod
    def default(cls, device=0):
        """The default context of GPU `device`: what objects made without a context use."""
        return cls(device, _default=True)

    def info(self):
        """What the context holds: its device, whether it is the default one, its rank among
        world_size, and the host memory its registry keeps registered (ranges, bytes, and the
        registrations sharing them)."""
        _lib.need("gd_context_get_info")
        i = _lib.ContextInfo.new()
        check(lib.gd_context_get_info(self._handle(), ctypes.byref(i)))
        return dict(device=i.device, is_default=bool(i.is_default),
                    pinned_ranges=i.pinned_ranges, pinned_bytes=i.pinned_bytes,
                    pinned_users=i.pinned_users, rank=i.rank, world_size=i.world_size)

    def share_registry(self, other):
        """Use `other`'s registry of registered host memory from now on (a Context of any GPU
        of this process): a table page-locked through either is locked once and stays locked
        while a user of either holds it, so loaders and trainers made one after another over a
        large table do not lock it again. This context must not hold a registration yet."""
        if not isinstance(other, Context):
            raise TypeError("graphdirect.Context.share_registry: other must be a Context, not %s"
                            % type(other).__name__)
        _lib.need("gd_context_share_registry")
        check(lib.gd_context_share_registry(self._handle(), other._handle()))

    def abort(self, why=None):
        """Abort the context's communicator (nothing without one): collectives in flight stop,
        and every rank's wait on them fails with GraphdirectError (GD_ERR_COMM) naming `why`.
        For a rank that has failed outside graphdirect and must not leave the others waiting."""
        _lib.need("gd_context_abort")
        lib.gd_context_abort(self._handle(), _lib.text(why))

    def _handle(self):
        if self._ptr is None:
            raise ValueError("graphdirect.Context: the context was closed")
        return self._ptr

    def close(self):
        """Give the context back (its objects keep it alive). Closing twice is allowed."""
        ptr, self._ptr = self._ptr, None
        if ptr:
            lib.gd_context_destroy(ptr)

    def __repr__(self):
        rank = (", rank=%d, world_size=%d" % (self.rank, self.world_size)
                if self.world_size > 1 else "")
        return "graphdirect.Context(device=%d%s%s)" % (
            self.device, rank, ", closed" if self._ptr is None else "")
