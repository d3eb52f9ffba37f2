#!/usr/bin/env python3
"""GraphSAGE in PyTorch Geometric, trained on graphdirect minibatches.

The model is plain PyG (SAGEConv, mean aggregation); only the data loading is graphdirect's:
each minibatch's features, labels and blocks arrive as GPU tensors without a copy
(torch.from_dlpack) and graphdirect.pyg.edge_index turns a block into PyG's edge_index. The model
with the best validation accuracy is tested, as `graphdirect train` does.

    python3 examples/pyg_graphsage.py data/products --device cuda     # a dataset directory
    python3 examples/pyg_graphsage.py --preset tiny --device cpu      # a generated preset

Needs torch and torch_geometric; finds the binding in ../python and the library through
GRAPHDIRECT_LIB (e.g. build/libgraphdirect.so.0) or the system.
"""
import argparse
import copy
import os
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from torch_geometric.nn import SAGEConv

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import graphdirect  # noqa: E402
from graphdirect.pyg import edge_index  # noqa: E402


class SAGE(torch.nn.Module):
    def __init__(self, in_dim, hidden, out_dim, num_layers, dropout):
        super().__init__()
        dims = [in_dim] + [hidden] * (num_layers - 1) + [out_dim]
        self.convs = torch.nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = dropout

    def forward(self, x, blocks):
        # blocks[0] is the input layer; the destination nodes of a block are the first
        # num_dst of its source nodes, so x[:num_dst] are their own features.
        for i, (conv, block) in enumerate(zip(self.convs, blocks)):
            x = conv((x, x[:block.num_dst]), edge_index(block))
            if i < len(self.convs) - 1:
                x = F.dropout(F.relu(x), p=self.dropout, training=self.training)
        return x


def run(model, batches, optimizer=None):
    """One pass over `batches`; trains when given an optimizer. Returns (loss, accuracy)."""
    model.train(optimizer is not None)
    loss_sum, correct, count = 0.0, 0, 0
    with torch.set_grad_enabled(optimizer is not None):
        for batch in batches:
            x = torch.from_dlpack(batch.features)
            y = torch.from_dlpack(batch.labels)
            out = model(x, batch.blocks)
            loss = F.cross_entropy(out, y, ignore_index=-1)  # -1: unlabelled
            if optimizer is not None:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            # Summed on the device: no host wait per minibatch.
            loss_sum = loss_sum + loss.detach()
            correct = correct + (out.argmax(-1) == y).sum()
            count = count + (y >= 0).sum()
    n = max(len(batches), 1)
    return float(loss_sum) / n, float(correct) / max(int(count), 1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dataset", nargs="?", help="a graphdirect dataset directory")
    p.add_argument("--preset", default="small", help="without a dataset: generate this preset")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    p.add_argument("--mode", help="loader mode (default: zero-copy on cuda, cpu on cpu)")
    p.add_argument("--gpu", type=int, default=0, help="the GPU (with --device cuda)")
    p.add_argument("--gpu-cache", default="4G", help="zero-copy: GPU memory for hot rows")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--fanouts", default="10,5", help="from the seeds outward, e.g. 15,10,5")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    mode = args.mode or ("cpu" if args.device == "cpu" else "zero-copy")
    tmp = None
    if args.dataset:
        ds = graphdirect.Dataset(args.dataset)
    else:
        # Written to a directory and mapped, as a dataset on disk would be: each zero-copy
        # loader below then pins its own copy of the rows (an in-memory dataset's rows would be
        # pinned in place, which only one loader at a time can do).
        tmp = tempfile.TemporaryDirectory(prefix="pyg-graphsage-")
        path = os.path.join(tmp.name, args.preset)
        graphdirect.generate(args.preset, seed=args.seed, out=path).close()
        ds = graphdirect.Dataset(path)

    def loader(split, shuffle):
        return graphdirect.Loader(ds, fanouts=fanouts, batch_size=args.batch, mode=mode,
                                  gpu_cache=args.gpu_cache, shuffle=shuffle, seed=args.seed,
                                  device=args.gpu, split=split)

    train, valid, test = loader("train", True), loader("valid", False), loader("test", False)
    print("graphdirect %s: %s, %s" % (graphdirect.version(), ds, train.plan))
    model = SAGE(ds.feature_dim, args.hidden, ds.num_classes, len(fanouts),
                 args.dropout).to(train.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    best = (-1.0, 0, None)
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        loss, train_acc = run(model, train.epoch(epoch - 1), optimizer)
        seconds = time.perf_counter() - t0
        _, valid_acc = run(model, valid.epoch(0))  # the same draws at every evaluation
        print("epoch %d: loss %.4f, train acc %.4f, valid acc %.4f, %.2f s"
              % (epoch, loss, train_acc, valid_acc, seconds))
        if valid_acc > best[0]:
            best = (valid_acc, epoch, copy.deepcopy(model.state_dict()))
    model.load_state_dict(best[2])
    _, test_acc = run(model, test.epoch(0))
    print("test accuracy %.4f (best valid %.4f at epoch %d)" % (test_acc, best[0], best[1]))
    for l in (train, valid, test):
        l.close()
    ds.close()
    if tmp is not None:
        tmp.cleanup()
    return {"test_acc": test_acc, "valid_acc": best[0], "best_epoch": best[1]}


if __name__ == "__main__":
    main()
