#!/usr/bin/env python3
"""R-SAGE (src/nn/rsage.c) against PyG: the same function as one SAGEConv per relation in a
HeteroConv(aggr="sum") per layer, which is what to_hetero(SAGEConv, aggr="sum") builds.

Usage: py_rsage_pyg.py PATH/TO/test_rsage

test_rsage, run with GD_RSAGE_DUMP=file, writes one float64 case as JSON (the schema, a 2-layer
typed minibatch, the inputs, every relation's W_l, b and W_root, and the evaluation-mode logits).
This script puts the parameters into SAGEConv layers (lin_l.weight = W_l^T with its bias b,
lin_r.weight = W_root^T), runs them over the same blocks as edge_index tensors, and compares the
logits in float64 (1e-10). The model's documented choices are reproduced on PyG's side: a
featureless type's input is a zero column (with a zero weight row, so a relation from it adds its
bias alone), a type that no relation enters gets zeros as its next input (HeteroConv would give
it no output), the destinations of a layer are the first rows of their type (outputs are cut to
them), and the last layer has only the relations into the target type.

Exits 77 (skipped) without torch or torch_geometric.
"""
import sys

from py_case import case

try:
    import torch
    from torch_geometric.nn import HeteroConv, SAGEConv
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)


def main():
    d = case(sys.argv[1], [], "GD_RSAGE_DUMP")
    T, R, L = d["T"], d["R"], d["L"]
    src, dst, target = d["rel_src"], d["rel_dst"], d["target"]
    nn = d["num_nodes"]
    names = [f"t{t}" for t in range(T)]
    dt = torch.float64

    def width(l, t):
        return d["in_dim"][t] if l == 0 else d["hidden"]

    # Layer 0's inputs; a featureless type is one zero column.
    h = {}
    for t in range(T):
        w = d["in_dim"][t]
        v = torch.tensor(d["x"][t]["v"], dtype=dt)
        h[names[t]] = v.reshape(nn[t], w) if w > 0 else torch.zeros(nn[t], 1, dtype=dt)

    for l in range(L):
        out_w = d["classes"] if l == L - 1 else d["hidden"]
        convs, edges = {}, {}
        for r in range(R):
            p = d["params"][l * R + r]
            if p is None:
                continue
            ws, wd = width(l, src[r]), width(l, dst[r])
            conv = SAGEConv((max(ws, 1), max(wd, 1)), out_w, aggr="mean").to(dt)
            with torch.no_grad():
                wl = torch.tensor(p["w_l"], dtype=dt).reshape(ws, out_w)
                wr = torch.tensor(p["w_root"], dtype=dt).reshape(wd, out_w)
                conv.lin_l.weight.copy_(wl.t() if ws > 0 else torch.zeros(out_w, 1, dtype=dt))
                conv.lin_l.bias.copy_(torch.tensor(p["b"], dtype=dt))
                conv.lin_r.weight.copy_(wr.t() if wd > 0 else torch.zeros(out_w, 1, dtype=dt))
            et = (names[src[r]], f"r{r}", names[dst[r]])
            convs[et] = conv
            blk = d["blocks"][l * R + r]
            indptr = torch.tensor(blk["indptr"], dtype=torch.long)
            col = torch.tensor(blk["indices"], dtype=torch.long)
            row = torch.repeat_interleave(torch.arange(len(indptr) - 1), indptr[1:] - indptr[:-1])
            edges[et] = torch.stack([col, row])
        out = HeteroConv(convs, aggr="sum")(h, edges)
        nxt = {}
        for t in range(T):
            n = nn[(l + 1) * T + t]
            if names[t] in out:
                z = out[names[t]][:n]
                nxt[names[t]] = torch.relu(z) if l < L - 1 else z
            else:
                nxt[names[t]] = torch.zeros(n, out_w, dtype=dt)
        h = nxt

    got = h[names[target]].detach()
    want = torch.tensor(d["logits"], dtype=dt).reshape(got.shape)
    err = (got - want).abs().max().item()
    print(f"R-SAGE against PyG HeteroConv(SAGEConv): {got.shape[0]} x {got.shape[1]} logits, "
          f"max abs difference {err:.3g}")
    if not err <= 1e-10:
        print("FAIL: the logits differ")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
