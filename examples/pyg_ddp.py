#!/usr/bin/env python3
"""GraphSAGE in PyTorch Geometric trained data-parallel with DistributedDataParallel on
graphdirect minibatches, one process per GPU.

    torchrun --nproc_per_node=2 examples/pyg_ddp.py data/products          # 2 GPUs, zero-copy
    torchrun --nproc_per_node=2 examples/pyg_ddp.py /tmp/tiny --preset tiny --device cpu

Each process (rank) makes a graphdirect Loader with rank=RANK and world_size=WORLD_SIZE on GPU
LOCAL_RANK: minibatch b of an epoch is its share of global minibatch b, the
world_size * batch seeds that one loader of that batch would give, shuffled and with the
neighbours drawn as on one GPU (the draws are keyed by node and global minibatch, not by rank).
So N processes at --batch B train on the same minibatches as one process at --batch N*B.

The loss is normalised so that the N-process gradient is the one-process gradient at N*B: each
rank sums the cross-entropy of its labelled seeds and divides by the labelled seeds of the
GLOBAL minibatch (one all_reduce of [loss sum, labelled count], which also gives the global loss
for the log), times world_size, because DDP's all-reduce averages the gradients over the ranks
(divides by world_size). The sum over ranks of sum_r / count * world_size / world_size is then
sum / count, as on one process. With --dropout 0 the losses of N processes at B equal those of
one at N*B up to float summation order (python/tests/test_binding.py checks it on 2 CPU ranks);
with dropout they agree in distribution only (each rank draws its own masks).

At the end of an epoch a rank may get fewer seeds than the others, or none (a batch with
num_seeds 0 and empty tensors). It still runs the forward and backward of its empty batch
(loss 0, zero gradients), because DDP's all-reduce needs every rank at every step.

Needs torch and torch_geometric (SAGEConv; pyg-lib is not needed). --device cpu uses the gloo
backend and the loader's cpu mode, so it runs without a GPU. Finds the binding in ../python and
the library through GRAPHDIRECT_LIB (e.g. build/libgraphdirect.so.0) or the system.
"""
import argparse
import copy
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)
import graphdirect  # noqa: E402
from pyg_graphsage import SAGE  # noqa: E402  (the same PyG model as the one-GPU example)


def global_sums(*values):
    """The sums over the ranks of values (one all_reduce of one small tensor)."""
    t = torch.stack([v.to(torch.float64) for v in values])
    dist.all_reduce(t)
    return t


def train_epoch(model, batches, optimizer, world):
    """One epoch of DDP steps; returns (mean loss over the global minibatches, train accuracy)."""
    model.train()
    dev = next(model.parameters()).device
    loss_sum = correct = count = torch.zeros((), dtype=torch.float64, device=dev)
    for batch in batches:
        x = torch.from_dlpack(batch.features)
        y = torch.from_dlpack(batch.labels)
        out = model(x, batch.blocks)
        # Summed, not averaged: an empty batch gives 0 (a mean would be NaN), and the
        # normalisation by the global minibatch comes next.
        local = F.cross_entropy(out, y, ignore_index=-1, reduction="sum")
        labelled = (y >= 0).sum()
        g = global_sums(local.detach(), labelled)
        n = g[1].clamp(min=1)
        loss = local * world / n  # DDP divides the summed gradients by world again
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_sum = loss_sum + g[0] / n
        correct = correct + (out.argmax(-1) == y).sum()
        count = count + labelled
    c = global_sums(correct, count)
    return float(loss_sum) / max(len(batches), 1), float(c[0]) / max(float(c[1]), 1.0)


@torch.no_grad()
def accuracy(module, batches):
    """Accuracy over the ranks' shares of a split (the plain module: no DDP step here)."""
    module.eval()
    dev = next(module.parameters()).device
    correct = count = torch.zeros((), dtype=torch.int64, device=dev)
    for batch in batches:
        y = torch.from_dlpack(batch.labels)
        out = module(torch.from_dlpack(batch.features), batch.blocks)
        correct = correct + (out.argmax(-1) == y).sum()
        count = count + (y >= 0).sum()
    c = global_sums(correct, count)
    return float(c[0]) / max(float(c[1]), 1.0)


def open_dataset(path, preset, seed, rank):
    """The dataset at path; with --preset, rank 0 first generates it there if it is missing."""
    if preset and rank == 0 and not os.path.exists(path):
        graphdirect.generate(preset, seed=seed, out=path).close()
    dist.barrier()
    return graphdirect.Dataset(path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dataset", help="a graphdirect dataset directory")
    p.add_argument("--preset", help="generate this preset into the directory if it is missing")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    p.add_argument("--mode", help="loader mode (default: zero-copy on cuda, cpu on cpu)")
    p.add_argument("--gpu-cache", default="4G", help="zero-copy: GPU memory for hot rows")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=1024, help="seeds per minibatch on each rank")
    p.add_argument("--fanouts", default="10,5", help="from the seeds outward, e.g. 15,10,5")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="cpu mode: the loader's threads")
    args = p.parse_args(argv)

    rank, world, local_rank = graphdirect.distributed_info()
    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if cuda else "gloo")
    torch.manual_seed(args.seed)  # the same initial model on every rank (DDP broadcasts it too)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    mode = args.mode or ("zero-copy" if cuda else "cpu")
    ds = open_dataset(args.dataset, args.preset, args.seed, rank)

    def loader(split, shuffle):
        return graphdirect.Loader(ds, fanouts=fanouts, batch_size=args.batch, mode=mode,
                                  gpu_cache=args.gpu_cache, shuffle=shuffle, seed=args.seed,
                                  device=local_rank, split=split, threads=args.threads,
                                  rank=rank, world_size=world)

    train, valid, test = loader("train", True), loader("valid", False), loader("test", False)
    if rank == 0:
        print("graphdirect %s: %s, %d ranks x %d seeds, %d minibatches an epoch; %s"
              % (graphdirect.version(), ds, world, args.batch, len(train), train.plan),
              flush=True)
    module = SAGE(ds.feature_dim, args.hidden, ds.num_classes, len(fanouts),
                  args.dropout).to(train.device)
    model = DistributedDataParallel(module, device_ids=[local_rank] if cuda else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    best = (-1.0, 0, None)
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        loss, train_acc = train_epoch(model, train.epoch(epoch - 1), optimizer, world)
        seconds = time.perf_counter() - t0
        valid_acc = accuracy(module, valid.epoch(0))  # the same draws at every evaluation
        if rank == 0:
            print("epoch %d: loss %.6f, train acc %.4f, valid acc %.4f, %.2f s"
                  % (epoch, loss, train_acc, valid_acc, seconds), flush=True)
        if valid_acc > best[0]:  # the same on every rank: the accuracies are global
            best = (valid_acc, epoch, copy.deepcopy(module.state_dict()))
    module.load_state_dict(best[2])
    test_acc = accuracy(module, test.epoch(0))
    if rank == 0:
        print("test accuracy %.4f (best valid %.4f at epoch %d)" % (test_acc, best[0], best[1]),
              flush=True)
    for l in (train, valid, test):
        l.close()
    ds.close()
    dist.destroy_process_group()
    return {"test_acc": test_acc, "valid_acc": best[0], "best_epoch": best[1]}


if __name__ == "__main__":
    main()
