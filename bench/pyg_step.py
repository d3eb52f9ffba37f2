#!/usr/bin/env python3
"""The training step of `graphdirect bench step` (GraphSAGE, or GAT with --model gat), in
PyTorch + PyG, on the same blocks.

`graphdirect bench step --dump DIR` writes the blocks of its timed minibatches (per step and
layer an int32 CSC: indptr over the destination nodes, indices = local source ids; layer 0 is
the input layer), the labels of the seeds and a meta.json with the sizes. This script builds the
model as PyG users do: three torch_geometric.nn.SAGEConv(aggr='mean'), ReLU and dropout between
layers, each layer called as conv((x, x[:num_dst]), adj) as in PyG's GraphSAGE example for
sampled blocks, trained with torch.optim.Adam. Features are random float32 rows of the right
shape on the GPU (their values do not change the time). PyTorch's default precision is kept:
float32 matrix products without TF32.

One step = zero_grad, forward, cross-entropy, backward, optimizer.step, timed with CUDA events
and waited for before the next, median and mean over every dumped step after a warm-up over the
first ones (the same minibatches as the C benchmark). The adjacency is given to SAGEConv in each
form PyG accepts without extra packages, each timed on its own:
  edge_index   a [2, E] int64 tensor (row = source, col = destination): gather + scatter-mean;
  EdgeIndex    torch_geometric.EdgeIndex sorted by destination with its CSC pointer;
  sparse_csr   a torch.sparse_csr_tensor adj_t (destination x source): sparse matmul / degree;
  SparseTensor torch_sparse.SparseTensor adj_t, where torch_sparse is installed.
Before timing, every form's forward output on the first step is compared with edge_index's on
the same weights, so a form that computes something else is reported, not timed as a win.
A GAT dump (meta.json "model": "gat") builds GATConv layers instead (heads concatenated, then
averaged in the last layer; attention dropout inside the conv); the forms GATConv does not take
are reported unavailable. A dump of a relational model (meta.json "model": "rsage", "rgcn" or "rgat")
is replayed by bench/pyg_hetero_step.py, which this script hands it to.
Prints one JSON object (and writes it to --json FILE when given).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def read_meta(dump_dir):
    meta_path = os.path.join(dump_dir, "meta.json")
    if not os.path.exists(meta_path):
        sys.exit(f"pyg_step: {meta_path} not found: run `graphdirect bench step --dump "
                 f"{dump_dir}` first (meta.json is written last, so a dump without it is "
                 f"incomplete)")
    with open(meta_path) as f:
        return json.load(f)


def load(dump_dir, device):
    meta = read_meta(dump_dir)
    steps = []
    for s, info in enumerate(meta["step_blocks"]):
        layers = []
        for l, b in enumerate(info["blocks"]):
            base = os.path.join(dump_dir, f"step{s:04d}_layer{l}_")
            indptr = np.load(base + "indptr.npy")
            indices = np.load(base + "indices.npy")
            nd, ns, ne = int(b["num_dst"]), int(b["num_src"]), int(b["num_edges"])
            if indptr.shape != (nd + 1,) or indices.shape != (ne,) or int(indptr[-1]) != ne:
                sys.exit(f"pyg_step: step {s} layer {l}: the arrays do not match meta.json "
                         f"({indptr.shape}, {indices.shape} for {nd} destinations, {ne} edges)")
            layers.append({
                "num_src": ns,
                "num_dst": nd,
                "indptr": torch.from_numpy(indptr).to(device),
                "indices": torch.from_numpy(indices).to(device),
            })
        labels = torch.from_numpy(np.load(os.path.join(dump_dir, f"step{s:04d}_labels.npy")))
        steps.append({"layers": layers, "labels": labels.to(device)})
    return meta, steps


def make_adj(form, blk):
    """The block's adjacency in one of the forms SAGEConv takes (None: form unavailable)."""
    ns, nd = blk["num_src"], blk["num_dst"]
    indptr, indices = blk["indptr"], blk["indices"]
    deg = indptr[1:] - indptr[:-1]
    dst = torch.repeat_interleave(torch.arange(nd, device=indptr.device), deg.long())
    if form == "edge_index":
        return torch.stack([indices.long(), dst])
    if form == "EdgeIndex":
        from torch_geometric import EdgeIndex
        ei = EdgeIndex(torch.stack([indices.long(), dst]), sparse_size=(ns, nd),
                       sort_order="col")
        ei.get_indptr()  # fill the CSC pointer cache up front, as a loader would
        return ei
    if form == "sparse_csr":
        values = torch.ones(indices.numel(), device=indptr.device)
        return torch.sparse_csr_tensor(indptr.long(), indices.long(), values, size=(nd, ns))
    if form == "SparseTensor":
        from torch_sparse import SparseTensor
        return SparseTensor(rowptr=indptr.long(), col=indices.long(), sparse_sizes=(nd, ns))
    raise ValueError(form)


