#!/usr/bin/env python3
"""The training step of `graphdirect bench step --model rsage|rgcn|rgat` in PyTorch + PyG, on the same
typed blocks, from the same initial parameters. bench/pyg_step.py hands a relational dump here
(`python3 bench/pyg_step.py DIR`); this file can also be run on its own with the same arguments.

The dump (docs/bench.md, "graphdirect bench step") holds per timed step and per (layer, edge
type) an int32 CSC block in local ids of the edge type's two node types (layer 0 the input
layer), per node type the rows of its feature table that are the step's input nodes (a layer's
nodes of a type are the first rows of the layer below's), the seeds' labels, each featured type's
table, our initial parameters (params0.npy, a flat float32 buffer whose per-relation tensors
meta.json's "weights" locate) and the evaluation loss of timed step 0 on them.

The model is the one tests/py_rsage_pyg.py and tests/py_rgat_pyg.py show equal to ours: per
layer a torch_geometric.nn.HeteroConv(aggr="sum") of one SAGEConv(aggr="mean") per relation
(rsage; rgcn: SAGEConv(aggr="mean", root_weight=False, bias=False) per relation, plus a
torch.nn.Linear root with bias per destination type, as PyG's RGCNConv keeps its root apart, with
the types' own widths; tests/py_rgcn_pyg.py checks that semantics against RGCNConv itself), or
of one GATConv(add_self_loops=False, heads=H, heads concatenated in hidden layers
and averaged in the last, attention dropout inside the conv) per relation (rgat); ReLU and
dropout after every hidden layer; the last layer has only the relations into the target type.
As in those tests, a featureless type's input is one zero column (with a zero weight column),
and a type that no relation enters gets zeros as its next input. The parameters are ours
(params0.npy), so the first evaluation loss must match ours: it is checked before timing
(relative difference at most 1e-3), and a mismatch fails the run after the record is written.

Two ways of calling the layers are timed, each from the initial parameters ("forms", as
pyg_step.py's adjacency forms):
  heteroconv  HeteroConv's own forward over the x dict: every node of a type is a destination,
              and the outputs are then cut to the next layer's nodes (what to_hetero and
              HeteroConv give a NeighborLoader minibatch);
  trimmed     each relation's conv called as conv((x_src, x_dst[:num_dst]), edge_index), summed
              per destination type: the destinations alone, as PyG's GraphSAGE example does for
              homogeneous blocks (and as our model computes).
Both must give the same first-step logits. One step = zero_grad, forward, cross-entropy on the
seeds, backward, torch.optim.Adam step, timed with CUDA events (the wall clock on the CPU, as a
smoke run) after a warm-up over the first dumped steps; the adjacency (edge_index tensors) and
input rows of every step are built on the device before timing.
"""
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from pyg_step import emit, record_head, time_steps

FORMS = ("heteroconv", "trimmed")
# The last layer computes the target type alone, by design (as ours): HeteroConv's warning that
# the other types get no update says just that.
warnings.filterwarnings("ignore", message="There exist node types")


def npy(dump_dir, name):
    return np.load(os.path.join(dump_dir, name))


def load_steps(dump_dir, meta, device):
    """Every dumped step: per type its input rows (x), per layer the edge_index dict, the node
    counts and the labels, on the device."""
    T, R, L = len(meta["node_types"]), len(meta["relations"]), meta["layers"]
    tables = {}
    for t, nt in enumerate(meta["node_types"]):
        if nt["feature_dim"] > 0:
            tables[t] = torch.from_numpy(npy(dump_dir, f"type{t}_features.npy")).float().to(device)
    steps = []
    for s, info in enumerate(meta["step_blocks"]):
        counts = info["num_nodes"]
        x = {}
        for t, nt in enumerate(meta["node_types"]):
            rows = npy(dump_dir, f"step{s:04d}_type{t}_rows.npy")
            if rows.shape != (counts[t],):
                sys.exit(f"pyg_hetero_step: step {s}, type {t}: {rows.shape[0]} rows for "
                         f"{counts[t]} input nodes in meta.json")
            x[nt["name"]] = (tables[t][torch.from_numpy(rows).to(device)] if t in tables
                             else torch.zeros(counts[t], 1, device=device))
        layers = []
        for l in range(L):
            edges = {}
            for r in range(R):
                b = info["blocks"][l * R + r]
                base = f"step{s:04d}_layer{l}_rel{r}_"
                indptr = npy(dump_dir, base + "indptr.npy")
                indices = npy(dump_dir, base + "indices.npy")
                if indptr.shape != (b["num_dst"] + 1,) or indices.shape != (b["num_edges"],):
                    sys.exit(f"pyg_hetero_step: step {s}, layer {l}, relation {r}: the arrays "
                             f"do not match meta.json")
                indptr = torch.from_numpy(indptr).long().to(device)
                dst = torch.repeat_interleave(torch.arange(b["num_dst"], device=device),
                                              indptr[1:] - indptr[:-1])
                edges[edge_type(meta, r)] = torch.stack(
                    [torch.from_numpy(indices).long().to(device), dst])
            layers.append(edges)
        labels = torch.from_numpy(npy(dump_dir, f"step{s:04d}_labels.npy")).to(device)
        steps.append({"x": x, "edges": layers, "counts": counts, "labels": labels})
    return steps


