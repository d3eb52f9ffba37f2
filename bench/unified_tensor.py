#!/usr/bin/env python3
"""graphdirect.UnifiedTensor against what PyTorch users do today (issue 18, item 2, targets).

One run, one table in host memory (default 8 GiB of 512-byte float32 rows, as PyTorch-Direct
measured), one set of random ids (default 1M, on the GPU), each way timed by CUDA events on the
same stream, the median of --reps:
  unified       ut[ids]: the GPU gathers the rows from the registered table (graphdirect);
  index+copy    table[ids.cpu()] (torch.index_select on every host core) then .to("cuda"),
                through pinned memory as a careful user would (pin_memory of the gathered rows);
  cupy take     cupy.take over the same registered memory (cupy.cuda.runtime.hostRegister and a
                device pointer), when CuPy is installed;
  dma ceiling   one cudaMemcpy of as many bytes from pinned memory (the link's bandwidth).
Each result is checked equal to table[ids]. Printed: GB/s of useful rows for each, and the
ratios the issue asks for: unified / the C gather's bandwidth (`graphdirect bench gather`,
given with --c-gbs from the same machine) >= 0.90, and unified / index+copy >= 2.5.

Usage (on the GPU machine):
  GRAPHDIRECT_LIB=build/libgraphdirect.so.0 PYTHONPATH=python python3 bench/unified_tensor.py \
      --json $OUT/unified.json [--c-gbs X]
"""
import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import graphdirect  # noqa: E402


def timed(fn, reps, stream):
    """Median milliseconds of fn() on stream, by CUDA events, after one warm-up."""
    fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(stream)
        fn()
        b.record(stream)
        b.synchronize()
        ms.append(a.elapsed_time(b))
    return statistics.median(ms)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gib", type=float, default=8.0, help="table size in GiB")
    p.add_argument("--row-bytes", type=int, default=512)
    p.add_argument("--ids", type=int, default=1 << 20)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--c-gbs", type=float, default=0.0,
                   help="the C gather's GB/s at this row size (graphdirect bench gather)")
    p.add_argument("--json")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("unified_tensor: no CUDA GPU")
    dev = torch.device("cuda", 0)
    cols = a.row_bytes // 4
    rows = int(a.gib * (1 << 30)) // a.row_bytes
    torch.manual_seed(1)
    table = torch.zeros((rows, cols), dtype=torch.float32)
    table[:, 0].normal_()  # every row touched (resident), rows told apart
    ids = torch.randint(0, rows, (a.ids,), device=dev)
    ref = table[ids.cpu()].to(dev)
    useful = a.ids * a.row_bytes / 1e9
    s = torch.cuda.current_stream(dev)
    res = {"rows": rows, "row_bytes": a.row_bytes, "ids": a.ids, "device": torch.cuda.get_device_name(0)}

    ut = graphdirect.UnifiedTensor(table, device=dev)
    assert torch.equal(ut[ids], ref)
    res["unified_ms"] = timed(lambda: ut[ids], a.reps, s)

    threads = torch.get_num_threads()
    ids_host = ids.cpu()

    def index_copy():
        rows_h = torch.index_select(table, 0, ids_host).pin_memory()
        return rows_h.to(dev, non_blocking=True)
    assert torch.equal(index_copy(), ref)
    res["index_copy_ms"] = timed(index_copy, a.reps, s)
    res["torch_threads"] = threads

    pinned = torch.empty(a.ids * cols, dtype=torch.float32).pin_memory()
    dst = torch.empty_like(pinned, device=dev)
    res["dma_ms"] = timed(lambda: dst.copy_(pinned, non_blocking=True), a.reps, s)

    try:
        import cupy
        ptr = ut._table.data_ptr()  # already registered by the UnifiedTensor (portable, mapped)
        mem = cupy.cuda.UnownedMemory(ptr, rows * a.row_bytes, ut)
        host = cupy.ndarray((rows, cols), cupy.float32, cupy.cuda.MemoryPointer(mem, 0))
        ids_c = cupy.asarray(ids)
        with cupy.cuda.ExternalStream(s.cuda_stream):
            got = cupy.take(host, ids_c, axis=0)
        assert torch.equal(torch.as_tensor(got, device=dev), ref)

        def take():
            with cupy.cuda.ExternalStream(s.cuda_stream):
                cupy.take(host, ids_c, axis=0)
        res["cupy_take_ms"] = timed(take, a.reps, s)
    except Exception as e:  # no CuPy, or it refuses the memory: say so
        res["cupy_take_error"] = "%s: %s" % (type(e).__name__, e)

    for k in ("unified", "index_copy", "dma", "cupy_take"):
        if k + "_ms" in res:
            res[k + "_gbs"] = useful / (res[k + "_ms"] / 1e3)
    res["unified_over_index_copy"] = res["unified_gbs"] / res["index_copy_gbs"]
    res["unified_over_dma"] = res["unified_gbs"] / res["dma_gbs"]
    if a.c_gbs > 0:
        res["unified_over_c_gather"] = res["unified_gbs"] / a.c_gbs
    for k in ("unified", "index_copy", "cupy_take", "dma"):
        if k + "_gbs" in res:
            print("%-11s %8.2f GB/s  (%.3f ms)" % (k, res[k + "_gbs"], res[k + "_ms"]))
    print("unified / index+copy = %.2f (target >= 2.5); unified / DMA = %.2f%s" % (
        res["unified_over_index_copy"], res["unified_over_dma"],
        "; unified / C gather = %.2f (target >= 0.90)" % res["unified_over_c_gather"]
        if a.c_gbs > 0 else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    ut.close()


if __name__ == "__main__":
    main()
