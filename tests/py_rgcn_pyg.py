#!/usr/bin/env python3
"""R-GCN (src/nn/rsage.c with root_per_type) against PyG's RGCNConv.

Usage: py_rgcn_pyg.py PATH/TO/test_rsage

test_rsage --rgcn, run with GD_RSAGE_DUMP=file, writes one float64 case as JSON (the schema, a
2-layer typed minibatch, the inputs, every relation's W_l, every (layer, type)'s W_root and b,
and the evaluation-mode logits). Our model has a root weight and a bias per node type, and each
type its own input width; PyG's RGCNConv has one root and one bias and one width for all nodes.
So each layer runs as one RGCNConv(aggr="mean") on the minibatch made homogeneous, with PyG's
code doing every aggregation and product:

  - a node's input row is its type's row padded with zeros to the widest type, then a one-hot
    column of its type (T columns);
  - relation r's edges keep their relation (edge type r), its weight W_l[r] in the rows of the
    source's width and zeros elsewhere;
  - the per-type roots become T more relations, one self loop per node of type t (edge type
    R + t, whose mean over that one neighbour is the node itself) with W_root[t] as weight;
  - the per-type biases are RGCNConv's root weight: zero except the one-hot rows, row t = b[t]
    (RGCNConv's own bias is off).

The destinations of a layer are the first rows of their type (outputs are cut to them), ReLU
between layers, and the logits are the target type's rows of the last layer; they must equal
ours within 1e-10 in float64.

Exits 77 (skipped) without torch or torch_geometric.
"""
import sys

from py_case import case

try:
    import torch
    from torch_geometric.nn import RGCNConv
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)


def main():
    d = case(sys.argv[1], ["--rgcn"], "GD_RSAGE_DUMP")
    assert d["model"] == "rgcn", d["model"]
    T, R, L = d["T"], d["R"], d["L"]
    src, dst, target = d["rel_src"], d["rel_dst"], d["target"]
    nn = d["num_nodes"]
    dt = torch.float64

    def width(l, t):
        return d["in_dim"][t] if l == 0 else d["hidden"]

    # Layer 0's inputs per type (a featureless type has rows of no columns).
    h = []
    for t in range(T):
        w = d["in_dim"][t]
        v = torch.tensor(d["x"][t]["v"], dtype=dt)
        h.append(v.reshape(nn[t], w) if w > 0 else torch.zeros(nn[t], 0, dtype=dt))

    for l in range(L):
        out_w = d["classes"] if l == L - 1 else d["hidden"]
        wmax = max(width(l, t) for t in range(T))
        off = [0]
        for t in range(T):
            off.append(off[-1] + nn[l * T + t])
        # The homogeneous input: padded rows, then the type's one-hot columns.
        x = torch.zeros(off[T], wmax + T, dtype=dt)
        for t in range(T):
            x[off[t]:off[t + 1], :width(l, t)] = h[t]
            x[off[t]:off[t + 1], wmax + t] = 1
        conv = RGCNConv(wmax + T, out_w, R + T, aggr="mean", root_weight=True, bias=False).to(dt)
        edges, types = [], []
        with torch.no_grad():
            conv.weight.zero_()
            conv.root.zero_()
            for r in range(R):
                p = d["params"][l * R + r]
                blk = d["blocks"][l * R + r]
                indptr = torch.tensor(blk["indptr"], dtype=torch.long)
                col = torch.tensor(blk["indices"], dtype=torch.long)
                row = torch.repeat_interleave(torch.arange(len(indptr) - 1),
                                              indptr[1:] - indptr[:-1])
                edges.append(torch.stack([col + off[src[r]], row + off[dst[r]]]))
                types.append(torch.full((len(col),), r, dtype=torch.long))
                if p is None:
                    continue  # the last layer: a relation into another type than the target
                ws = width(l, src[r])
                assert p["b"] == [] and p["w_root"] == [], "R-GCN relations have W_l alone"
                if ws > 0:
                    conv.weight[r, :ws] = torch.tensor(p["w_l"], dtype=dt).reshape(ws, out_w)
            for t in range(T):
                n = nn[(l + 1) * T + t]
                own = torch.arange(n) + off[t]
                edges.append(torch.stack([own, own]))
                types.append(torch.full((n,), R + t, dtype=torch.long))
                p = d["roots"][l * T + t]
                if p is None:
                    continue
                wd = width(l, t)
                if wd > 0:
                    conv.weight[R + t, :wd] = torch.tensor(p["w_root"], dtype=dt).reshape(
                        wd, out_w)
                conv.root[wmax + t] = torch.tensor(p["b"], dtype=dt)
            out = conv(x, torch.cat(edges, dim=1), torch.cat(types))
        h = []
        for t in range(T):
            z = out[off[t]:off[t] + nn[(l + 1) * T + t]]
            h.append(torch.relu(z) if l < L - 1 else z)

    got = h[target]
    want = torch.tensor(d["logits"], dtype=dt).reshape(got.shape)
    err = (got - want).abs().max().item()
    print(f"R-GCN against PyG RGCNConv (homogeneous, per-type roots as self-loop relations): "
          f"{got.shape[0]} x {got.shape[1]} logits, max abs difference {err:.3g}")
    if not err <= 1e-10:
        print("FAIL: the logits differ")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
