"""Loading libgraphdirect.so and declaring the C API to ctypes.

This module is the one place that knows the C ABI: it finds and loads the shared library, mirrors
every struct of include/graphdirect.h that the binding passes across (field by field, in the
header's order, with the leading `size` field of the growable options and info structs), gives
each function its argument and result types, and turns a failing gd_status into a
GraphdirectError carrying gd_last_error()'s text. Nothing here imports anything beyond the
standard library.

The library is searched, in order, at $GRAPHDIRECT_LIB, next to this package (where `pip
install .` and a wheel put it), where `make install` put it (recorded in _installed.py), and on
the system (ctypes.util.find_library, then the soname libgraphdirect.so.0 through the dynamic
loader's own search path).
"""
import ctypes
import ctypes.util
import os
import re
import sys

from ctypes import (POINTER, byref, c_char, c_char_p, c_double, c_int, c_int32, c_int64,
                    c_size_t, c_uint, c_uint64, c_void_p)

# The major version this binding is written against: the C ABI may change between majors.
ABI_MAJOR = 0

# ------------------------------------------------------------------------------------- status

# The status codes by name and their names by code: filled from gd_status_name once the library
# is loaded (below), so that the header's X-macro stays their one statement.
STATUS = {}
STATUS_NAMES = {}


INT_MIN, INT_MAX = -2**31, 2**31 - 1
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1


def int_arg(value, who, name, lo, hi):
    """value, checked to be an int in [lo, hi] (its C type's range: the library checks what the
    value means) before ctypes would silently wrap it."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError("%s: %s must be an integer from %d to %d, not %r"
                         % (who, name, lo, hi, value))
    return value


def device_arg(device, who):
    """The GPU ordinal of `device`: an int, "cuda", "cuda:N" or a torch.device("cuda", N), as
    PyTorch code names devices. "cuda" without an index is torch's current device when torch is
    loaded (else 0). The CPU is a mode, not a device: mode="cpu"."""
    kind = getattr(device, "type", None)
    if kind is not None and not isinstance(device, (str, int)):  # a torch.device
        index = device.index
        text = str(device)
    elif isinstance(device, str):
        m = re.match(r"^\s*(cuda|cpu)(?::(\d+))?\s*$", device)
        if not m:
            raise ValueError("%s: device %r is not a GPU: give an ordinal (0), \"cuda\" or "
                             "\"cuda:N\", or a torch.device" % (who, device))
        kind, index, text = m.group(1), m.group(2), device
        index = int(index) if index is not None else None
    else:
        return int_arg(device, who, "device", INT_MIN, INT_MAX)
    if kind != "cuda":
        raise ValueError("%s: device %r is not a GPU; to run on the CPU, pass mode=\"cpu\""
                         % (who, text))
    if index is None:
        torch = sys.modules.get("torch")
        index = torch.cuda.current_device() if torch is not None and torch.cuda.is_available() \
            else 0
    return int_arg(index, who, "device", 0, INT_MAX)


def rank_args(rank, world_size, who):
    """(rank, world_size), checked: world_size processes train together and rank is this
    one's place among them."""
    if isinstance(world_size, bool) or not isinstance(world_size, int) or \
            not 1 <= world_size <= INT_MAX:
        raise ValueError("%s: world_size must be an integer >= 1 (the processes training "
                         "together), not %r" % (who, world_size))
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < world_size:
        raise ValueError("%s: rank must be an integer in [0, world_size) = [0, %d), not %r"
                         % (who, world_size, rank))
    return rank, world_size


class Closing:
    """`with` support and closing on collection for the classes that own a library handle (their
    close() frees it and may be called twice)."""
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class GraphdirectError(RuntimeError):
    """A gd_* call failed: `status` is its gd_status code, `message` gd_last_error()'s text."""

    def __init__(self, status, message):
        self.status = int(status)
        self.status_name = STATUS_NAMES.get(self.status, "GD_ERR_%d" % self.status)
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message))


# ---------------------------------------------------------------------------------- dtypes

# gd_dtype values and their names (gd_dtype_name), and how DLPack spells them (code, bits):
# kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6.
DTYPES = {
    1: ("float32", 2, 32), 2: ("float16", 2, 16), 3: ("bfloat16", 4, 16), 4: ("float64", 2, 64),
    5: ("int8", 0, 8), 6: ("uint8", 1, 8), 7: ("int16", 0, 16), 8: ("int32", 0, 32),
    9: ("int64", 0, 64), 10: ("bool", 6, 8),
}

