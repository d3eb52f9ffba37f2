#!/usr/bin/env python3
"""R-GAT (src/nn/rgat.c) against PyG: the same function as one GATConv((-1, -1), F, heads=H,
add_self_loops=False) per relation in a HeteroConv(aggr="sum") per layer, heads concatenated in
the hidden layer and averaged (concat=False) in the last, ReLU between layers.

Usage: py_rgat_pyg.py PATH/TO/test_rgat

test_rgat, run with GD_RGAT_DUMP=file, writes one float64 case as JSON (the schema, a 2-layer
typed minibatch, the inputs, every relation's W_src, W_dst, att_src, att_dst and bias, and the
evaluation-mode logits). This script puts the parameters into GATConv layers (lin_src.weight =
W_src^T, lin_dst.weight = W_dst^T, att_src and att_dst as (1, H, F), bias), runs them over the
same blocks as edge_index tensors, and compares the logits in float64 (1e-10). The model's
documented choices are reproduced on PyG's side: a featureless type's input is a zero column
(with a zero weight column, so it projects to zero), a type that no relation enters gets zeros as
its next input (HeteroConv would give it no output), the destinations of a layer are the first
rows of their type (outputs are cut to them), and the last layer has only the relations into the
target type.

Exits 77 (skipped) without torch or torch_geometric.
"""
import sys

from py_case import case

try:
    import torch
    from torch_geometric.nn import GATConv, HeteroConv
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)


def main():
    d = case(sys.argv[1], [], "GD_RGAT_DUMP")
    T, R, L, H = d["T"], d["R"], d["L"], d["heads"]
    src, dst, target = d["rel_src"], d["rel_dst"], d["target"]
    nn = d["num_nodes"]
    names = [f"t{t}" for t in range(T)]
    dt = torch.float64

    def width(l, t):
        return d["in_dim"][t] if l == 0 else H * d["hidden"]

    def weight(values, rows, hf):
        # W (rows x H F) as a Linear's weight (H F x rows); a featureless side: one zero column.
        if rows == 0:
            return torch.zeros(hf, 1, dtype=dt)
        return torch.tensor(values, dtype=dt).reshape(rows, hf).t()

    # Layer 0's inputs; a featureless type is one zero column.
    h = {}
    for t in range(T):
        w = d["in_dim"][t]
        v = torch.tensor(d["x"][t]["v"], dtype=dt)
        h[names[t]] = v.reshape(nn[t], w) if w > 0 else torch.zeros(nn[t], 1, dtype=dt)

    for l in range(L):
        last = l == L - 1
        F = d["classes"] if last else d["hidden"]
        out_w = F if last else H * F
        convs, edges = {}, {}
        for r in range(R):
            p = d["params"][l * R + r]
            if p is None:
                continue
            ws, wd = width(l, src[r]), width(l, dst[r])
            conv = GATConv((max(ws, 1), max(wd, 1)), F, heads=H, concat=not last,
                           add_self_loops=False).to(dt)
            with torch.no_grad():
                conv.lin_src.weight.copy_(weight(p["w_src"], ws, H * F))
                conv.lin_dst.weight.copy_(weight(p["w_dst"], wd, H * F))
                conv.att_src.copy_(torch.tensor(p["att_src"], dtype=dt).reshape(1, H, F))
                conv.att_dst.copy_(torch.tensor(p["att_dst"], dtype=dt).reshape(1, H, F))
                conv.bias.copy_(torch.tensor(p["bias"], dtype=dt))
            et = (names[src[r]], f"r{r}", names[dst[r]])
            convs[et] = conv
            blk = d["blocks"][l * R + r]
            indptr = torch.tensor(blk["indptr"], dtype=torch.long)
            col = torch.tensor(blk["indices"], dtype=torch.long)
            row = torch.repeat_interleave(torch.arange(len(indptr) - 1), indptr[1:] - indptr[:-1])
            edges[et] = torch.stack([col, row])
        conv = HeteroConv(convs, aggr="sum")
        conv.eval()
        out = conv(h, edges)
        nxt = {}
        for t in range(T):
            n = nn[(l + 1) * T + t]
            if names[t] in out:
                z = out[names[t]][:n]
                nxt[names[t]] = z if last else torch.relu(z)
            else:
                nxt[names[t]] = torch.zeros(n, out_w, dtype=dt)
        h = nxt

    got = h[names[target]].detach()
    want = torch.tensor(d["logits"], dtype=dt).reshape(got.shape)
    err = (got - want).abs().max().item()
    print(f"R-GAT against PyG HeteroConv(GATConv): {got.shape[0]} x {got.shape[1]} logits, "
          f"{H} heads, max abs difference {err:.3g}")
    if not err <= 1e-10:
        print("FAIL: the logits differ")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
