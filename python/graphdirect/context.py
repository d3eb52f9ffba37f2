"""graphdirect.Context: the GPU that loaders and trainers use and what they share on it.

A feature table read zero-copy is page-locked once per context and shared by the context's
loaders and trainers (a training loader beside a validation one). Objects made without one use
the device's default context, which Context.default(device) also gives. The C context lives
while any object made on it does, so closing a Context before its loaders is allowed.

    ctx = graphdirect.Context(device=0)
    train = graphdirect.Loader(ds, mode="zero-copy", context=ctx)
    valid = graphdirect.Loader(ds, mode="zero-copy", split="valid", context=ctx)
    ctx.info()  # {"device": 0, "is_default": False, "pinned_ranges": 3, ...}
"""
import ctypes

from . import _lib
from ._lib import check, lib


class Context(_lib.Closing):
    """Context(device=0): a context on GPU `device` (usable without a GPU, in cpu mode)."""

    def __init__(self, device=0, _default=False):
        self._ptr = None
        if isinstance(device, bool) or not isinstance(device, int):
            raise TypeError("graphdirect.Context: device must be an integer, not %r" % (device,))
        out = ctypes.c_void_p()
        if _default:
            _lib.need("gd_context_default")
            check(lib.gd_context_default(device, ctypes.byref(out)))
        else:
            _lib.need("gd_context_create")
            o = _lib.ContextOptions.new()
            o.device = device
            check(lib.gd_context_create(ctypes.byref(o), ctypes.byref(out)))
        self._ptr = out.value
        self.device = device

    @classmethod
    def default(cls, device=0):
        """The default context of GPU `device`: what objects made without a context use."""
        return cls(device, _default=True)

    def info(self):
        """What the context holds: its device, whether it is the default one, and the host
        memory its registry keeps registered (ranges, bytes, and the registrations sharing
        them)."""
        _lib.need("gd_context_get_info")
        i = _lib.ContextInfo.new()
        check(lib.gd_context_get_info(self._handle(), ctypes.byref(i)))
        return dict(device=i.device, is_default=bool(i.is_default),
                    pinned_ranges=i.pinned_ranges, pinned_bytes=i.pinned_bytes,
                    pinned_users=i.pinned_users)

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
        return "graphdirect.Context(device=%d%s)" % (self.device,
                                                      ", closed" if self._ptr is None else "")