# gd_array_id: the arrays of a dataset directory.
ARRAY_IDS = {"indptr": 0, "indices": 1, "features": 2, "labels": 3, "train_idx": 4,
             "valid_idx": 5, "test_idx": 6}
SPLITS = {"train": 4, "valid": 5, "test": 6}

# gd_batch_field.
FIELD_INPUT_NODES, FIELD_FEATURES, FIELD_LABELS, FIELD_INDPTR, FIELD_INDICES = range(5)

GD_SAMPLER_MAX_LAYERS = 8

# The bytes of a communicator id (gd_comm_id_create), the same on every rank of a run.
GD_COMM_ID_BYTES = 128

# ----------------------------------------------------------------------------------- structs


class _Sized(ctypes.Structure):
    """A struct whose first field is `size`; new() fills it with the library's defaults.

    The defaults come from the struct's gd_<name>_init function (`_init_`), which writes what
    the *_INIT macro of the header says. It writes into a scratch buffer as large as any of
    these structs may grow, and the first sizeof(cls) bytes are kept with `size` set to this
    mirror's size, as a C caller built against this header would send them.
    """
    _init_ = None

    @classmethod
    def new(cls):
        need(cls._init_)
        scratch = ctypes.create_string_buffer(max(4096, 4 * ctypes.sizeof(cls)))
        getattr(lib, cls._init_)(scratch)
        s = cls.from_buffer_copy(scratch.raw[:ctypes.sizeof(cls)])
        s.size = ctypes.sizeof(cls)
        return s


class ArrayView(ctypes.Structure):  # gd_array_view
    _fields_ = [("dtype", c_int), ("ndim", c_int), ("shape", c_int64 * 2), ("data", c_void_p)]


class NodeTypeInfo(_Sized):  # gd_node_type_info, GD_NODE_TYPE_INFO_INIT
    _fields_ = [("size", c_size_t), ("name", c_char_p), ("offset", c_int64), ("count", c_int64),
                ("feature_dim", c_int64), ("feature_dtype", c_int)]
    _init_ = "gd_node_type_info_init"


class EdgeTypeInfo(_Sized):  # gd_edge_type_info, GD_EDGE_TYPE_INFO_INIT
    _fields_ = [("size", c_size_t), ("name", c_char_p), ("src_type", c_int),
                ("dst_type", c_int)]
    _init_ = "gd_edge_type_info_init"


class DatasetOpenOptions(_Sized):  # gd_dataset_open_options, GD_DATASET_OPEN_OPTIONS_INIT
    _fields_ = [("size", c_size_t), ("mode", c_int), ("validate_graph", c_int)]
    _init_ = "gd_dataset_open_options_init"


class DatasetArrays(_Sized):  # gd_dataset_arrays, GD_DATASET_ARRAYS_INIT
    _fields_ = [("size", c_size_t), ("name", c_char_p), ("num_nodes", c_int64),
                ("indptr", c_void_p), ("indices", c_void_p), ("indices_dtype", c_int),
                ("src", c_void_p), ("dst", c_void_p), ("num_edges", c_int64),
                ("symmetrize", c_int), ("features", c_void_p), ("feature_dtype", c_int),
                ("feature_dim", c_int64), ("labels", c_void_p), ("num_classes", c_int64),
                ("train_idx", c_void_p), ("valid_idx", c_void_p), ("test_idx", c_void_p),
                ("num_train", c_int64), ("num_valid", c_int64), ("num_test", c_int64),
                ("borrow", c_int), ("validate", c_int)]
    _init_ = "gd_dataset_arrays_init"


class GathererOptions(_Sized):  # gd_gatherer_options, GD_GATHERER_OPTIONS_INIT
    _fields_ = [("size", c_size_t), ("max_ids", c_int64), ("sort_ids", c_int),
                ("sm_budget", c_char_p), ("threads", c_int), ("cache_bytes", c_int64),
                ("cache_scores", c_void_p), ("sm_grid_cap_only", c_int),
                ("host_gather", c_int)]
    _init_ = "gd_gatherer_options_init"


