"""DLPack 0.6 (legacy, unversioned) tensors and the PyCapsules that carry them, in ctypes.

A DLPack consumer (torch.from_dlpack, numpy.from_dlpack, cupy.from_dlpack) calls
`x.__dlpack__(stream=...)` and receives a PyCapsule named "dltensor" holding a
DLManagedTensor *. Taking it, the consumer renames the capsule "used_dltensor" and becomes
responsible for calling the tensor's deleter. A capsule nobody consumed still owns the tensor,
so the capsule's destructor calls the deleter only while the name is still "dltensor".

Two producers live here: capsules around tensors the C library exported (gd_batch_export: the
library's own deleter keeps the batch's memory alive), and tensors built in Python over memory
that a Python object owns (a dataset's mmapped arrays: the deleter drops the reference that kept
the owner alive). The destructor and the deleter are ctypes callbacks held by this module for
its whole life, as the C side may call them at any time. A batch's capsules get their
destructor late, when the batch is released (settle): nearly all are consumed at once, and the
destructor callback would otherwise cost a Python call for each.
"""
import ctypes
import threading

from ctypes import POINTER, c_char_p, c_int, c_int32, c_int64, c_uint8, c_uint16, c_uint64, c_void_p

from . import _lib

KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_HOST = 3


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32),
                ("dtype", DLDataType), ("shape", POINTER(c_int64)),
                ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DELETER)]


# The capsule name must stay valid while the capsule lives: a module-level bytes object.
_NAME = b"dltensor"
_USED_NAME = b"used_dltensor"

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [c_void_p, c_char_p, c_void_p]
_api.PyCapsule_IsValid.restype = c_int
_api.PyCapsule_IsValid.argtypes = [c_void_p, c_char_p]
_api.PyCapsule_GetPointer.restype = c_void_p
_api.PyCapsule_GetPointer.argtypes = [c_void_p, c_char_p]
_api.PyCapsule_GetName.restype = c_char_p
_api.PyCapsule_GetName.argtypes = [c_void_p]
_api.Py_IncRef.restype = None
_api.Py_IncRef.argtypes = [ctypes.py_object]


def _immortal(obj):
    """obj, kept alive to the end of the process. A consumer may free its tensor while the
    interpreter tears the modules down at exit (a numpy array in a class attribute), after this
    module's globals are gone: the callbacks it calls then, and what they read, must still be
    there. So the callbacks are never freed, and they take what they use as default arguments
    (bound when they are defined) instead of reading this module's globals."""
    _api.Py_IncRef(obj)
    return obj


# Every tensor the library exports has the same deleter, so the ctypes function object that
# calls it is made once per address instead of once per deleted tensor.
_DELETER_OFFSET = DLManagedTensor.deleter.offset
_deleters = {}


def delete_managed(ptr, _offset=_DELETER_OFFSET, _deleters=_deleters, _void_p=ctypes.c_void_p,
                   _make=DELETER):
    """Call a DLManagedTensor's deleter (the owner of an unconsumed tensor gives it back)."""
    addr = _void_p.from_address(ptr + _offset).value
    if addr:
        fn = _deleters.get(addr)
        if fn is None:
            fn = _deleters[addr] = _make(addr)
        fn(ptr)


_is_valid = _api.PyCapsule_IsValid
_get_pointer = _api.PyCapsule_GetPointer


# The capsule receives itself as a raw pointer: it is being destroyed, so it must not be made
# into a Python object again (that would resurrect it). A consumed capsule was renamed
# "used_dltensor", so the check below leaves its tensor to the consumer; it runs for every
# capsule, which is why it makes one call into the C API and no more.
def _destroy_capsule(capsule, _is_valid=_is_valid, _get_pointer=_get_pointer, _name=_NAME,
                     _delete=delete_managed):
    if _is_valid(capsule, _name):
        _delete(_get_pointer(capsule, _name))


_capsule_destructor = _immortal(ctypes.CFUNCTYPE(None, c_void_p)(_destroy_capsule))


_DESTRUCTOR_PTR = ctypes.cast(_capsule_destructor, c_void_p).value
_capsule_new = _api.PyCapsule_New


