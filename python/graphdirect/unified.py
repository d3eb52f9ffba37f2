"""graphdirect.UnifiedTensor: PyTorch-Direct's unified tensor over graphdirect's gather.

A host table (a CPU torch tensor or a numpy array, rows x cols, C-contiguous; shared memory
included) is registered once for zero-copy GPU reads, and `ut[ids]` returns the rows `ids` as a
CUDA tensor, gathered by the GPU itself through the library's aligned gather (gd_gather): no
CPU index_select, no copy through a staging buffer, no host synchronisation. The gather runs on
torch's current stream of the tensor's GPU, so what follows on that stream sees the rows.
Without a GPU (device=None, or no GPU visible) it is a CPU gather into a CPU tensor.

    ut = graphdirect.UnifiedTensor(features, device="cuda:0")   # features: torch CPU tensor
    x = ut[ids]                                                 # ids: a CUDA (or CPU) tensor

Two lines in a PyTorch GNN script: where it did features[ids].to("cuda"), it does ut[ids].
The table must stay alive and unchanged while the UnifiedTensor exists (it keeps a reference).
Several processes can map one shared-memory table (torch's share_memory_(), or
graphdirect's gd_host_tensor_open_shm) and each wrap it for its own GPU.
"""
import ctypes
from typing import Optional

from . import _lib
from ._lib import check, lib
from ._types import ArrayLike, Device, Size
from .loader import _context_handle, parse_size

_TORCH_DTYPES = {"torch.float32": 1, "torch.float16": 2, "torch.bfloat16": 3,
                 "torch.float64": 4, "torch.int8": 5, "torch.uint8": 6, "torch.int16": 7,
                 "torch.int32": 8, "torch.int64": 9}
_NUMPY_DTYPES = {"float32": 1, "float16": 2, "float64": 4, "int8": 5, "uint8": 6, "int16": 7,
                 "int32": 8, "int64": 9}
_GATHER_ZEROCOPY, _GATHER_CPU = 0, 4


class UnifiedTensor(_lib.Closing):
    """UnifiedTensor(table, device=0, gpu_cache=None, hot=None, sm_budget=None, max_ids=1 << 20,
    context=None)

    table: a CPU torch tensor or a numpy array of shape (rows, cols), C-contiguous.
    device: the GPU (an ordinal, "cuda:N" or a torch.device); None gathers on the CPU.
    gpu_cache, hot: optionally keep the rows with the highest `hot` scores (one per row: degrees,
    access counts) in `gpu_cache` bytes of GPU memory, read from there instead of over PCIe.
    sm_budget: the SMs the gather may use ("10%", "16"; None: GD_GATHER_SMS).
    max_ids: most ids of one gather (larger requests are split)."""

    def __init__(self, table, device: Device = 0, gpu_cache: Size = None,
                 hot: Optional[ArrayLike] = None, sm_budget: Optional[str] = None,
                 max_ids: int = 1 << 20, context=None) -> None:
        who = "graphdirect.UnifiedTensor"
        self._t = self._g = None
        self._table = table  # kept alive: the library reads it in place
        ptr, rows, cols, dtype = _describe(table, who)
        self.shape, self.rows, self.cols, self._dtype_code = (rows, cols), rows, cols, dtype
        self._torch_dtype = str(getattr(table, "dtype", ""))
        self._numpy = not type(table).__module__.startswith("torch")
        gpu = device is not None and lib.gd_device_count() > 0
        self.device = _lib.device_arg(device, who) if gpu else None
        t = ctypes.c_void_p()
        read_only = self._numpy and not table.flags["WRITEABLE"]  # e.g. np.load(mmap_mode="r")
        check(lib.gd_host_tensor_adopt(ptr, rows, cols, dtype, 1 if read_only else 0,
                                       ctypes.byref(t)))
        self._t = t.value
        ctx = _context_handle(context, who)
        self._ctx_own = None
        if gpu and ctx is None:
            c = ctypes.c_void_p()
            check(lib.gd_context_default(self.device, ctypes.byref(c)))
            self._ctx_own = ctx = c.value
        if gpu:
            check(lib.gd_host_tensor_register(self._t, ctx))
        o = _lib.GathererOptions.new()
        self.max_ids = _lib.int_arg(max_ids, who, "max_ids", 1, 1 << 31)
        o.max_ids = self.max_ids
        o.sm_budget = _lib.text(sm_budget)
        cache = parse_size(gpu_cache, who + ": gpu_cache")
        self._hot = None
        if cache > 0:
            if not gpu:
                raise ValueError("%s: gpu_cache needs a GPU" % who)
            if hot is None:
                raise ValueError("%s: gpu_cache needs hot= scores (one per row) to choose the "
                                 "rows it keeps" % who)
            self._hot = _int64_array(hot, rows, who)
            o.cache_bytes = cache
            o.cache_scores = ctypes.addressof(self._hot) if isinstance(self._hot, ctypes.Array) \
                else self._hot.ctypes.data
        g = ctypes.c_void_p()
        check(lib.gd_gatherer_create(self._t, ctx, _GATHER_ZEROCOPY if gpu else _GATHER_CPU,
                                     ctypes.byref(o), ctypes.byref(g)))
        self._g = g.value

    def close(self):
        if getattr(self, "_g", None):
            lib.gd_gatherer_destroy(self._g)
            self._g = None
        if getattr(self, "_t", None):
            lib.gd_host_tensor_destroy(self._t)
            self._t = None
        if getattr(self, "_ctx_own", None):
            lib.gd_context_destroy(self._ctx_own)
            self._ctx_own = None

    def __len__(self):
        return self.rows

    def __repr__(self):
        return "graphdirect.UnifiedTensor(shape=%s, device=%s)" % (
            self.shape, "cpu" if self.device is None else "cuda:%d" % self.device)

    def __getitem__(self, ids):
        """Rows `ids` (a 1-D integer tensor or array; a CUDA tensor stays on the GPU) as a new
        tensor: CUDA on the GPU path, on torch's current stream; else like the table."""
        if self._g is None:
            raise ValueError("graphdirect.UnifiedTensor: closed")
        if self.device is None:
            return self._cpu_gather(ids)
        import torch
        ids_t = torch.as_tensor(ids)
        if ids_t.dtype != torch.int64:
            ids_t = ids_t.to(torch.int64)
        if ids_t.dim() != 1:
            raise ValueError("graphdirect.UnifiedTensor: ids must be 1-D, not %s"
                             % (tuple(ids_t.shape),))
        dev = torch.device("cuda", self.device)
        on_device = ids_t.is_cuda
        if on_device and ids_t.device != dev:
            raise ValueError("graphdirect.UnifiedTensor: ids are on %s, the table is read by %s"
                             % (ids_t.device, dev))
        ids_t = ids_t.contiguous()
        dtype = getattr(torch, self._torch_dtype.split(".")[-1]) if not self._numpy else \
            _torch_dtype_of(self._dtype_code)
        out = torch.empty((ids_t.shape[0], self.cols), dtype=dtype, device=dev)
        stream = torch.cuda.current_stream(dev).cuda_stream
        row_bytes = out.element_size() * self.cols
        for lo in range(0, ids_t.shape[0], self.max_ids):
            n = min(self.max_ids, ids_t.shape[0] - lo)
            check(lib.gd_gather(self._g, ids_t.data_ptr() + 8 * lo, n, 1 if on_device else 0,
                                out.data_ptr() + row_bytes * lo, stream))
        return out

    def _cpu_gather(self, ids):
        if self._numpy:
            import numpy as np
            idx = np.ascontiguousarray(np.asarray(ids, dtype=np.int64))
            out = np.empty((idx.shape[0], self.cols), dtype=self._table.dtype)
            ids_ptr, out_ptr = idx.ctypes.data, out.ctypes.data
        else:
            import torch
            idx = torch.as_tensor(ids, dtype=torch.int64).contiguous()
            out = torch.empty((idx.shape[0], self.cols), dtype=self._table.dtype)
            ids_ptr, out_ptr = idx.data_ptr(), out.data_ptr()
        row_bytes = (out.itemsize if self._numpy else out.element_size()) * self.cols
        for lo in range(0, idx.shape[0], self.max_ids):
            n = min(self.max_ids, idx.shape[0] - lo)
            check(lib.gd_gather(self._g, ids_ptr + 8 * lo, n, 0, out_ptr + row_bytes * lo, None))
        return out

    def check_errors(self):
        """Wait for the gathers so far and raise for a bad id a CUDA-tensor `ids` held (the
        kernel zeroes such a row and records it; host ids are checked before the gather)."""
        check(lib.gd_gatherer_check_errors(self._g))