class GenerateOptions(_Sized):  # gd_generate_options, GD_GENERATE_OPTIONS_INIT
    _fields_ = [("size", c_size_t), ("preset", c_char_p), ("seed", c_uint64),
                ("num_nodes", c_int64), ("avg_degree", c_double), ("feature_dim", c_int64),
                ("num_classes", c_int64), ("feature_dtype", c_int), ("out_dir", c_char_p),
                ("overwrite", c_int), ("threads", c_int), ("progress", c_void_p),
                ("progress_user", c_void_p)]
    _init_ = "gd_generate_options_init"


class StripeOptions(_Sized):  # gd_stripe_options, GD_STRIPE_OPTIONS_INIT
    _fields_ = [("size", c_size_t), ("unit_bytes", c_int64), ("progress", c_void_p),
                ("progress_user", c_void_p)]
    _init_ = "gd_stripe_options_init"


class ContextOptions(_Sized):  # gd_context_options, GD_CONTEXT_OPTIONS_INIT
    _fields_ = [("size", c_size_t), ("device", c_int), ("rank", c_int), ("world_size", c_int),
                ("comm_id", c_void_p), ("comm_timeout_s", ctypes.c_double),
                ("abort_flag", c_void_p)]
    _init_ = "gd_context_options_init"


class ContextInfo(_Sized):  # gd_context_info, GD_CONTEXT_INFO_INIT
    _fields_ = [("size", c_size_t), ("device", c_int), ("is_default", c_int),
                ("pinned_ranges", c_int64), ("pinned_bytes", c_int64), ("pinned_users", c_int64),
                ("rank", c_int), ("world_size", c_int)]
    _init_ = "gd_context_info_init"


class LoaderOptions(_Sized):  # gd_loader_options, GD_LOADER_OPTIONS_INIT
    _fields_ = [("size", c_size_t), ("mode", c_char_p), ("num_layers", c_int),
                ("fanouts", c_int * GD_SAMPLER_MAX_LAYERS), ("batch_size", c_int64),
                ("split", c_int), ("shuffle", c_int), ("drop_last", c_int), ("seed", c_uint64),
                ("device", c_int), ("threads", c_int), ("depth", c_int),
                ("gpu_cache_bytes", c_int64), ("graph_cache_bytes", c_int64),
                ("gpu_mem_budget", c_int64), ("gather_sms", c_char_p), ("context", c_void_p),
                ("rank", c_int), ("world_size", c_int), ("host_mem_budget", c_int64),
                ("seeds", c_void_p), ("num_seeds", c_int64), ("max_held_bytes", c_int64),
                ("host_gather", c_char_p)]
    _init_ = "gd_loader_options_init"


class LoaderInfo(_Sized):  # gd_loader_info, GD_LOADER_INFO_INIT
    _fields_ = [("size", c_size_t), ("mode", c_char_p), ("on_device", c_int), ("device", c_int),
                ("num_seeds", c_int64), ("batches_per_epoch", c_int64),
                ("feature_dim", c_int64), ("max_input_nodes", c_int64), ("plan", c_char * 512),
                ("set_bytes", c_int64), ("max_held_bytes", c_int64), ("sets_outside", c_int64)]
    _init_ = "gd_loader_info_init"


class BatchInfo(_Sized):  # gd_batch_info, GD_BATCH_INFO_INIT
    _fields_ = [("size", c_size_t), ("index", c_int64), ("num_seeds", c_int64),
                ("num_input", c_int64), ("num_layers", c_int), ("on_device", c_int),
                ("device", c_int)]
    _init_ = "gd_batch_info_init"


class Block(ctypes.Structure):  # gd_block (the int32 pointers read as addresses)
    _fields_ = [("num_dst", c_int64), ("num_src", c_int64), ("num_edges", c_int64),
                ("indptr", c_void_p), ("indices", c_void_p)]


class TrainOptions(_Sized):  # gd_train_options, GD_TRAIN_OPTIONS_INIT
    _fields_ = [("size", c_size_t), ("mode", c_char_p), ("model", c_char_p),
                ("num_layers", c_int), ("fanouts", c_int * GD_SAMPLER_MAX_LAYERS),
                ("batch_size", c_int64), ("hidden", c_int64), ("dropout", c_double),
                ("lr", c_double), ("weight_decay", c_double), ("seed", c_uint64),
                ("threads", c_int), ("device", c_int), ("context", c_void_p),
                ("gpu_cache_bytes", c_int64), ("graph_cache_bytes", c_int64),
                ("gpu_mem_budget", c_int64), ("gather_sms", c_char_p), ("depth", c_int),
                ("mlp", c_int), ("host_mem_budget", c_int64), ("placement", c_char_p),
                ("locality", c_int), ("heads", c_int), ("attn_dropout", c_double),
                ("relation_fanouts", c_char_p), ("host_gather", c_char_p),
                ("startup_progress", c_void_p), ("startup_progress_user", c_void_p)]
    _init_ = "gd_train_options_init"