def capsule(managed_ptr):
    """Wrap a DLManagedTensor * in a "dltensor" capsule that owns it until consumed."""
    try:
        return _capsule_new(managed_ptr, _NAME, _DESTRUCTOR_PTR)
    except BaseException:
        delete_managed(managed_ptr)
        raise


# A batch's capsules are made without a destructor and get it late (see settle): the same C
# API calls, taking the capsule as a Python object.
_is_valid_obj = ctypes.PYFUNCTYPE(c_int, ctypes.py_object, c_char_p)(("PyCapsule_IsValid", _api))
_set_destructor = ctypes.PYFUNCTYPE(c_int, ctypes.py_object, c_void_p)(
    ("PyCapsule_SetDestructor", _api))


def settle(caps):
    """Hand the "dltensor" capsules in caps that were made without a destructor, and are still
    unconsumed, their destructor: from now on they own their tensor as capsule() ones do
    (deleted when dropped unconsumed). Consumed capsules (renamed by the consumer, which owns
    the tensor) are left alone.

    The destructor is a Python callback that runs for every capsule, consumed or not, and
    costs as much as making the capsule. A batch's capsules are nearly all consumed at once
    (torch.from_dlpack(batch.features)), so a batch makes them bare, keeps them, and settles
    them when it is released, which is when it stops holding them: until then, even one the
    caller dropped unconsumed is alive in the batch's list."""
    for cap in caps:
        if _is_valid_obj(cap, _NAME):
            _set_destructor(cap, _DESTRUCTOR_PTR)


def capsule_name(cap):
    """The capsule's current name: "dltensor" until consumed, "used_dltensor" after."""
    return _api.PyCapsule_GetName(ctypes.c_void_p(id(cap))).decode()


# --------------------------------------------------------------- tensors built in Python

# DLManagedTensors made here, by address, with what keeps their memory alive. The deleter pops
# the entry; a lock guards the dict because a consumer may free a tensor on another thread.
_live = {}
_live_lock = threading.Lock()


def _drop_live(ptr, _live=_live, _lock=_live_lock):
    with _lock:
        _live.pop(ptr, None)


# The tensors in _live stay with the callback (its default argument) through the module's
# teardown, so a consumer freed after it still finds its DLManagedTensor (see _immortal).
_python_deleter = _immortal(DELETER(_drop_live))


def managed_from_host(data, dtype, shape, owner):
    """A DLManagedTensor * over host memory at `data` (C order) that keeps `owner` alive."""
    name, code, bits = _lib.DTYPES[dtype]
    mt = DLManagedTensor()
    shape_arr = (c_int64 * max(len(shape), 1))(*shape)
    t = mt.dl_tensor
    t.data = data
    t.device.device_type = KDL_CPU
    t.device.device_id = 0
    t.ndim = len(shape)
    t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, 1
    t.shape = ctypes.cast(shape_arr, POINTER(c_int64))
    t.strides = None  # compact row-major
    t.byte_offset = 0
    mt.manager_ctx = None
    mt.deleter = _python_deleter
    ptr = ctypes.addressof(mt)
    with _live_lock:
        _live[ptr] = (mt, shape_arr, owner)
    return ptr


def live_python_tensors():
    """How many tensors built here are still held by a consumer (for tests)."""
    with _live_lock:
        return len(_live)


def stream_pointer(stream, on_device):
    """The cudaStream_t to pass to gd_batch_export for a DLPack `stream` argument.

    DLPack's protocol: None or 1 is the legacy default stream, 2 the per-thread default stream
    (cudaStreamPerThread, the handle 0x2), -1 asks for no synchronisation, and any other integer
    is a cudaStream_t; 0 is ambiguous and refused. Host memory needs no stream.
    """
    if not on_device or stream is None or stream == 1 or stream == -1:
        # -1: the library still orders the legacy default stream after the batch; an extra
        # ordering is harmless and keeps the batch's buffers from being reused too early.
        return None
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise TypeError("__dlpack__: stream must be None or an int (a cudaStream_t), not %r"
                        % (stream,))
    if stream == 0:
        raise ValueError("__dlpack__: stream=0 is ambiguous in the DLPack protocol: pass 1 for "
                         "the legacy default stream or 2 for the per-thread default stream")
    if stream < -1:
        raise ValueError("__dlpack__: stream %d is not a CUDA stream" % stream)
    return stream