def _describe(table, who):
    """(data pointer, rows, cols, gd_dtype) of a 2-D C-contiguous CPU torch tensor or numpy
    array."""
    if type(table).__module__.startswith("torch"):
        if table.device.type != "cpu":
            raise ValueError("%s: the table must be in host memory (a CPU tensor), not on %s"
                             % (who, table.device))
        if table.dim() != 2 or not table.is_contiguous():
            raise ValueError("%s: the table must be a 2-D contiguous tensor" % who)
        code = _TORCH_DTYPES.get(str(table.dtype))
        if code is None:
            raise ValueError("%s: dtype %s is not supported" % (who, table.dtype))
        return table.data_ptr(), table.shape[0], table.shape[1], code
    iface = getattr(table, "__array_interface__", None)
    if iface is None:
        raise TypeError("%s: the table must be a CPU torch tensor or a numpy array, not %s"
                        % (who, type(table).__name__))
    if len(iface["shape"]) != 2 or not table.flags["C_CONTIGUOUS"]:
        raise ValueError("%s: the table must be a 2-D C-contiguous array" % who)
    code = _NUMPY_DTYPES.get(str(table.dtype))
    if code is None:
        raise ValueError("%s: dtype %s is not supported" % (who, table.dtype))
    return iface["data"][0], table.shape[0], table.shape[1], code


def _torch_dtype_of(code):
    import torch
    return {1: torch.float32, 2: torch.float16, 3: torch.bfloat16, 4: torch.float64,
            5: torch.int8, 6: torch.uint8, 7: torch.int16, 8: torch.int32, 9: torch.int64}[code]


def _int64_array(values, n, who):
    try:
        import numpy as np
    except ImportError:
        vals = list(values)
        if len(vals) != n:
            raise ValueError("%s: hot has %d scores, the table %d rows" % (who, len(vals), n))
        return (ctypes.c_int64 * n)(*vals)
    arr = np.ascontiguousarray(np.asarray(values), dtype=np.int64)
    if arr.shape != (n,):
        raise ValueError("%s: hot has shape %s, expected (%d,)" % (who, arr.shape, n))
    return arr