class ModelInfo(_Sized):  # gd_model_info, GD_MODEL_INFO_INIT
    _fields_ = [("size", c_size_t), ("name", c_char_p), ("label", c_char_p),
                ("title", c_char_p), ("description", c_char_p), ("exact_inference", c_int)]
    _init_ = "gd_model_info_init"


class TrainerInfo(_Sized):  # gd_trainer_info, GD_TRAINER_INFO_INIT
    _fields_ = [("size", c_size_t), ("mode", c_char_p), ("plan", c_char * 512),
                ("model", c_char_p), ("mlp", c_int), ("on_device", c_int), ("device", c_int),
                ("num_params", c_int64), ("max_input_nodes", c_int64), ("max_edges", c_int64),
                ("feature_bytes", c_int64), ("train_nodes", c_int64), ("valid_nodes", c_int64),
                ("test_nodes", c_int64), ("gpu_bytes", c_int64),
                ("feature_cache_rows", c_int64), ("feature_cache_bytes", c_int64),
                ("graph_cache_bytes", c_int64), ("epochs_done", c_int64),
                ("adam_step", c_int64), ("best_valid", c_double), ("best_epoch", c_int64),
                ("startup", c_char * 256)]
    _init_ = "gd_trainer_info_init"


class EpochStats(_Sized):  # gd_epoch_stats (filled by the library for on_epoch)
    _fields_ = [("size", c_size_t), ("epoch", c_int64), ("batches", c_int64),
                ("loss", c_double), ("train_acc", c_double), ("valid_acc", c_double),
                ("seconds", c_double), ("sample_s", c_double), ("gather_s", c_double),
                ("train_s", c_double), ("wait_s", c_double), ("cpu_core_s", c_double),
                ("gpu_mem_bytes", c_int64), ("improved", c_int), ("best_valid", c_double),
                ("best_epoch", c_int64), ("allreduce_s", c_double),
                ("disk_rows_read", c_int64), ("disk_bytes_read", c_int64),
                ("host_rows_copied", c_int64), ("host_bytes_copied", c_int64)]


# gd_epoch_fn and gd_train_progress_fn.
EPOCH_FN = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(EpochStats))
PROGRESS_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_int64, c_int64, c_int64, c_double)


class FitOptions(_Sized):  # gd_fit_options, GD_FIT_OPTIONS_INIT
    _fields_ = [("size", c_size_t), ("epochs", c_int64), ("validate", c_int),
                ("keep_best", c_int), ("test", c_int), ("exact_test", c_int),
                ("checkpoint_dir", c_char_p), ("checkpoint_every", c_int), ("resume", c_int),
                ("max_batches", c_int64), ("on_epoch", EPOCH_FN), ("on_epoch_user", c_void_p),
                ("progress", PROGRESS_FN), ("progress_user", c_void_p),
                ("report_every", c_int64), ("overwrite", c_int)]
    _init_ = "gd_fit_options_init"


class FitResult(_Sized):  # gd_fit_result, GD_FIT_RESULT_INIT
    _fields_ = [("size", c_size_t), ("start_epoch", c_int64), ("epochs_done", c_int64),
                ("best_epoch", c_int64), ("best_valid", c_double), ("mean_epoch_s", c_double),
                ("test_acc", c_double), ("test_count", c_int64), ("test_exact", c_double),
                ("exact_seconds", c_double), ("stopped", c_int)]
    _init_ = "gd_fit_result_init"