def edge_type(meta, r):
    rel, names = meta["relations"][r], [t["name"] for t in meta["node_types"]]
    return (names[rel["src"]], rel["name"], names[rel["dst"]])


def type_weights(meta, params):
    """R-GCN's per-type roots by (layer, type): {name: rows x cols array}."""
    out = {}
    for w in meta.get("type_weights", []):
        a = params[w["offset"]:w["offset"] + w["rows"] * w["cols"]]
        out.setdefault((w["layer"], w["type"]), {})[w["name"]] = torch.from_numpy(
            a.reshape(w["rows"], w["cols"]).copy())
    return out


def weights(meta, params):
    """Our initial parameters by (layer, relation): {name: rows x cols array}."""
    out = {}
    for w in meta["weights"]:
        a = params[w["offset"]:w["offset"] + w["rows"] * w["cols"]]
        out.setdefault((w["layer"], w["relation"]), {})[w["name"]] = torch.from_numpy(
            a.reshape(w["rows"], w["cols"]).copy())
    return out


def linear_weight(w, out_cols):
    """A rows x out matrix of ours as a Linear's weight (out x rows); one zero column for a
    featureless side (whose input is one zero column)."""
    return w.t() if w.shape[0] > 0 else torch.zeros(out_cols, 1)


class Relational(torch.nn.Module):
    """R-SAGE or R-GAT as PyG writes it: a HeteroConv per layer, our parameters copied in."""

    def __init__(self, meta, params):
        super().__init__()
        from torch_geometric.nn import GATConv, HeteroConv, SAGEConv
        self.meta, self.L = meta, meta["layers"]
        self.rgat = meta["model"] == "rgat"
        self.rgcn = meta["model"] == "rgcn"
        H = int(meta.get("heads", 1)) if self.rgat else 1
        names = [t["name"] for t in meta["node_types"]]
        self.names, self.target = names, names[meta["target_type"]]
        self.dropout = meta["dropout"]
        w = weights(meta, params)

        def width(l, t):
            if l == 0:
                return max(meta["node_types"][t]["feature_dim"], 1)
            return H * meta["hidden"]

        tw = type_weights(meta, params) if self.rgcn else {}
        self.out_cols, self.convs, self.roots = [], torch.nn.ModuleList(), torch.nn.ModuleList()
        for l in range(self.L):
            last = l == self.L - 1
            F_ = meta["num_classes"] if last else meta["hidden"]
            self.out_cols.append(F_ if last else H * F_)
            convs = {}
            for r, rel in enumerate(meta["relations"]):
                p = w.get((l, r))
                if p is None:  # the last layer's relations into other types than the target
                    continue
                dims = (width(l, rel["src"]), width(l, rel["dst"]))
                if self.rgat:
                    conv = GATConv(dims, F_, heads=H, concat=not last, add_self_loops=False,
                                   dropout=float(meta.get("attn_dropout", 0)))
                    with torch.no_grad():
                        conv.lin_src.weight.copy_(linear_weight(p["w_src"], H * F_))
                        conv.lin_dst.weight.copy_(linear_weight(p["w_dst"], H * F_))
                        conv.att_src.copy_(p["att_src"].reshape(1, H, F_))
                        conv.att_dst.copy_(p["att_dst"].reshape(1, H, F_))
                        conv.bias.copy_(p["bias"][0])
                elif self.rgcn:
                    # R-GCN: the relation's mean neighbour alone; the root and bias are the
                    # destination type's (self.roots below).
                    conv = SAGEConv(dims, F_, aggr="mean", root_weight=False, bias=False)
                    with torch.no_grad():
                        conv.lin_l.weight.copy_(linear_weight(p["w_l"], F_))
                else:
                    conv = SAGEConv(dims, F_, aggr="mean")
                    with torch.no_grad():
                        conv.lin_l.weight.copy_(linear_weight(p["w_l"], F_))
                        conv.lin_l.bias.copy_(p["b"][0])
                        conv.lin_r.weight.copy_(linear_weight(p["w_root"], F_))
                convs[edge_type(meta, r)] = conv
            self.convs.append(HeteroConv(convs, aggr="sum"))
            roots = {}
            for t, name in enumerate(names):
                p = tw.get((l, t))
                if p is None:  # R-SAGE and R-GAT; R-GCN's last layer: the target type alone
                    continue
                lin = torch.nn.Linear(width(l, t), F_)
                with torch.no_grad():
                    lin.weight.copy_(linear_weight(p["w_root"], F_))
                    lin.bias.copy_(p["b"][0])
                roots[name] = lin
            self.roots.append(torch.nn.ModuleDict(roots))

    def layer(self, l, x, edges, nd, form):
        """Layer l's outputs by type, cut to the nd[type] destinations."""
        hc = self.convs[l]
        if form == "heteroconv":
            out = hc(x, {et: edges[et] for et in hc.convs.keys()})
            out = {t: z[:nd[t]] for t, z in out.items()}
        else:
            out = {}
            for et in hc.convs.keys():
                src, _, dst = et
                z = hc.convs[et]((x[src], x[dst][:nd[dst]]), edges[et])
                out[dst] = z if dst not in out else out[dst] + z
        for t, lin in self.roots[l].items():  # R-GCN: the type's root and bias
            z = lin(x[t][:nd[t]])
            out[t] = z if t not in out else out[t] + z
        return out

    def forward(self, st, form):
        x, T = st["x"], len(self.names)
        for l in range(self.L):
            nd = {t: st["counts"][(l + 1) * T + i] for i, t in enumerate(self.names)}
            out = self.layer(l, x, st["edges"][l], nd, form)
            if l == self.L - 1:
                return out[self.target]
            x = {}
            for t in self.names:
                z = out.get(t)
                if z is None:  # no relation enters the type: zeros, as our model gives it
                    z = torch.zeros(nd[t], self.out_cols[l], device=st["labels"].device)
                x[t] = F.dropout(F.relu(z), p=self.dropout, training=self.training)
        return None