class Blocks(torch.nn.Module):
    """Layers over sampled blocks: conv l called as conv((x, x[:num_dst]), adj), ReLU and
    dropout between layers; the subclasses make the convs."""

    def forward(self, x, adjs):
        for i, (adj, nd) in enumerate(adjs):
            x = self.convs[i]((x, x[:nd]), adj)
            if i < len(self.convs) - 1:
                x = F.relu(x)
                x = F.dropout(x, p=self.dropout, training=self.training)
        return x


class SAGE(Blocks):
    def __init__(self, in_dim, hidden, classes, layers, dropout):
        super().__init__()
        from torch_geometric.nn import SAGEConv
        dims = [in_dim] + [hidden] * (layers - 1) + [classes]
        self.convs = torch.nn.ModuleList(
            SAGEConv(dims[i], dims[i + 1], aggr="mean") for i in range(layers))
        self.dropout = dropout


class GAT(Blocks):
    """graphdirect's GAT as PyG writes it: GATConv layers, heads concatenated in the hidden
    layers and averaged in the last, self loops added (dst i <- src i), attention dropout inside
    the conv, ReLU and dropout between layers."""

    def __init__(self, in_dim, hidden, classes, layers, dropout, heads, attn_dropout):
        super().__init__()
        from torch_geometric.nn import GATConv
        convs = []
        for i in range(layers):
            last = i == layers - 1
            convs.append(GATConv(in_dim if i == 0 else heads * hidden, classes if last else hidden,
                                 heads=heads, concat=not last, dropout=attn_dropout))
        self.convs = torch.nn.ModuleList(convs)
        self.dropout = dropout


def make_model(meta):
    """The dump's model: GraphSAGE, or GAT (meta "model": "gat", with its heads)."""
    if meta.get("model", "sage") == "gat":
        return GAT(meta["feature_dim"], meta["hidden"], meta["num_classes"], meta["layers"],
                   meta["dropout"], int(meta.get("heads", 1)), float(meta.get("attn_dropout", 0)))
    return SAGE(meta["feature_dim"], meta["hidden"], meta["num_classes"], meta["layers"],
                meta["dropout"])


def time_steps(step, n, warmup, device):
    """step(i) over the first `warmup` steps untimed, then over all n timed: CUDA events around
    each on the GPU (waited for before the next), the wall clock on the CPU (a smoke run)."""
    cuda = device.type == "cuda"
    if cuda:
        ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for i in range(min(warmup, n)):
        step(i)
    if cuda:
        torch.cuda.synchronize()
    ms, losses = [], []
    t0 = time.perf_counter()
    for i in range(n):
        if cuda:
            ev0.record()
            loss = step(i)
            ev1.record()
            ev1.synchronize()
            ms.append(ev0.elapsed_time(ev1))
        else:
            t = time.perf_counter()
            loss = step(i)
            ms.append(1e3 * (time.perf_counter() - t))
        losses.append(float(loss.detach()))
    return {
        "step_ms": {
            "median": statistics.median(ms),
            "mean": statistics.fmean(ms),
            "min": min(ms),
            "max": max(ms),
        },
        "wall_s_all_steps": time.perf_counter() - t0,
        "first_loss": losses[0],
        "last_loss": losses[-1],
    }


def environment(device):
    """The record's description of the machine and the libraries."""
    import torch_geometric
    return {
        "device": (torch.cuda.get_device_properties(0).name if device.type == "cuda"
                   else "cpu"),
        "torch": torch.__version__,
        "torch_geometric": torch_geometric.__version__,
        "cuda": torch.version.cuda,
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }


def record_head(meta, args, steps, device):
    """The fields every record of pyg_step starts with: the machine, the run and the model."""
    return {
        "benchmark": "pyg_step",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **environment(device),
        "steps": steps,
        "warmup": args.warmup,
        "preset": meta.get("preset"),
        "model": meta.get("model", "sage"),
        "heads": meta.get("heads", 1),
        "attn_dropout": meta.get("attn_dropout", 0),
        "fanouts": meta["fanouts"],
        "batch": meta["batch"],
        "hidden": meta["hidden"],
        "num_classes": meta["num_classes"],
    }