class CheckpointInfo(_Sized):  # gd_checkpoint_info, GD_CHECKPOINT_INFO_INIT
    _fields_ = [("size", c_size_t), ("model", c_char * 32), ("num_layers", c_int),
                ("in_dim", c_int64), ("hidden", c_int64), ("num_classes", c_int64),
                ("fanouts", c_int * GD_SAMPLER_MAX_LAYERS), ("seed", c_uint64),
                ("epochs_done", c_int64), ("adam_step", c_int64), ("best_valid", c_double),
                ("best_epoch", c_int64), ("has_state", c_int), ("dataset", c_char * 256),
                ("config", c_char * 1024), ("heads", c_int)]
    _init_ = "gd_checkpoint_info_init"


# The structs with a size field and the *_INIT macro that fills it, for messages and tests.
SIZED_STRUCTS = {
    "gd_dataset_open_options": (DatasetOpenOptions, "GD_DATASET_OPEN_OPTIONS_INIT"),
    "gd_generate_options": (GenerateOptions, "GD_GENERATE_OPTIONS_INIT"),
    "gd_stripe_options": (StripeOptions, "GD_STRIPE_OPTIONS_INIT"),
    "gd_context_options": (ContextOptions, "GD_CONTEXT_OPTIONS_INIT"),
    "gd_context_info": (ContextInfo, "GD_CONTEXT_INFO_INIT"),
    "gd_loader_options": (LoaderOptions, "GD_LOADER_OPTIONS_INIT"),
    "gd_loader_info": (LoaderInfo, "GD_LOADER_INFO_INIT"),
    "gd_batch_info": (BatchInfo, "GD_BATCH_INFO_INIT"),
    "gd_train_options": (TrainOptions, "GD_TRAIN_OPTIONS_INIT"),
    "gd_model_info": (ModelInfo, "GD_MODEL_INFO_INIT"),
    "gd_trainer_info": (TrainerInfo, "GD_TRAINER_INFO_INIT"),
    "gd_fit_options": (FitOptions, "GD_FIT_OPTIONS_INIT"),
    "gd_fit_result": (FitResult, "GD_FIT_RESULT_INIT"),
    "gd_checkpoint_info": (CheckpointInfo, "GD_CHECKPOINT_INFO_INIT"),
    "gd_node_type_info": (NodeTypeInfo, "GD_NODE_TYPE_INFO_INIT"),
    "gd_edge_type_info": (EdgeTypeInfo, "GD_EDGE_TYPE_INFO_INIT"),
}

# --------------------------------------------------------------------------------- loading


def _installed(name):
    """What `make install` recorded in _installed.py (NAME: LIBRARY or CLI), or None."""
    try:
        from . import _installed as rec
    except ImportError:
        return None
    return getattr(rec, name, None)


def _candidates():
    """(path, where) pairs to try, in order."""
    out = []
    env = os.environ.get("GRAPHDIRECT_LIB")
    if env:
        out.append((env, "$GRAPHDIRECT_LIB"))
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libgraphdirect.so.0", "libgraphdirect.so"):
        path = os.path.join(here, name)
        if os.path.exists(path):
            out.append((path, "next to the package"))
    installed = _installed("LIBRARY")
    if installed:
        out.append((installed, "where `make install` put it"))
    found = ctypes.util.find_library("graphdirect")
    if found:
        out.append((found, "ctypes.util.find_library"))
    out.append(("libgraphdirect.so.0", "the dynamic loader's search path"))
    return out


def _preload_torch_nccl():
    """Load the NCCL that PyTorch ships (the `nvidia-nccl` wheel) before libgraphdirect, when
    there is one. libgraphdirect needs libnccl.so.2, and the dynamic linker gives every later
    library that needs that soname the one loaded first: loaded first from the CUDA toolkit, an
    older NCCL than PyTorch's made `import graphdirect; import torch` fail in torch
    ("undefined symbol: ncclCommResume"). PyTorch's NCCL serves both (graphdirect uses NCCL's
    stable API). GRAPHDIRECT_NCCL_PRELOAD=0 turns this off. Returns the path loaded, or None."""
    if os.environ.get("GRAPHDIRECT_NCCL_PRELOAD", "1") == "0":
        return None
    try:
        import importlib.util
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(root, "nccl", "lib", "libnccl.so.2")
        if os.path.exists(path):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                return path
            except OSError:
                return None
    return None


