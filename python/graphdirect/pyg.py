"""For PyTorch Geometric (and DGL) users: NeighborLoader, a drop-in for PyG's (a script switches
by its import line; examples/pyg_switch), and helpers that turn a graphdirect Block into the
tensors their layers take. torch is imported here only, when a helper is first called.

Blocks are CSC in local ids: destination d's in-neighbours are indices[indptr[d]:indptr[d+1]],
local source ids. PyG's message passing wants edge_index = [2, E] int64 with row 0 = source and
row 1 = destination; for a bipartite layer, call the conv on (x_src, x_dst) with
x_dst = x_src[:num_dst] (the destination nodes are the first source nodes), as PyG's own
GraphSAGE example for sampled blocks does:

    for conv, block in zip(convs, batch.blocks):
        x = conv((x, x[:block.num_dst]), graphdirect.pyg.edge_index(block))
"""

import weakref

_torch = None


def _t():
    global _torch
    if _torch is None:
        import torch
        _torch = torch
    return _torch


def tensor(array):
    """A graphdirect Array as a torch tensor sharing its memory (torch.from_dlpack)."""
    return _t().from_dlpack(array)


def csc(block):
    """(indptr, indices) of a block as int32 torch tensors, without a copy."""
    return tensor(block.indptr), tensor(block.indices)


def edge_index(block):
    """The block as a PyG edge_index: an int64 tensor [2, num_edges] on the block's device,
    row 0 the local source ids (the block's indices), row 1 the local destination ids (each
    destination repeated by its in-degree, from indptr). One int64 output is written directly:
    the int32 indices are widened into row 0 and the destinations expanded into row 1, with
    the edge count given so that the GPU never waits for the host."""
    torch = _t()
    indptr, indices = csc(block)
    e = block.num_edges
    out = torch.empty((2, e), dtype=torch.int64, device=indices.device)
    out[0].copy_(indices)
    counts = (indptr[1:] - indptr[:-1]).to(torch.int64)
    out[1] = torch.repeat_interleave(counts, output_size=e)
    return out


def block_sizes(block):
    """(num_src, num_dst): the bipartite size PyG's `size=` argument and DGL's create_block
    (num_src_nodes, num_dst_nodes) expect."""
    return (block.num_src, block.num_dst)


def batch_tensors(batch):
    """(x, y, edge_indices, sizes) of a batch as torch tensors on its device: the features,
    the seeds' labels (None without labels), one edge_index per layer (input layer first) and
    one (num_src, num_dst) per layer."""
    blocks = batch.blocks
    labels = batch.labels
    return (tensor(batch.features), tensor(labels) if labels is not None else None,
            [edge_index(b) for b in blocks], [block_sizes(b) for b in blocks])


def tensors(batch):
    """Every field of a batch as torch tensors sharing its memory, the fast path for torch users:
    (input_nodes, features, labels or None, [(indptr, indices) for each layer, input layer
    first]). The batch's tensors are exported in one library call ordered after torch's current
    stream, and each capsule goes straight to torch, without the DLPack protocol's per-field
    device and stream queries that torch.from_dlpack(array) makes (about 5 us a field)."""
    t = _t()
    s = batch._s
    if s.ptr is None:
        raise s.error()
    stream = None
    if batch.on_device:
        cur = t.cuda.current_stream(batch.device_index)
        # DLPack's stream code for the legacy default stream is 1, else the cudaStream_t.
        stream = cur.cuda_stream or 1
    imp = t.utils.dlpack.from_dlpack
    labels = batch.labels  # None without labels (checked once per loader)
    ids = imp(s._capsule(0, stream))
    x = imp(s._capsule(1, stream))
    y = imp(s._capsule(2, stream)) if labels is not None else None
    blocks = [(imp(s._capsule(3 + 2 * i, stream)), imp(s._capsule(4 + 2 * i, stream)))
              for i in range(batch.num_layers)]
    return ids, x, y, blocks


# ----------------------------------------------------------------- NeighborLoader

