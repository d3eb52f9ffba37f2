#!/usr/bin/env python3
"""The binding with PyTorch: zero-copy GPU tensors, streams, the PyG helpers.

On a GPU: torch.from_dlpack of every field of zero-copy and all-gpu minibatches shares the
batch's memory (the same data pointer as gd_batch_array's view), holds the values of the
dataset (the checks of test_binding.py), equals the cpu mode's batches bit for bit, honours
the consumer's stream, and outlives the loader. Without CUDA only the CPU tensor tests run;
without torch everything is skipped (exit 77).

Usage: GRAPHDIRECT_LIB=build/libgraphdirect.so.0 python3 python/tests/test_gpu.py
"""
import gc
import os
import tempfile
import unittest

from _common import np, run_unittest

import graphdirect
import test_binding as tb

try:
    import torch
except ImportError:
    torch = None

HAVE_GPU = (torch is not None and torch.cuda.is_available() and graphdirect.has_cuda() and
            graphdirect.device_count() > 0)


def to_np(array):
    return torch.from_dlpack(array).cpu().numpy()


def edge_index_ref(indptr, indices):
    counts = np.diff(indptr).astype(np.int64)
    dst = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), counts)
    return np.stack([indices.astype(np.int64), dst])


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="gd-pygpu-")
        cls.dir = os.path.join(cls.tmp.name, "tiny")
        graphdirect.generate("tiny", seed=4, out=cls.dir).close()
        cls.ds = graphdirect.Dataset(cls.dir)
        cls.ref = tb.Reference(cls.ds)

    @classmethod
    def tearDownClass(cls):
        cls.ds.close()
        cls.tmp.cleanup()

    def loader(self, **kw):
        args = dict(mode="cpu", fanouts=[5, 3], batch_size=300, gpu_cache="1M")
        args.update(kw)
        return graphdirect.Loader(self.ds, **args)


@unittest.skipIf(torch is None, "torch is not installed")
class TorchCPUTest(Base):
    def test_from_dlpack_shares_host_memory(self):
        with self.loader() as l:
            b = next(iter(l))
            for a in (b.features, b.input_nodes, b.labels, b.blocks[0].indices):
                t = torch.from_dlpack(a)
                self.assertEqual(t.data_ptr(), a.data_ptr)
                self.assertEqual(tuple(t.shape), a.shape)
                self.assertEqual(str(t.dtype), "torch." + a.dtype)
                self.assertEqual(t.device.type, "cpu")

    def test_edge_index(self):
        from graphdirect import pyg
        with self.loader(fanouts=[4, -1]) as l:
            for b in l:
                for blk in b.blocks:
                    ei = pyg.edge_index(blk)
                    self.assertEqual(ei.dtype, torch.int64)
                    self.assertEqual(tuple(ei.shape), (2, blk.num_edges))
                    want = edge_index_ref(np.from_dlpack(blk.indptr),
                                          np.from_dlpack(blk.indices))
                    np.testing.assert_array_equal(ei.numpy(), want)
                    self.assertEqual(pyg.block_sizes(blk), (blk.num_src, blk.num_dst))
                x, y, eis, sizes = pyg.batch_tensors(b)
                self.assertEqual(x.shape[0], b.num_input)
                self.assertEqual(y.shape[0], b.num_seeds)
                self.assertEqual(len(eis), len(sizes))
                del x, y, eis

    def test_tensor_outlives_loader(self):
        l = self.loader()
        b = next(iter(l))
        t = torch.from_dlpack(b.features)
        want = t.clone()
        l.close()
        del l, b
        gc.collect()
        self.assertTrue(torch.equal(t, want))


