#!/usr/bin/env python3
"""GraphSAGE on NeighborLoader minibatches, as a PyTorch Geometric user writes it.

examples/pyg_switch/ holds two copies of this script: neighborloader_pyg.py imports PyG's
NeighborLoader, neighborloader_graphdirect.py graphdirect's; nothing else differs
(python/tests/test_pyg.py checks it and runs the graphdirect one).

    python3 neighborloader_graphdirect.py data.pt --epochs 3    # a PyG Data saved by torch.save

(with graphdirect installed: `pip install .` in the source tree, or PYTHONPATH=python and
GRAPHDIRECT_LIB=build/libgraphdirect.so.0 in a build tree).
"""
import argparse

import torch
import torch.nn.functional as F
from torch_geometric.nn import GraphSAGE

from torch_geometric.loader import NeighborLoader


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("data", help="a torch_geometric.data.Data saved with torch.save")
    p.add_argument("--epochs", type=int, default=3)
    args = p.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    data = torch.load(args.data, weights_only=False)

    train_loader = NeighborLoader(data, num_neighbors=[15, 10], batch_size=512,
                                  input_nodes=data.train_mask, shuffle=True)
    test_loader = NeighborLoader(data, num_neighbors=[15, 10], batch_size=2048,
                                 input_nodes=data.test_mask)
    model = GraphSAGE(data.num_features, hidden_channels=128, num_layers=2,
                      out_channels=int(data.y.max()) + 1).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.005)

    for epoch in range(1, args.epochs + 1):
        model.train()
        total = 0.0
        for batch in train_loader:
            batch = batch.to(device)
            optimizer.zero_grad()
            out = model(batch.x, batch.edge_index)[:batch.batch_size]
            loss = F.cross_entropy(out, batch.y[:batch.batch_size])
            loss.backward()
            optimizer.step()
            total += loss.item()
        print("epoch %d: loss %.4f" % (epoch, total / len(train_loader)))

    model.eval()
    correct = count = 0
    with torch.no_grad():
        for batch in test_loader:
            batch = batch.to(device)
            pred = model(batch.x, batch.edge_index)[:batch.batch_size].argmax(-1)
            correct += int((pred == batch.y[:batch.batch_size]).sum())
            count += batch.batch_size
    print("test accuracy %.4f" % (correct / count))
    return correct / count


if __name__ == "__main__":
    main()