def emit(record, path):
    """Print the record and write it atomically to path (if given)."""
    text = json.dumps(record, indent=2)
    print(text)
    if path:
        tmp = f"{path}.tmp.{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(text + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


def time_form(form, meta, steps, feats, warmup, state, device):
    try:
        adjs = [[(make_adj(form, b), b["num_dst"]) for b in st["layers"]] for st in steps]
    except ImportError as e:
        return {"form": form, "available": False, "why": str(e)}
    torch.manual_seed(0)
    model = make_model(meta).to(device)
    model.load_state_dict(state)
    opt = torch.optim.Adam(model.parameters(), lr=meta["lr"])

    def step(i):
        st = steps[i]
        x = feats[:st["layers"][0]["num_src"]]
        opt.zero_grad()
        out = model(x, adjs[i])
        loss = F.cross_entropy(out, st["labels"])
        loss.backward()
        opt.step()
        return loss

    # The function check: this form's forward (no dropout) on step 0 against edge_index's.
    model.eval()
    with torch.no_grad():
        x0 = feats[:steps[0]["layers"][0]["num_src"]]
        out = model(x0, adjs[0]).float().cpu()
    model.train()
    return {"form": form, "available": True, **time_steps(step, len(steps), warmup, device),
            "_out0": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump_dir", help="the directory of `graphdirect bench step --dump DIR`")
    ap.add_argument("--warmup", type=int, default=10, help="untimed steps first (default 10)")
    ap.add_argument("--forms", default=None,
                    help="adjacency forms to time (default: all; edge_index, EdgeIndex, "
                         "sparse_csr, SparseTensor; relational dumps: heteroconv, trimmed)")
    ap.add_argument("--json", help="also write the JSON record to this file")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                    help="cuda (default; timed with CUDA events) or cpu (a smoke run of the "
                         "script, timed by the wall clock)")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("pyg_step: PyTorch sees no GPU: the step is timed on CUDA (--device cpu "
                 "runs the script on the CPU as a smoke test)")
    device = torch.device(args.device)
    if read_meta(args.dump_dir).get("model") in ("rsage", "rgcn", "rgat"):
        import pyg_hetero_step
        return pyg_hetero_step.run(args, read_meta(args.dump_dir), device)
    forms = args.forms or "edge_index,EdgeIndex,sparse_csr,SparseTensor"
    meta, steps = load(args.dump_dir, device)
    max_src = max(st["layers"][0]["num_src"] for st in steps)
    gen = torch.Generator(device=device).manual_seed(1)
    feats = torch.randn(max_src, meta["feature_dim"], device=device, generator=gen)
    torch.manual_seed(0)
    state = make_model(meta).to(device).state_dict()
    state = {k: v.clone() for k, v in state.items()}

    results = []
    for form in forms.split(","):
        try:
            r = time_form(form, meta, steps, feats, args.warmup, state, device)
        except Exception as e:  # a form PyG rejects on this setup is reported, not fatal
            r = {"form": form, "available": False, "why": f"{type(e).__name__}: {e}"}
        results.append(r)
        print(f"pyg_step: {form}: " + (f"median {r['step_ms']['median']:.3f} ms"
                                       if r["available"] else f"unavailable ({r['why']})"),
              file=sys.stderr)
    ref = next((r["_out0"] for r in results if r.get("available") and r["form"] == "edge_index"),
               None)
    for r in results:
        out = r.pop("_out0", None)
        if out is not None and ref is not None:
            r["max_abs_diff_vs_edge_index"] = float((out - ref).abs().max())
    # Only forms that compute what edge_index computes (to float rounding) can be the best.
    ok = [r for r in results if r.get("available") and
          r.get("max_abs_diff_vs_edge_index", 0.0) <= 1e-3]
    best = min(ok, key=lambda r: r["step_ms"]["median"]) if ok else None
    record = {
        **record_head(meta, args, len(steps), device),
        "feature_dim": meta["feature_dim"],
        "forms": results,
        "best_form": best["form"] if best else None,
        "best_step_ms_median": best["step_ms"]["median"] if best else None,
        "best_step_ms_mean": best["step_ms"]["mean"] if best else None,
    }
    emit(record, args.json)
    if best is None:
        sys.exit("pyg_step: no adjacency form ran")


if __name__ == "__main__":
    main()