@unittest.skipIf(not HAVE_GPU, "no CUDA GPU (or torch without CUDA, or a CPU-only library)")
class GPUTest(Base):
    def test_zero_copy_fields(self):
        for mode in ("zero-copy", "all-gpu"):
            with self.subTest(mode=mode), self.loader(mode=mode, fanouts=[4, 3, -1]) as l:
                self.assertTrue(l.on_device)
                self.assertEqual(l.device, "cuda:0")
                for b in l:
                    self.assertEqual(b.device, "cuda:0")
                    for a in [b.input_nodes, b.features, b.labels] + \
                             [x for blk in b.blocks for x in (blk.indptr, blk.indices)]:
                        self.assertEqual(a.__dlpack_device__(), (2, 0))
                        t = torch.from_dlpack(a)
                        self.assertTrue(t.is_cuda)
                        self.assertEqual(t.data_ptr(), a.data_ptr)  # no copy
                        self.assertEqual(tuple(t.shape), a.shape)
                    self.ref.check_batch(self, b, [4, 3, -1], to_np=to_np)

    def test_host_gather_cpu_gives_the_same_batches(self):
        # zero-copy's rows outside the GPU cache (here every row) by CPU gather + DMA: the
        # batches of the zero-copy loads, bit for bit, and the plan says which way.
        with self.loader(mode="zero-copy", gpu_cache=0) as a, \
                self.loader(mode="zero-copy", gpu_cache=0, host_gather="cpu") as b:
            self.assertIn("host rows by CPU gather + DMA", b.plan)
            n = 0
            for x, y in zip(a, b):
                self.assertTrue(torch.equal(torch.from_dlpack(x.features),
                                            torch.from_dlpack(y.features)))
                n += 1
            self.assertGreater(n, 0)

    def test_tensors_fast_path(self):
        # graphdirect.pyg.tensors: every field in one export, the same memory and values as
        # the protocol path, on the default stream and on a side stream.
        import graphdirect.pyg as gp
        s = torch.cuda.Stream()
        with self.loader(mode="zero-copy") as l:
            for i, b in enumerate(l):
                with torch.cuda.stream(s if i % 2 else torch.cuda.current_stream()):
                    ids, x, y, blocks = gp.tensors(b)
                    self.assertEqual(x.data_ptr(), b.features.data_ptr)  # no copy
                    self.assertEqual(ids.data_ptr(), b.input_nodes.data_ptr)
                    self.assertTrue(torch.equal(x, torch.from_dlpack(b.features)))
                    self.assertTrue(torch.equal(y, torch.from_dlpack(b.labels)))
                    self.assertEqual(len(blocks), b.num_layers)
                    for (ip, ix), blk in zip(blocks, b.blocks):
                        self.assertTrue(torch.equal(ip, torch.from_dlpack(blk.indptr)))
                        self.assertTrue(torch.equal(ix, torch.from_dlpack(blk.indices)))

    def test_cupy_from_dlpack(self):
        try:
            import cupy
        except ImportError:
            self.skipTest("cupy is not installed")
        with self.loader(mode="zero-copy") as l:
            for b in l:
                for a in [b.input_nodes, b.features, b.labels] + \
                         [x for blk in b.blocks for x in (blk.indptr, blk.indices)]:
                    c = cupy.from_dlpack(a)
                    self.assertEqual(c.data.ptr, a.data_ptr)  # no copy
                    self.assertEqual(tuple(c.shape), a.shape)
                    self.assertTrue(bool((cupy.asnumpy(c) ==
                                          torch.from_dlpack(a).cpu().numpy()).all()))

    def test_gpu_batches_equal_cpu_batches(self):
        with self.loader(mode="cpu", seed=9) as c:
            want = [tb.batch_digest(b) for b in c.epoch(2)]
        for mode in ("zero-copy", "all-gpu"):
            with self.loader(mode=mode, seed=9) as g:
                got = [tb.batch_digest(b, to_np) for b in g.epoch(2)]
            self.assertEqual(got, want, mode)

    def test_context_registry(self):
        # Zero-copy loaders of one context register the host memory they read in its registry;
        # the default context holds none of it.
        with graphdirect.Context(0) as ctx:
            d = graphdirect.Context.default(0)
            before = d.info()["pinned_ranges"]
            with self.loader(mode="zero-copy", context=ctx) as a, \
                    self.loader(mode="zero-copy", split="valid", context=ctx) as b:
                info = ctx.info()
                self.assertGreater(info["pinned_ranges"], 0)
                self.assertGreaterEqual(info["pinned_users"], info["pinned_ranges"])
                self.assertEqual(d.info()["pinned_ranges"], before)
                self.assertGreater(sum(1 for _ in a), 0)
                self.assertGreater(sum(1 for _ in b), 0)
            d.close()

    def test_streams(self):
        with self.loader(mode="zero-copy") as l:
            s = torch.cuda.Stream()
            for i, b in enumerate(l):
                if i % 3 == 0:
                    with torch.cuda.stream(s):  # torch passes s's handle
                        x = torch.from_dlpack(b.features)
                        ids = torch.from_dlpack(b.input_nodes)
                        got = x.sum(1)
                    s.synchronize()
                elif i % 3 == 1:
                    x = torch.from_dlpack(b.features.__dlpack__(stream=2))  # per-thread default
                    ids = torch.from_dlpack(b.input_nodes.__dlpack__(stream=2))
                    got = x.sum(1)
                else:
                    x = torch.from_dlpack(b.features)  # legacy default stream
                    ids = torch.from_dlpack(b.input_nodes)
                    got = x.sum(1)
                torch.cuda.synchronize()
                want = self.ref.features[ids.cpu().numpy()].sum(1)
                np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-5, atol=1e-5)
                del x, ids, got

    def test_edge_index_on_gpu(self):
        from graphdirect import pyg
        with self.loader(mode="zero-copy") as l:
            b = next(iter(l))
            for blk in b.blocks:
                ei = pyg.edge_index(blk)
                self.assertTrue(ei.is_cuda)
                want = edge_index_ref(to_np(blk.indptr), to_np(blk.indices))
                np.testing.assert_array_equal(ei.cpu().numpy(), want)

    def test_tensors_outlive_loader_and_ring_reuse(self):
        l = self.loader(mode="zero-copy", depth=2)
        it = iter(l)
        b = next(it)
        t = torch.from_dlpack(b.features)
        want = t.clone()
        # The ring moves on around a held tensor only as far as the C loader allows; whatever
        # it allows, the held tensor's memory must not be rewritten.
        try:
            for _ in range(4):
                next(it)
        except (graphdirect.GraphdirectError, StopIteration):
            pass
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(t, want))
        l.close()
        del l, it, b
        gc.collect()
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(t, want))


