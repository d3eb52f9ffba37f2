"""Helpers for PyTorch Geometric (and DGL) users: a graphdirect Block as the tensors their layers
take. torch is imported here only, when a helper is first called.

Blocks are CSC in local ids: destination d's in-neighbours are indices[indptr[d]:indptr[d+1]],
local source ids. PyG's message passing wants edge_index = [2, E] int64 with row 0 = source and
row 1 = destination; for a bipartite layer, call the conv on (x_src, x_dst) with
x_dst = x_src[:num_dst] (the destination nodes are the first source nodes), as PyG's own
GraphSAGE example for sampled blocks does:

    for conv, block in zip(convs, batch.blocks):
        x = conv((x, x[:block.num_dst]), graphdirect.pyg.edge_index(block))
"""

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