# PyG NeighborLoader arguments that change nothing here (graphdirect's pipeline has no worker
# processes and its batches are already where the model runs).
_PYG_IGNORED = ("num_workers", "persistent_workers", "pin_memory", "prefetch_factor",
                "directed", "filter_per_worker")
# PyG arguments with another meaning than graphdirect's uniform draws without replacement.
_PYG_REFUSED = ("replace", "disjoint", "temporal_strategy", "time_attr", "weight_attr",
                "transform", "transform_sampler_output", "neighbor_sampler", "subgraph_type",
                "is_sorted", "input_time")


class PygBatch:
    """One minibatch as PyG's NeighborLoader gives it (the `Data` fields a training loop reads):
    x [num_nodes, F] the sampled nodes' features, seeds first; edge_index [2, E] int64 in local
    ids (row 0 the neighbour, row 1 the node that aggregates it); y the seeds' labels (length
    batch_size, -1 unlabelled: PyG scripts slice y[:batch_size]); n_id the nodes' global ids;
    batch_size; num_sampled_nodes / num_sampled_edges per hop (for PyG's trim_to_layer). With
    torch_geometric installed, NeighborLoader yields a torch_geometric.data.Data with these
    fields instead."""
    __slots__ = ("x", "edge_index", "y", "n_id", "batch_size", "num_nodes", "num_sampled_nodes",
                 "num_sampled_edges", "input_id")

    def to(self, device, non_blocking=False):
        """Move every tensor to device (nothing moves when they are there already)."""
        for k in ("x", "edge_index", "y", "n_id", "input_id"):
            v = getattr(self, k)
            if v is not None:
                setattr(self, k, v.to(device, non_blocking=non_blocking))
        return self

    def __repr__(self):
        return ("PygBatch(x=%s, edge_index=%s, y=%s, batch_size=%d)"
                % (tuple(self.x.shape), tuple(self.edge_index.shape),
                   None if self.y is None else tuple(self.y.shape), self.batch_size))


def pyg_edges(blocks, cscs=None):
    """The edges of a graphdirect minibatch as PyG's NeighborLoader samples them, and the edge
    count of each hop: every node's neighbours drawn once, at the hop that reached it (PyG's
    semantics), where graphdirect's blocks (DGL's layout) draw every hop's neighbours again for
    the nodes of earlier hops. Hop h's new nodes are the destinations num_dst(h - 1) ..
    num_dst(h) of its block, whose edges are one contiguous slice of that block's CSC.
    blocks: the batch's blocks, input layer first; cscs: their (indptr, indices) as torch
    tensors when the caller has them (tensors(batch)). One host wait per batch (the L slice
    offsets)."""
    torch = _t()
    L = len(blocks)
    hops = blocks[::-1]  # hop 0 (the seeds' block) first
    cscs = (cscs or [csc(b) for b in blocks])[::-1]
    lo = [0] + [b.num_dst for b in hops[:-1]]
    indptrs = [c[0] for c in cscs]
    # The slice ends of every hop in one host copy.
    ends = torch.stack([torch.stack([ip[lo[h]], ip[hops[h].num_dst]])
                        for h, ip in enumerate(indptrs)]).to(torch.int64).cpu().tolist()
    parts, counts = [], []
    for h in range(L):
        b, (e0, e1) = hops[h], ends[h]
        ip = indptrs[h][lo[h]:b.num_dst + 1]
        deg = (ip[1:] - ip[:-1]).to(torch.int64)
        n = e1 - e0
        part = torch.empty((2, n), dtype=torch.int64, device=ip.device)
        part[0].copy_(cscs[h][1][e0:e1])
        dst = torch.arange(lo[h], b.num_dst, dtype=torch.int64, device=ip.device)
        part[1] = torch.repeat_interleave(dst, deg, output_size=n)
        parts.append(part)
        counts.append(n)
    return torch.cat(parts, dim=1), counts


# graphdirect datasets made from PyG Data objects, by id(data): the loaders of one Data (train,
# valid, test) share one dataset, which closes when the Data is garbage.
_from_pyg = {}