class UnifiedTensorTest(unittest.TestCase):
    """graphdirect.UnifiedTensor (issue 18, item 2): ut[ids] equals the table's rows, for ids on
    the GPU and on the host, with and without the hot-row GPU cache, on torch's current stream;
    a bad GPU id is reported by check_errors; without a GPU it gathers on the CPU."""

    @classmethod
    def setUpClass(cls):
        if torch is None:
            raise unittest.SkipTest("torch is not installed")
        g = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
        cls.table = torch.randn(20000, 100, generator=g)  # 400-byte rows
        cls.ids = torch.randint(0, 20000, (50000,), generator=g)

    def test_cpu_gather(self):
        ut = graphdirect.UnifiedTensor(self.table, device=None)
        self.assertTrue(torch.equal(ut[self.ids], self.table[self.ids]))
        ut.close()

    @unittest.skipUnless(HAVE_GPU, "no GPU")
    def test_gpu_gather(self):
        ref = self.table[self.ids].cuda()
        for cache in (None, "2M"):
            hot = None if cache is None else torch.bincount(self.ids, minlength=20000)
            with graphdirect.UnifiedTensor(self.table, device="cuda:0", gpu_cache=cache,
                                           hot=hot, max_ids=7000) as ut:
                s = torch.cuda.Stream()
                with torch.cuda.stream(s):  # the gather runs on the current stream
                    out = ut[self.ids.cuda()]
                    out_host_ids = ut[self.ids]
                s.synchronize()
                self.assertTrue(out.is_cuda and torch.equal(out, ref), cache)
                self.assertTrue(torch.equal(out_host_ids, ref), cache)
        with graphdirect.UnifiedTensor(self.table, device=0) as ut:
            bad = self.ids.cuda().clone()
            bad[123] = 20000
            ut[bad]
            with self.assertRaisesRegex(graphdirect.GraphdirectError, "20000"):
                ut.check_errors()
            with self.assertRaises(graphdirect.GraphdirectError):
                ut[torch.tensor([20000])]  # host ids are checked first


if __name__ == "__main__":
    run_unittest()