def _load():
    # OpenMP reads its wait policy when the library loads it: passive, so that the library's
    # idle CPU threads sleep instead of spinning (spinning made cpu-mode loading 20-50x slower
    # on a busy 2-core machine, where the spinners took the cores the work needed). A value the
    # user set wins; an OpenMP runtime loaded earlier by another module keeps its own.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    _preload_torch_nccl()
    tried = []
    for path, where in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("  %s (%s): %s" % (path, where, e))
            if where == "$GRAPHDIRECT_LIB":
                break  # an explicit choice that fails is not silently replaced by another
            continue
        try:
            major = lib.gd_version_hex() >> 16
        except AttributeError:
            tried.append("  %s (%s): not libgraphdirect (no gd_version_hex)" % (path, where))
            continue
        if major != ABI_MAJOR:
            tried.append("  %s (%s): version major %d, this binding needs %d"
                         % (path, where, major, ABI_MAJOR))
            continue
        return lib, path
    raise ImportError(
        "graphdirect: cannot load libgraphdirect.so. Tried:\n" + "\n".join(tried) +
        "\nInstall the package with `pip install .` from the source tree (it builds and bundles "
        "the library), or `make install`; or build it (cmake -S . -B build && cmake --build "
        "build) and set GRAPHDIRECT_LIB to build/libgraphdirect.so.0.")


lib, path = _load()

# ------------------------------------------------------------------------------ signatures

_vp = c_void_p
_SIGNATURES = {
    # name: (restype, argtypes)
    "gd_version": (c_char_p, []),
    "gd_version_hex": (c_uint, []),
    "gd_status_string": (c_char_p, [c_int]),
    "gd_status_name": (c_char_p, [c_int]),
    "gd_last_error": (c_char_p, []),
    "gd_clear_error": (None, []),
    "gd_has_cuda": (c_int, []),
    "gd_device_count": (c_int, []),
    "gd_alloc_stats": (None, [POINTER(c_int64), POINTER(c_int64)]),
    "gd_dtype_name": (c_char_p, [c_int]),
    "gd_dataset_open": (c_int, [c_char_p, POINTER(DatasetOpenOptions), POINTER(_vp)]),
    "gd_dataset_from_arrays": (c_int, [POINTER(DatasetArrays), POINTER(_vp)]),
    "gd_dataset_close": (None, [_vp]),
    "gd_dataset_save": (c_int, [_vp, c_char_p, c_int]),
    "gd_dataset_name": (c_char_p, [_vp]),
    "gd_dataset_num_nodes": (c_int64, [_vp]),
    "gd_dataset_num_edges": (c_int64, [_vp]),
    "gd_dataset_feature_dim": (c_int64, [_vp]),
    "gd_dataset_num_classes": (c_int64, [_vp]),
    "gd_dataset_array": (c_int, [_vp, c_int, POINTER(ArrayView)]),
    "gd_dataset_num_node_types": (c_int, [_vp]),
    "gd_dataset_num_edge_types": (c_int, [_vp]),
    "gd_dataset_target_type": (c_int, [_vp]),
    "gd_dataset_node_type": (c_int, [_vp, c_int, POINTER(NodeTypeInfo)]),
    "gd_dataset_edge_type": (c_int, [_vp, c_int, POINTER(EdgeTypeInfo)]),
    "gd_dataset_type_features": (c_int, [_vp, c_int, POINTER(ArrayView)]),
    "gd_generate": (c_int, [POINTER(GenerateOptions), POINTER(_vp)]),
    "gd_dataset_stripe": (c_int, [c_char_p, POINTER(c_char_p), c_int, POINTER(StripeOptions)]),
    "gd_dataset_feature_files": (c_int, [_vp, POINTER(c_char_p), c_int, POINTER(c_int64)]),
    "gd_loader_create": (c_int, [_vp, POINTER(LoaderOptions), POINTER(_vp)]),
    "gd_loader_destroy": (None, [_vp]),
    "gd_loader_get_info": (c_int, [_vp, POINTER(LoaderInfo)]),
    "gd_loader_start_epoch": (c_int, [_vp, c_int64]),
    "gd_loader_next": (c_int, [_vp, POINTER(_vp)]),
    "gd_batch_release": (None, [_vp]),
    "gd_batch_get_info": (c_int, [_vp, POINTER(BatchInfo)]),
    "gd_batch_block": (c_int, [_vp, c_int, POINTER(Block)]),
    "gd_batch_array": (c_int, [_vp, c_int, c_int, POINTER(ArrayView)]),
    "gd_batch_export": (c_int, [_vp, c_int, c_int, _vp, POINTER(_vp)]),
    "gd_batch_export_all": (c_int, [_vp, _vp, POINTER(_vp), c_int]),
    "gd_train_mode_check": (c_int, [c_char_p]),
    "gd_model_get_info": (c_int, [c_char_p, POINTER(ModelInfo)]),
    "gd_context_create": (c_int, [POINTER(ContextOptions), POINTER(_vp)]),
    "gd_context_default": (c_int, [c_int, POINTER(_vp)]),
    "gd_host_tensor_adopt": (c_int, [_vp, c_int64, c_int64, c_int, c_uint, POINTER(_vp)]),
    "gd_host_tensor_register": (c_int, [_vp, _vp]),
    "gd_host_tensor_destroy": (None, [_vp]),
    "gd_gatherer_create": (c_int, [_vp, _vp, c_int, POINTER(GathererOptions), POINTER(_vp)]),
    "gd_gatherer_destroy": (None, [_vp]),
    "gd_gather": (c_int, [_vp, _vp, c_int64, c_int, _vp, _vp]),
    "gd_gatherer_check_errors": (c_int, [_vp]),
    "gd_context_destroy": (None, [_vp]),
    "gd_context_get_info": (c_int, [_vp, POINTER(ContextInfo)]),
    "gd_context_abort": (None, [_vp, c_char_p]),
    "gd_context_share_registry": (c_int, [_vp, _vp]),
    "gd_comm_available": (c_int, []),
    "gd_comm_id_create": (c_int, [POINTER(ctypes.c_ubyte * GD_COMM_ID_BYTES)]),
    "gd_trainer_create": (c_int, [_vp, POINTER(TrainOptions), POINTER(_vp)]),
    "gd_trainer_destroy": (None, [_vp]),
    "gd_trainer_get_info": (c_int, [_vp, POINTER(TrainerInfo)]),
    "gd_trainer_fit": (c_int, [_vp, POINTER(FitOptions), POINTER(FitResult)]),
    "gd_trainer_resume": (c_int, [_vp, c_char_p]),
    "gd_trainer_evaluate": (c_int, [_vp, c_int, c_int, POINTER(c_double), POINTER(c_int64)]),
    "gd_trainer_save": (c_int, [_vp, c_char_p]),
    "gd_trainer_load": (c_int, [_vp, c_char_p]),
    "gd_checkpoint_read_info": (c_int, [c_char_p, POINTER(CheckpointInfo)]),
}
for _cls, _macro in SIZED_STRUCTS.values():
    _SIGNATURES[_cls._init_] = (None, [c_void_p])