class Array:
    """A borrowed n-d array in host or GPU memory that DLPack consumers import without a copy.

    torch.from_dlpack(a), numpy.from_dlpack(a) and cupy.from_dlpack(a) each receive a fresh
    DLPack tensor sharing the memory, and the memory stays valid for as long as what they
    return lives, whatever happens to the batch or loader (or dataset) afterwards. The Array
    itself is only a handle: exporting it after its batch was released fails with ValueError.

    Attributes: shape (tuple), dtype ("float32", "int64", "int32", ...), device ("cpu" or
    "cuda:N", the spelling torch accepts), data_ptr (the address, for zero-copy checks).
    """
    __slots__ = ("shape", "dtype", "_data_ptr", "_dl_device", "_owner", "_slot")

    def __init__(self, shape, dtype, data_ptr, dl_device, owner, slot=0):
        # An Array is made for every field of every minibatch, so it takes what it needs
        # ready-made: dtype is the name, data_ptr may be None (asked of the owner when read).
        # The owner exports the memory: owner._capsule(slot, stream) returns a "dltensor"
        # capsule around a new DLManagedTensor for a DLPack `stream` argument, or raises
        # ValueError once the memory can no longer be exported; owner._data_ptr(slot) gives
        # the address. A batch's
        # arrays are owned by the batch's state, not the batch, so that holding an Array does
        # not keep its batch (and the buffers) from being released when the batch is dropped.
        self.shape = shape
        self.dtype = dtype
        self._data_ptr = data_ptr
        self._dl_device = dl_device
        self._owner = owner
        self._slot = slot

    @property
    def data_ptr(self):
        p = self._data_ptr
        if p is None:
            p = self._data_ptr = self._owner._data_ptr(self._slot) or 0
        return p

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def device(self):
        kind, index = self._dl_device
        return "cuda:%d" % index if kind == KDL_CUDA else "cpu"

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return "graphdirect.Array(shape=%s, dtype=%s, device=%s)" % (self.shape, self.dtype,
                                                                      self.device)

    def __dlpack_device__(self):
        return self._dl_device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A "dltensor" capsule (DLPack 0.6) sharing this array's memory.

        stream: see stream_pointer. max_version is accepted and answered with the legacy
        capsule, which every version of the protocol allows. dl_device other than the array's
        own, and copy=True, are refused with BufferError: graphdirect never copies.
        """
        if dl_device is not None and tuple(dl_device) != self._dl_device:
            raise BufferError("graphdirect arrays are exported where they live (%s), not on %r: "
                              "import them there and copy with the consumer"
                              % (self.device, tuple(dl_device)))
        if copy:
            raise BufferError("graphdirect arrays are exported without a copy: import them and "
                              "copy with the consumer")
        return self._owner._capsule(self._slot, stream)


class _HostOwner:
    """The owner of a host array: exports build a tensor that keeps `keep` alive."""
    __slots__ = ("data_ptr", "dtype_code", "shape", "keep")

    def __init__(self, data_ptr, dtype_code, shape, keep):
        self.data_ptr, self.dtype_code, self.shape, self.keep = data_ptr, dtype_code, shape, keep

    def _data_ptr(self, _slot):
        return self.data_ptr

    def _capsule(self, _slot, _stream):
        return capsule(managed_from_host(self.data_ptr, self.dtype_code, self.shape, self.keep))


def host_array(data_ptr, dtype_code, shape, keep):
    """An Array over host memory that `keep` keeps alive (each export holds `keep`)."""
    shape = tuple(shape)
    return Array(shape, _lib.DTYPES[dtype_code][0], data_ptr or 0, (KDL_CPU, 0),
                 _HostOwner(data_ptr, dtype_code, shape, keep))