def time_form(form, meta, params, steps, warmup, device):
    model = Relational(meta, params).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=meta["lr"])
    model.eval()
    with torch.no_grad():
        logits0 = model(steps[0], form)
        eval_loss = float(F.cross_entropy(logits0, steps[0]["labels"]))
    model.train()

    def step(i):
        st = steps[i]
        opt.zero_grad()
        loss = F.cross_entropy(model(st, form), st["labels"])
        loss.backward()
        opt.step()
        return loss

    return {"form": form, "available": True, "eval_loss_step0": eval_loss,
            **time_steps(step, len(steps), warmup, device), "_out0": logits0.float().cpu()}


def run(args, meta, device):
    import torch_geometric  # noqa: F401 (fails early without PyG)
    steps = load_steps(args.dump_dir, meta, device)
    params = npy(args.dump_dir, "params0.npy")
    ours = float(meta["check"]["eval_loss"])
    forms = (args.forms or ",".join(FORMS)).split(",")
    results = []
    for form in forms:
        if form not in FORMS:
            results.append({"form": form, "available": False,
                            "why": f"not a form of the relational models ({', '.join(FORMS)})"})
            continue
        r = time_form(form, meta, params, steps, args.warmup, device)
        r["eval_loss_diff_vs_ours"] = abs(r["eval_loss_step0"] - ours)
        results.append(r)
        print(f"pyg_step: {meta['model']} {form}: median {r['step_ms']['median']:.3f} ms; "
              f"evaluation loss of step 0 {r['eval_loss_step0']:.6f} (ours {ours:.6f})",
              file=sys.stderr)
    ran = [r for r in results if r.get("available")]
    ref = ran[0]["_out0"] if ran else None
    for r in ran:
        r["max_abs_diff_vs_" + ran[0]["form"]] = float((r.pop("_out0") - ref).abs().max())
    # The same function as ours: the first evaluation loss on our parameters within 1e-3.
    same = [r for r in ran if r["eval_loss_diff_vs_ours"] <= 1e-3 * max(1.0, abs(ours))]
    best = min(same, key=lambda r: r["step_ms"]["median"]) if same else None
    record = {
        **record_head(meta, args, len(steps), device),
        "relation_fanouts": meta.get("relation_fanouts"),
        "relations": [list(edge_type(meta, r)) for r in range(len(meta["relations"]))],
        "ours_eval_loss_step0": ours,
        "forms": results,
        "best_form": best["form"] if best else None,
        "best_step_ms_median": best["step_ms"]["median"] if best else None,
        "best_step_ms_mean": best["step_ms"]["mean"] if best else None,
    }
    emit(record, args.json)
    if len(same) < len(ran) or not ran:
        sys.exit("pyg_step: PyG's evaluation loss of step 0 on our parameters differs from ours "
                 f"({ours:.6f}): the models are not the same function")


if __name__ == "__main__":
    import pyg_step
    pyg_step.main()