missing = []
for _name, (_res, _args) in _SIGNATURES.items():
    try:
        _fn = getattr(lib, _name)
    except AttributeError:
        missing.append(_name)
        continue
    _fn.restype = _res
    _fn.argtypes = _args


def _older(name):
    return "%s is not in %s (an older libgraphdirect): rebuild it from this source tree" % (
        name, path)


def need(name):
    """Fail clearly when the loaded library predates a function the binding calls."""
    if name in missing:
        raise GraphdirectError(STATUS["GD_ERR_UNSUPPORTED"], _older(name))


# The codes run from 0 without gaps (the X-macro's values); the first value without a name
# ends them.
if "gd_status_name" in missing:
    raise ImportError("graphdirect: " + _older("gd_status_name"))
for _code in range(256):
    _name = lib.gd_status_name(_code)
    if _name is None:
        break
    STATUS[_name.decode()] = _code
    STATUS_NAMES[_code] = _name.decode()
GD_OK = STATUS["GD_OK"]
GD_ERR_INVALID_ARG = STATUS["GD_ERR_INVALID_ARG"]
GD_ERR_NOT_FOUND = STATUS["GD_ERR_NOT_FOUND"]
GD_ERR_INTERRUPTED = STATUS["GD_ERR_INTERRUPTED"]


def last_error():
    return (lib.gd_last_error() or b"").decode("utf-8", "replace")


def check(status):
    """Raise GraphdirectError for a failing gd_status, with the thread's gd_last_error()."""
    if status != GD_OK:
        msg = last_error() or lib.gd_status_string(status).decode()
        raise GraphdirectError(status, msg)


def text(value):
    """A str argument as the bytes a const char * takes (None stays NULL)."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


__all__ = ["lib", "path", "check", "need", "GraphdirectError", "byref"]