def _dataset_of(data):
    from .dataset import Dataset
    key = id(data)
    hit = _from_pyg.get(key)
    if hit is not None and hit[0]() is data:
        return hit[1]
    ds = Dataset.from_pyg(data)
    try:
        ref = weakref.ref(data, lambda _r, k=key: _forget(k))
    except TypeError:  # a Data without weak references: no sharing
        return ds
    _from_pyg[key] = (ref, ds)
    return ds


def _forget(key):
    hit = _from_pyg.pop(key, None)
    if hit is not None:
        hit[1].close()


class NeighborLoader:
    """PyG's `torch_geometric.loader.NeighborLoader` over graphdirect: the same arguments and
    the same batches (x, edge_index, y, n_id, batch_size, ...), sampled and gathered on the GPU.
    A PyG script switches by changing its import:

        from torch_geometric.loader import NeighborLoader   # before
        from graphdirect.pyg import NeighborLoader          # after

    data: a PyG `Data` (edge_index, x, y; converted once with graphdirect.Dataset.from_pyg) or
    a graphdirect.Dataset. num_neighbors: per hop from the seeds outward (-1: all).
    input_nodes: node ids or a boolean mask (None: every node); batch_size, shuffle, drop_last
    as in PyG. Other keywords go to graphdirect.Loader (mode, device, gpu_cache, seed, ...);
    PyG's worker and pinning options are accepted and change nothing; options with another
    sampling meaning (replace, disjoint, temporal ones) are refused.

    The draws are graphdirect's (uniform without replacement, deterministic in seed and
    epoch), not PyG's, so the batches differ from PyG's in which neighbours were drawn, not in
    their form. Each epoch (each `for` over the loader) draws anew."""

    def __init__(self, data, num_neighbors, input_nodes=None, batch_size=1, shuffle=False,
                 drop_last=False, **kwargs):
        from .dataset import Dataset
        from .loader import Loader
        for k in _PYG_REFUSED:
            if kwargs.pop(k, None) not in (None, False):
                raise ValueError("graphdirect.pyg.NeighborLoader: %s= is not supported "
                                 "(graphdirect draws uniformly without replacement)" % k)
        for k in _PYG_IGNORED:
            kwargs.pop(k, None)
        if isinstance(input_nodes, tuple):
            raise ValueError("graphdirect.pyg.NeighborLoader: heterogeneous input_nodes "
                             "(a (type, ids) tuple) are not supported; give node ids or a mask")
        self.dataset = data if isinstance(data, Dataset) else _dataset_of(data)
        if input_nodes is None:
            input_nodes = range(self.dataset.num_nodes)
        self.loader = Loader(self.dataset, fanouts=list(num_neighbors), batch_size=batch_size,
                             shuffle=shuffle, drop_last=drop_last, input_nodes=input_nodes,
                             **kwargs)
        self.batch_size = batch_size
        try:
            from torch_geometric.data import Data
            self._data_cls = Data
        except ImportError:
            self._data_cls = None

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for b in self.loader:
            yield self._convert(b)

    def _convert(self, b):
        ids, x, y, cscs = tensors(b)
        edge_index, counts = pyg_edges(b.blocks, cscs)
        hops = [blk.num_dst for blk in reversed(b.blocks)] + [b.num_input]
        nodes = [hops[0]] + [hops[i + 1] - hops[i] for i in range(len(hops) - 1)]
        fields = dict(x=x, edge_index=edge_index, y=y, n_id=ids, batch_size=b.num_seeds,
                      num_nodes=b.num_input, num_sampled_nodes=nodes, num_sampled_edges=counts)
        if self._data_cls is not None:
            return self._data_cls(**fields)
        out = PygBatch()
        out.input_id = None
        for k, v in fields.items():
            setattr(out, k, v)
        return out

    def close(self):
        """Free the loader (a dataset made from a PyG Data goes with the Data)."""
        self.loader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
