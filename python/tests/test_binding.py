#!/usr/bin/env python3
"""The Python binding on the CPU backend: every field of every minibatch against a reference
computed here from the dataset's own arrays, determinism, errors, and object lifetimes.

Usage: GRAPHDIRECT_LIB=build/libgraphdirect.so.0 python3 python/tests/test_binding.py
Exit 0 pass, 1 fail, 77 skip (no numpy).
"""
import ctypes
import gc
import os
import re
import subprocess
import sys
import tempfile
import unittest

from _common import HERE, np, run_unittest

import graphdirect
from graphdirect import _dlpack, _lib


def alloc_stats():
    blocks, nbytes = ctypes.c_int64(), ctypes.c_int64()
    _lib.lib.gd_alloc_stats(ctypes.byref(blocks), ctypes.byref(nbytes))
    return blocks.value, nbytes.value


class Reference:
    """The dataset's arrays as numpy copies, and the checks of a batch against them."""

    def __init__(self, ds):
        self.indptr = np.from_dlpack(ds.array("indptr")).copy()
        self.indices = np.from_dlpack(ds.array("indices")).astype(np.int64)
        self.features = np.from_dlpack(ds.array("features")).copy()
        self.labels = np.from_dlpack(ds.array("labels")).astype(np.int64)
        self.split = {s: np.from_dlpack(ds.array(s + "_idx")).astype(np.int64)
                      for s in ("train", "valid", "test")}
        n = self.indptr.size - 1
        self.num_nodes = n
        deg = np.diff(self.indptr)
        self.degree = deg
        dst = np.repeat(np.arange(n, dtype=np.int64), deg)
        self.edge_keys = np.unique(dst * n + self.indices)

    def check_batch(self, tc, batch, fanouts, to_np=np.from_dlpack):
        """Every field of batch, as numpy (to_np: Array -> numpy array), against the dataset;
        returns the seeds."""
        x_ids = to_np(batch.input_nodes)
        tc.assertEqual(x_ids.dtype, np.int64)
        tc.assertEqual(x_ids.shape, (batch.num_input,))
        tc.assertEqual(len(np.unique(x_ids)), x_ids.size, "input nodes repeat")
        tc.assertTrue(((x_ids >= 0) & (x_ids < self.num_nodes)).all())
        seeds = x_ids[:batch.num_seeds]

        feats = to_np(batch.features)
        tc.assertEqual(feats.dtype, np.float32)
        tc.assertEqual(feats.shape, (batch.num_input, self.features.shape[1]))
        np.testing.assert_array_equal(feats, self.features[x_ids])

        labels = to_np(batch.labels)
        tc.assertEqual(labels.dtype, np.int64)
        tc.assertEqual(labels.shape, (batch.num_seeds,))
        np.testing.assert_array_equal(labels, self.labels[seeds])

        blocks = batch.blocks
        tc.assertEqual(len(blocks), len(fanouts))
        tc.assertEqual(blocks[0].num_src, batch.num_input)
        tc.assertEqual(blocks[-1].num_dst, batch.num_seeds)
        for layer, blk in enumerate(blocks):
            if layer > 0:
                tc.assertEqual(blk.num_src, blocks[layer - 1].num_dst)
            tc.assertLessEqual(blk.num_dst, blk.num_src)
            tc.assertEqual(blk.sizes, (blk.num_src, blk.num_dst))
            indptr = to_np(blk.indptr)
            indices = to_np(blk.indices)
            tc.assertEqual((indptr.dtype, indices.dtype), (np.int32, np.int32))
            tc.assertEqual(indptr.shape, (blk.num_dst + 1,))
            tc.assertEqual(indices.shape, (blk.num_edges,))
            tc.assertEqual(indptr[0], 0)
            tc.assertEqual(indptr[-1], blk.num_edges)
            counts = np.diff(indptr).astype(np.int64)
            tc.assertTrue((counts >= 0).all())
            tc.assertTrue(((indices >= 0) & (indices < blk.num_src)).all())
            # Every edge is a real in-neighbour of its destination, drawn once.
            dst_local = np.repeat(np.arange(blk.num_dst, dtype=np.int64), counts)
            g_src = x_ids[indices.astype(np.int64)]
            g_dst = x_ids[dst_local]
            keys = g_dst * self.num_nodes + g_src
            tc.assertTrue(np.isin(keys, self.edge_keys).all(), "an edge that is not in the graph")
            tc.assertEqual(len(np.unique(keys)), keys.size, "a neighbour drawn twice")
            # Layer 0 is the outermost hop, drawn with the last fanout.
            fan = fanouts[len(fanouts) - 1 - layer]
            deg = self.degree[x_ids[:blk.num_dst]]
            want = deg if fan == -1 else np.minimum(deg, fan)
            np.testing.assert_array_equal(counts, want)
        return seeds.copy()  # a view would keep the batch's buffers from being reused


def batch_digest(batch, to_np=np.from_dlpack):
    """Everything in a batch as bytes, for comparing runs."""
    parts = [to_np(batch.input_nodes).tobytes(), to_np(batch.labels).tobytes(),
             to_np(batch.features).tobytes()]
    for blk in batch.blocks:
        parts += [to_np(blk.indptr).tobytes(), to_np(blk.indices).tobytes()]
    return b"".join(parts)


def seeds_of(batch):
    return np.from_dlpack(batch.input_nodes)[:batch.num_seeds].copy()


def draws(batch, num_nodes):
    """Per layer, (the destination nodes, every edge as dst * num_nodes + src, sorted), in
    global ids."""
    ids = np.from_dlpack(batch.input_nodes)
    out = []
    for blk in batch.blocks:
        counts = np.diff(np.from_dlpack(blk.indptr)).astype(np.int64)
        dst = np.repeat(ids[:blk.num_dst], counts)
        src = ids[np.from_dlpack(blk.indices).astype(np.int64)]
        out.append((ids[:blk.num_dst].copy(), np.sort(dst * num_nodes + src)))
    return out


def epoch_digests(loader, epoch=None):
    it = loader if epoch is None else loader.epoch(epoch)
    return [batch_digest(b) for b in it]


class BindingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="gd-py-")
        cls.dir = os.path.join(cls.tmp.name, "tiny")
        graphdirect.generate("tiny", seed=3, out=cls.dir).close()
        cls.ds = graphdirect.Dataset(cls.dir)
        cls.ref = Reference(cls.ds)

    @classmethod
    def tearDownClass(cls):
        cls.ds.close()
        cls.tmp.cleanup()

    def loader(self, **kw):
        args = dict(mode="cpu", fanouts=[5, 3], batch_size=300, threads=2)
        args.update(kw)
        return graphdirect.Loader(self.ds, **args)

    def trainer(self, **kw):
        args = dict(mode="cpu", fanouts=[5, 3], batch_size=512, hidden=32, dropout=0.3, lr=0.01,
                    threads=2, seed=1)
        args.update(kw)
        return graphdirect.Trainer(self.ds, **args)

    # ------------------------------------------------------------ library and structs

    def test_context(self):
        # Objects keep the C context: closing the Context first is allowed.
        ctx = graphdirect.Context(device=0)
        self.assertIn("device=0", repr(ctx))
        loader = self.loader(context=ctx)
        trainer = self.trainer(context=ctx)
        ctx.close()
        ctx.close()
        self.assertIn("closed", repr(ctx))
        self.assertGreater(sum(1 for _ in loader), 0)
        loader.close()
        trainer.fit(1)
        trainer.close()
        with self.assertRaises(ValueError):
            self.loader(context=ctx)
        with self.assertRaises(TypeError):
            self.loader(context="cuda:0")
        with self.assertRaises(ValueError):  # devices as PyTorch names them, not "0"
            graphdirect.Context(device="0")
        with self.assertRaises(graphdirect.GraphdirectError):
            graphdirect.Context(device=-1)
        # The default context of a device: one while referenced, apart from explicit ones.
        d, e = graphdirect.Context.default(0), graphdirect.Context.default(0)
        self.assertEqual(d._handle(), e._handle())
        self.assertEqual(d.info(), dict(device=0, is_default=True, pinned_ranges=0,
                                        pinned_bytes=0, pinned_users=0, rank=0, world_size=1))
        with graphdirect.Context(0) as c:
            self.assertNotEqual(c._handle(), d._handle())
            self.assertFalse(c.info()["is_default"])
        d.close()
        e.close()
        with self.assertRaises(graphdirect.GraphdirectError):
            graphdirect.Context.default(-1)
        # share_registry: checked arguments; a context joins another's (empty) registry.
        with graphdirect.Context(0) as a, graphdirect.Context(0) as b:
            with self.assertRaises(TypeError):
                a.share_registry("b")
            a.share_registry(b)
            a.share_registry(b)  # again: nothing to do
            self.assertEqual(a.info()["pinned_ranges"], b.info()["pinned_ranges"])

    def test_torch_imports_after_graphdirect(self):
        # Regression, "import graphdirect; import torch fails in torch (undefined symbol:
        # ncclCommResume)": libgraphdirect loaded the CUDA toolkit's older libnccl.so.2 first,
        # and torch got it by soname. The binding now loads PyTorch's NCCL first when PyTorch
        # ships one; both orders must work, in fresh processes.
        probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True)
        if probe.returncode != 0:
            self.skipTest("torch cannot be imported here")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
        for code in ("import graphdirect, torch; torch.zeros(2).sum()",
                     "import torch, graphdirect; torch.zeros(2).sum()"):
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env=env)
            self.assertEqual(r.returncode, 0, "%s:\n%s" % (code, r.stderr[-2000:]))

    def test_version_and_library(self):
        self.assertRegex(graphdirect.version(), r"^\d+\.\d+\.\d+$")
        self.assertEqual(graphdirect.__version__, graphdirect.version())
        self.assertTrue(os.path.exists(graphdirect.library_path()) or
                        "/" not in graphdirect.library_path())
        self.assertEqual(graphdirect.status_string(0), "success")
        self.assertIn(graphdirect.has_cuda(), (True, False))
        self.assertGreaterEqual(graphdirect.device_count(), 0)

    def c_size_of(self, call):
        """The C sizeof of a struct, from the library's refusal of size = 1."""
        with self.assertRaises(graphdirect.GraphdirectError) as cm:
            call()
        m = re.search(r"this library's is (\d+)", cm.exception.message)
        self.assertIsNotNone(m, cm.exception.message)
        return int(m.group(1))

    def test_struct_sizes_match_the_library(self):
        lib, check, byref = _lib.lib, _lib.check, ctypes.byref
        out = ctypes.c_void_p()

        def bad(cls):
            s = cls.new()
            s.size = 1
            return s
        model = os.path.join(self.tmp.name, "sizes.gdc")
        hetero = graphdirect.generate("mag-tiny")
        quick = _lib.FitOptions.new()
        quick.epochs = quick.test = quick.exact_test = 0
        with self.loader() as l, self.trainer() as t, graphdirect.Context(0) as ctx:
            t.save(model)
            b = next(iter(l))
            calls = {
                "gd_train_options": lambda: check(lib.gd_trainer_create(
                    self.ds._ptr(), byref(bad(_lib.TrainOptions)), byref(out))),
                "gd_model_info": lambda: check(lib.gd_model_get_info(
                    None, byref(bad(_lib.ModelInfo)))),
                "gd_trainer_info": lambda: check(lib.gd_trainer_get_info(
                    t._ptr, byref(bad(_lib.TrainerInfo)))),
                "gd_fit_options": lambda: check(lib.gd_trainer_fit(
                    t._ptr, byref(bad(_lib.FitOptions)), None)),
                "gd_fit_result": lambda: check(lib.gd_trainer_fit(
                    t._ptr, byref(quick), byref(bad(_lib.FitResult)))),
                "gd_checkpoint_info": lambda: check(lib.gd_checkpoint_read_info(
                    model.encode(), byref(bad(_lib.CheckpointInfo)))),
                "gd_dataset_open_options": lambda: check(lib.gd_dataset_open(
                    self.dir.encode(), byref(bad(_lib.DatasetOpenOptions)), byref(out))),
                "gd_generate_options": lambda: check(lib.gd_generate(
                    byref(bad(_lib.GenerateOptions)), byref(out))),
                "gd_stripe_options": lambda: check(lib.gd_dataset_stripe(
                    self.dir.encode(), (ctypes.c_char_p * 1)(self.dir.encode()), 1,
                    byref(bad(_lib.StripeOptions)))),
                "gd_context_options": lambda: check(lib.gd_context_create(
                    byref(bad(_lib.ContextOptions)), byref(out))),
                "gd_context_info": lambda: check(lib.gd_context_get_info(
                    ctx._handle(), byref(bad(_lib.ContextInfo)))),
                "gd_loader_options": lambda: check(lib.gd_loader_create(
                    self.ds._ptr(), byref(bad(_lib.LoaderOptions)), byref(out))),
                "gd_loader_info": lambda: check(lib.gd_loader_get_info(
                    l._ptr, byref(bad(_lib.LoaderInfo)))),
                "gd_batch_info": lambda: check(lib.gd_batch_get_info(
                    b._ptr, byref(bad(_lib.BatchInfo)))),
                "gd_node_type_info": lambda: check(lib.gd_dataset_node_type(
                    hetero._ptr(), 0, byref(bad(_lib.NodeTypeInfo)))),
                "gd_edge_type_info": lambda: check(lib.gd_dataset_edge_type(
                    hetero._ptr(), 0, byref(bad(_lib.EdgeTypeInfo)))),
            }
            self.assertEqual(set(calls), set(_lib.SIZED_STRUCTS))
            for name, call in calls.items():
                cls, _init = _lib.SIZED_STRUCTS[name]
                self.assertEqual(ctypes.sizeof(cls), self.c_size_of(call), name)
        # The plain structs: their sizes on an LP64 ABI.
        self.assertEqual(ctypes.sizeof(_lib.ArrayView), 32)
        self.assertEqual(ctypes.sizeof(_lib.Block), 40)
        self.assertEqual(ctypes.sizeof(_dlpack.DLTensor), 48)
        self.assertEqual(ctypes.sizeof(_dlpack.DLManagedTensor), 64)

    def test_defaults_mirror_the_init_macros(self):
        o = _lib.LoaderOptions.new()
        self.assertEqual((o.num_layers, list(o.fanouts[:2]), o.batch_size, o.split, o.shuffle,
                          o.depth, o.gpu_cache_bytes, o.graph_cache_bytes),
                         (2, [10, 5], 1024, 4, 1, 3, -1, -1))
        d = _lib.DatasetOpenOptions.new()
        self.assertEqual((d.mode, d.validate_graph), (0, 1))
        t = _lib.TrainOptions.new()
        self.assertEqual((t.mode, t.model, t.num_layers, list(t.fanouts[:2]), t.batch_size,
                          t.hidden, t.dropout, t.lr, t.weight_decay, t.gpu_cache_bytes,
                          t.graph_cache_bytes, t.gpu_mem_budget, t.depth, t.mlp),
                         (None, None, 2, [10, 5], 1024, 128, 0.5, 3e-3, 0.0, -1, -1, 0, 3, 0))
        f = _lib.FitOptions.new()
        self.assertEqual((f.epochs, f.validate, f.keep_best, f.test, f.exact_test,
                          f.checkpoint_every, f.resume, f.max_batches, f.report_every),
                         (1, 1, 1, 1, 1, 1, 0, 0, 0))

    def test_status_names_come_from_the_library(self):
        names = _lib.STATUS_NAMES
        self.assertEqual(len(names), 16)
        self.assertEqual((names[0], names[1], names[13], names[14], names[15]),
                         ("GD_OK", "GD_ERR_INVALID_ARG", "GD_ERR_INTERNAL",
                          "GD_ERR_ALREADY_REGISTERED", "GD_ERR_COMM"))
        self.assertEqual((_lib.GD_OK, _lib.GD_ERR_INVALID_ARG, _lib.GD_ERR_NOT_FOUND), (0, 1, 8))
        for code, name in names.items():
            self.assertEqual(_lib.STATUS[name], code)
            self.assertNotEqual(_lib.lib.gd_status_string(code), b"unknown status")
        self.assertIsNone(_lib.lib.gd_status_name(len(names)))
        self.assertEqual(graphdirect.GraphdirectError(5, "x").status_name, "GD_ERR_RANGE")

    def test_new_structs_carry_the_binding_size(self):
        for name, (cls, _init) in _lib.SIZED_STRUCTS.items():
            self.assertEqual(cls.new().size, ctypes.sizeof(cls), name)

    def test_import_error_names_what_was_tried(self):
        env = dict(os.environ, GRAPHDIRECT_LIB="/nonexistent/libgraphdirect.so.0")
        code = "import graphdirect"
        r = subprocess.run([sys.executable, "-c", code], env=env, cwd=os.path.dirname(HERE),
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ImportError", r.stderr)
        self.assertIn("/nonexistent/libgraphdirect.so.0 ($GRAPHDIRECT_LIB)", r.stderr)
        self.assertIn("GRAPHDIRECT_LIB", r.stderr)

    def test_arrays_held_to_exit_do_not_crash_it(self):
        # Regression (test_pyg crashed at exit on the H100): a numpy array over a dataset's
        # memory in a class attribute is freed in the interpreter's last collection, after
        # graphdirect's modules are torn down; its deleter and DLManagedTensor must still be
        # there. PYTHONMALLOC=debug poisons freed memory so that a stale read crashes.
        code = """
import os, sys, tempfile, unittest
import numpy as np
import graphdirect

class Held(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        path = os.path.join(cls.tmp.name, "t")
        graphdirect.generate("tiny", seed=7, out=path).close()
        cls.ds = graphdirect.Dataset(path)
        cls.x = np.from_dlpack(cls.ds.array("features"))
        cls.unconsumed = cls.ds.array("labels").__dlpack__()

    @classmethod
    def tearDownClass(cls):
        cls.ds.close()
        cls.tmp.cleanup()

    def test_held(self):
        self.assertEqual(self.x.shape[0], self.ds.num_nodes)

unittest.main()
"""
        env = dict(os.environ, PYTHONMALLOC="debug",
                   PYTHONPATH=os.path.dirname(HERE) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])

    # ---------------------------------------------------------------------- dataset

    def test_stripe_keeps_the_rows(self):
        """graphdirect.stripe: the table over two directories, the same rows, the files named;
        a bad call raises and changes nothing."""
        path = os.path.join(self.tmp.name, "striped")
        d0, d1 = os.path.join(self.tmp.name, "d0"), os.path.join(self.tmp.name, "d1")
        os.makedirs(d0)
        os.makedirs(d1)
        graphdirect.generate("tiny", seed=3, out=path).close()
        with graphdirect.Dataset(path) as ds:
            self.assertEqual(ds.feature_files["files"], [os.path.join(path, "features.npy")])
            want = np.from_dlpack(ds.array("features")).copy()
        with self.assertRaises(ValueError):
            graphdirect.stripe(path, [])
        with self.assertRaises(graphdirect.GraphdirectError) as cm:
            graphdirect.stripe(path, [d0, os.path.join(self.tmp.name, "missing")])
        self.assertIn("missing", cm.exception.message)
        self.assertEqual(os.listdir(d0), [])
        graphdirect.stripe(path, [d0, d1], unit_bytes=1 << 16)
        with graphdirect.Dataset(path) as ds:
            f = ds.feature_files
            self.assertEqual(len(f["files"]), 2)
            self.assertTrue(f["files"][0].startswith(d0) and f["files"][1].startswith(d1))
            self.assertGreater(f["unit_rows"], 0)
            np.testing.assert_array_equal(np.from_dlpack(ds.array("features")), want)
        self.assertFalse(os.path.exists(os.path.join(path, "features.npy")))

    def test_dataset_matches_numpy_load(self):
        ds = self.ds
        self.assertEqual(ds.name, "synthetic-tiny")
        self.assertEqual(ds.num_nodes, self.ref.num_nodes)
        self.assertEqual(ds.num_edges, self.ref.indices.size)
        self.assertEqual(ds.feature_dim, self.ref.features.shape[1])
        self.assertGreater(ds.num_classes, 1)
        for name in _lib.ARRAY_IDS:
            want = np.load(os.path.join(self.dir, name + ".npy"))
            a = ds.array(name)
            self.assertEqual(a.shape, want.shape)
            self.assertEqual(a.dtype, str(want.dtype))
            self.assertEqual(a.device, "cpu")
            self.assertEqual(a.__dlpack_device__(), (1, 0))
            np.testing.assert_array_equal(np.from_dlpack(a), want)
        self.assertTrue(ds.has("labels"))
        with self.assertRaises(ValueError):
            ds.array("nope")

    def test_generate_is_deterministic_and_in_memory(self):
        a = graphdirect.generate("tiny", seed=5, nodes=2000)
        b = graphdirect.generate("tiny", seed=5, nodes=2000)
        c = graphdirect.generate("tiny", seed=6, nodes=2000)
        self.assertIsNone(a.path)
        self.assertEqual(a.num_nodes, 2000)
        ia, ib, ic = (np.from_dlpack(d.array("indices")) for d in (a, b, c))
        np.testing.assert_array_equal(ia, ib)
        self.assertFalse(ia.shape == ic.shape and (ia == ic).all())
        for d in (a, b, c):
            d.close()
        self.assertEqual(ia.sum(), ib.sum())  # still readable after close

    def test_dataset_array_outlives_the_dataset(self):
        ds = graphdirect.generate("tiny", seed=1, nodes=1500)
        before = _dlpack.live_python_tensors()
        f = np.from_dlpack(ds.array("features"))
        want = f.copy()
        self.assertEqual(_dlpack.live_python_tensors(), before + 1)
        ds.close()
        with self.assertRaises(ValueError):
            ds.num_nodes
        del ds
        gc.collect()
        np.testing.assert_array_equal(f, want)
        del f
        gc.collect()
        self.assertEqual(_dlpack.live_python_tensors(), before)

    def test_dataset_errors(self):
        with self.assertRaises(graphdirect.GraphdirectError) as cm:
            graphdirect.Dataset(os.path.join(self.tmp.name, "missing"))
        e = cm.exception
        self.assertIn(e.status_name, ("GD_ERR_IO", "GD_ERR_NOT_FOUND"))
        self.assertIn("missing", e.message)
        self.assertEqual(str(e), "%s: %s" % (e.status_name, e.message))
        self.assertEqual(graphdirect.last_error(), e.message)
        with self.assertRaises(graphdirect.GraphdirectError) as cm:
            graphdirect.generate("huge")
        self.assertIn("huge", cm.exception.message)
        with self.assertRaises(TypeError):
            graphdirect.Dataset(3)

    # ----------------------------------------------------------------------- loader

    def test_every_field_of_an_epoch(self):
        fanouts = [4, 3, -1]
        with self.loader(fanouts=fanouts, batch_size=256) as l:
            self.assertEqual(l.mode, "cpu")
            self.assertEqual(l.device, "cpu")
            self.assertFalse(l.on_device)
            train = self.ref.split["train"]
            self.assertEqual(l.num_seeds, train.size)
            self.assertEqual(len(l), -(-train.size // 256))
            self.assertEqual(l.feature_dim, self.ref.features.shape[1])
            seen = []
            for i, b in enumerate(l):
                self.assertEqual(b.index, i)
                self.assertEqual(b.epoch, 0)
                self.assertEqual(b.device, "cpu")
                self.assertEqual(b.num_seeds, min(256, train.size - 256 * i))
                seen.append(self.ref.check_batch(self, b, fanouts))
            self.assertEqual(len(seen), len(l))
            seeds = np.concatenate(seen)
            self.assertEqual(sorted(seeds.tolist()), sorted(train.tolist()))
            self.assertFalse((seeds == train).all(), "shuffle=True kept the order")

    def test_in_order_splits_and_drop_last(self):
        for split in ("valid", "test"):
            with self.loader(split=split, shuffle=False, batch_size=100, drop_last=True) as l:
                ids = self.ref.split[split]
                self.assertEqual(len(l), ids.size // 100)
                seeds = [self.ref.check_batch(self, b, [5, 3]) for b in l]
                np.testing.assert_array_equal(np.concatenate(seeds), ids[:len(l) * 100])

    def test_deterministic_per_seed_and_epoch(self):
        with self.loader(seed=7) as a, self.loader(seed=7) as b, self.loader(seed=8) as c:
            a0, a1 = epoch_digests(a), epoch_digests(a)
            self.assertEqual(a.current_epoch, 1)
            self.assertEqual(epoch_digests(b, epoch=1), a1)
            self.assertEqual(epoch_digests(b, epoch=0), a0)
            self.assertNotEqual(a0, a1)
            self.assertNotEqual(epoch_digests(c, epoch=0), a0)
            self.assertEqual(epoch_digests(a, epoch=0), a0)  # epochs can be replayed
        with self.loader(seed=7, threads=1) as d:
            self.assertEqual(epoch_digests(d), a0)  # whatever the thread count

    def test_loader_errors(self):
        with self.assertRaises(ValueError):
            self.loader(mode="gpu")
        with self.assertRaises(ValueError):
            self.loader(fanouts=[])
        with self.assertRaises(ValueError):
            self.loader(fanouts=[5, -2])
        with self.assertRaises(ValueError):
            self.loader(split="training")
        with self.assertRaises(ValueError):
            self.loader(gpu_cache="lots", mode="zero-copy")
        # Regression, "the Python binding crashes the process": threads=100000 segfaulted in
        # libgomp and threads=10**9 exited the interpreter; integers >= 2^32 in fanouts wrapped.
        for kw in (dict(fanouts=[2**32, 5]), dict(fanouts=[5, 2**31]), dict(threads=10**10),
                   dict(batch_size=2**64), dict(depth=2**32 + 3)):
            with self.assertRaises(ValueError):
                self.loader(**kw)
        for kw in (dict(batch_size=0), dict(depth=1), dict(depth=9), dict(threads=100000),
                   dict(threads=10**9), dict(threads=-1), dict(host_gather="dma")):
            with self.assertRaises(graphdirect.GraphdirectError) as cm:
                self.loader(**kw)
            self.assertEqual(cm.exception.status_name, "GD_ERR_INVALID_ARG")
            self.assertTrue(cm.exception.message)
        if graphdirect.device_count() == 0:
            with self.assertRaises(graphdirect.GraphdirectError) as cm:
                self.loader(mode="all-gpu")
            self.assertIn(cm.exception.status_name, ("GD_ERR_NO_DEVICE", "GD_ERR_UNSUPPORTED"))
        with self.assertRaises(TypeError):
            graphdirect.Loader("data/tiny")
        with self.loader() as l:
            with self.assertRaises(ValueError):
                l.next_batch()  # no epoch started
            with self.assertRaises(ValueError):
                l.epoch(-1)

    def test_parse_size(self):
        from graphdirect.loader import parse_size
        # As the command line reads sizes: K, M, G, T x1000, Ki, Mi, Gi, Ti x1024.
        self.assertEqual(parse_size("4G", "x"), 4 * 10 ** 9)
        self.assertEqual(parse_size("4GB", "x"), 4 * 10 ** 9)
        self.assertEqual(parse_size("4Gi", "x"), 4 << 30)
        self.assertEqual(parse_size("512M", "x"), 512 * 10 ** 6)
        self.assertEqual(parse_size("512MiB", "x"), 512 << 20)
        self.assertEqual(parse_size("1.5GiB", "x"), 3 << 29)
        self.assertEqual(parse_size("64k", "x"), 64000)
        self.assertEqual(parse_size(1000, "x"), 1000)
        self.assertEqual(parse_size(None, "x"), -1)
        for bad in ("4X", "", "-1G"):
            with self.assertRaises(ValueError):
                parse_size(bad, "x")

    def test_device_arg(self):
        from graphdirect._lib import device_arg

        class FakeTorchDevice:  # what torch.device offers: .type and .index
            def __init__(self, kind, index):
                self.type, self.index = kind, index

            def __str__(self):
                return self.type + ("" if self.index is None else ":%d" % self.index)

        self.assertEqual(device_arg(1, "x"), 1)
        self.assertEqual(device_arg("cuda:1", "x"), 1)
        self.assertEqual(device_arg(" cuda:3 ", "x"), 3)
        self.assertEqual(device_arg(FakeTorchDevice("cuda", 2), "x"), 2)
        self.assertIn(device_arg("cuda", "x"), (0,) if "torch" not in sys.modules else
                      (sys.modules["torch"].cuda.current_device()
                       if sys.modules["torch"].cuda.is_available() else 0,))
        for bad in ("cpu", "gpu:1", "cuda:x", FakeTorchDevice("cpu", None), True, 1.5):
            with self.assertRaises((ValueError, TypeError)):
                device_arg(bad, "x")
        with self.assertRaisesRegex(ValueError, 'mode="cpu"'):
            device_arg("cpu", "x")

    def test_default_mode_is_auto(self):
        # A plain Loader works on any machine: mode auto picks the CPU without a GPU.
        with graphdirect.Loader(self.ds, fanouts=[3], batch_size=64, device="cuda:0") as l:
            self.assertGreater(next(iter(l)).num_seeds, 0)

    def test_epoch_iteration_rules(self):
        with self.loader() as l:
            it = iter(l)
            first = next(it)
            self.assertEqual(first.epoch, 0)
            it2 = iter(l)  # epoch 1 starts: epoch 0's held batch is released
            self.assertTrue(first.released)
            with self.assertRaises(ValueError):
                first.features
            with self.assertRaises(ValueError):
                next(it)  # the stale iterator of epoch 0
            self.assertEqual(next(it2).epoch, 1)
            n = sum(1 for _ in l.epoch(5))
            self.assertEqual(n, len(l))
            self.assertEqual(l.current_epoch, 5)
            self.assertEqual(next(iter(l)).epoch, 6)

    def test_held_batches_and_manual_release(self):
        depth = 3
        # max_held=0: no memory beyond the ring; the batch after a full ring is refused.
        with self.loader(depth=depth, max_held=0) as l:
            l.epoch(0)
            held = []
            with self.assertRaises(graphdirect.GraphdirectError) as cm:
                for _ in range(depth + 1):
                    held.append(l.next_batch())
            self.assertIn("still held", cm.exception.message)
            self.assertIn("max_held_bytes", cm.exception.message)
            self.assertGreaterEqual(len(held), depth - 1)
            first = held[0]
            first.release()
            first.release()  # twice is fine
            with first:
                pass
            nxt = l.next_batch()
            self.assertEqual(nxt.index, len(held))
            for b in held[1:] + [nxt]:
                with b:
                    pass
                self.assertTrue(b.released)

    def _epoch_arrays(self, l, epoch, keep):
        """Every batch of an epoch as numpy copies; keep: also hold each batch's arrays."""
        out, kept = [], []
        for b in l.epoch(epoch):
            ids, x = np.from_dlpack(b.input_nodes), np.from_dlpack(b.features)
            out.append((b.index, ids.copy(), x.copy(), np.from_dlpack(b.labels).copy()))
            if keep:
                kept.append((ids, x))
        return out, kept

    def test_keeping_every_batch_of_an_epoch(self):
        # ys.append(y) for a whole epoch: each held batch keeps its memory, the ring takes
        # another set, and what was kept still reads as it was handed out.
        with self.loader(depth=2) as ref:
            want, _ = self._epoch_arrays(ref, 0, keep=False)
        with self.loader(depth=2) as l:
            self.assertGreater(l.set_bytes, 0)
            self.assertGreater(l.max_held_bytes, 0)
            got, kept = self._epoch_arrays(l, 0, keep=True)
            self.assertEqual(len(got), len(want))
            self.assertGreaterEqual(l.sets_outside, len(want) - 2)
            for (i, ids, x, y), (j, ids2, x2, y2), (kid, kx) in zip(want, got, kept):
                self.assertEqual(i, j)
                np.testing.assert_array_equal(ids, ids2)
                np.testing.assert_array_equal(x, x2)
                np.testing.assert_array_equal(y, y2)
                np.testing.assert_array_equal(kid, ids)  # the held memory was not rewritten
                np.testing.assert_array_equal(kx, x)
            # The next epoch reuses the released sets' memory instead of taking more.
            outside = l.sets_outside
            kept = None
            again, _ = self._epoch_arrays(l, 1, keep=False)
            self.assertEqual(l.sets_outside, outside)
            self.assertEqual(len(again), len(want))

    def test_held_batches_past_the_bound(self):
        # Room for one set outside the ring: the fourth held batch (depth 2) is refused, and
        # the message names the batches that hold memory.
        with self.loader(depth=2) as probe:
            one = probe.set_bytes
        with self.loader(depth=2, max_held=one) as l:
            l.epoch(0)
            held = [l.next_batch() for _ in range(3)]
            with self.assertRaises(graphdirect.GraphdirectError) as cm:
                l.next_batch()
            msg = cm.exception.message
            self.assertIn("max_held_bytes", msg)
            self.assertIn("0 of epoch 0", msg)
            self.assertIn("2 of epoch 0", msg)
            held[0].release()  # its memory becomes the spare the ring takes
            self.assertEqual(l.next_batch().index, 3)

    def test_dropping_a_batch_releases_it_at_once(self):
        # No reference cycle between a batch and its arrays: dropping the last reference
        # releases the batch without waiting for the garbage collector.
        gc.disable()
        try:
            with self.loader(depth=2) as l:
                l.epoch(0)
                for _ in range(len(l)):
                    b = l.next_batch()
                    b.features, b.labels, b.blocks  # fill the batch's cache of arrays
                    arr = b.input_nodes
                    del b
                    with self.assertRaises(ValueError):
                        arr.__dlpack__()  # its batch is gone
                self.assertIsNone(l.next_batch())
        finally:
            gc.enable()

    def test_arrays_held_across_iterations(self):
        # The natural loop keeps the previous batch's arrays until the next is rebound.
        with self.loader(depth=2) as l:
            for b in l:
                x = np.from_dlpack(b.features)  # noqa: F841
                y = np.from_dlpack(b.labels)  # noqa: F841

    # -------------------------------------------------------------------- lifetimes

    def test_exports_outlive_release_and_close(self):
        l = self.loader()
        it = iter(l)
        b = next(it)
        f = np.from_dlpack(b.features)
        ids = np.from_dlpack(b.input_nodes)
        ind = np.from_dlpack(b.blocks[0].indices)
        want = (f.copy(), ids.copy(), ind.copy())
        arr = b.features
        b.release()
        with self.assertRaises(ValueError) as cm:
            np.from_dlpack(arr)
        self.assertIn("released", str(cm.exception))
        with self.assertRaises(ValueError):
            b.blocks
        l.close()
        l.close()
        with self.assertRaises(ValueError):
            next(it)
        with self.assertRaises(ValueError):
            iter(l)
        del l, it, b, arr
        gc.collect()
        for got, w in zip((f, ids, ind), want):
            np.testing.assert_array_equal(got, w)

    def test_batch_unusable_after_loader_close(self):
        l = self.loader()
        b = next(iter(l))
        feats = b.features  # an Array taken before the close
        l.close()
        self.assertTrue(b.released)
        for get in (lambda: b.features.shape, lambda: b.labels, lambda: np.from_dlpack(feats),
                    lambda: b.blocks):
            with self.assertRaises(ValueError) as cm:
                get()
            self.assertIn("loader was closed", str(cm.exception))
        b.release()

    def test_closing_the_dataset_closes_its_loaders(self):
        ds = graphdirect.Dataset(self.dir)
        l = graphdirect.Loader(ds, mode="cpu", fanouts=[3], batch_size=500)
        b = next(iter(l))
        x = np.from_dlpack(b.input_nodes)
        ds.close()
        self.assertTrue(l.closed)
        self.assertTrue(b.released)
        self.assertEqual(x.size, b.num_input)
        self.assertTrue((x >= 0).all())

    def test_a_dropped_dataset_lives_on_in_its_loader(self):
        l = graphdirect.Loader(graphdirect.generate("tiny", seed=2, nodes=3000), mode="cpu",
                               fanouts=[3, 2], batch_size=400)
        gc.collect()
        self.assertFalse(l.closed)
        self.assertEqual(sum(1 for _ in l), len(l))
        l.close()

    def test_no_leak_and_unconsumed_capsules(self):
        gc.collect()
        base = alloc_stats()[0]
        for _ in range(2):
            l = self.loader(depth=2)
            for b in l:
                cap = b.features.__dlpack__()
                self.assertEqual(_dlpack.capsule_name(cap), "dltensor")
                del cap  # never consumed: the destructor must call the deleter
                used = b.input_nodes.__dlpack__()
                np.from_dlpack(_Capsule(used))  # consumed: renamed, owned by numpy
                self.assertEqual(_dlpack.capsule_name(used), "used_dltensor")
                del used
                kept = np.from_dlpack(b.labels)
            del b, l
            gc.collect()
            self.assertGreater(kept.size, 0)
            del kept
            gc.collect()
        self.assertEqual(alloc_stats()[0], base, "gd_malloc blocks leaked")

    def test_every_export_path_of_a_batch(self):
        # A batch exports every field in one call the first time one is asked for and hands
        # the tensors out from there; a second export of a field, or an export on another
        # stream, gets a fresh tensor. Whatever the path, the memory is the batch's, the
        # tensors outlive the batch, and nothing leaks.
        gc.collect()
        base = alloc_stats()[0]
        with self.loader(depth=3) as l:
            l.epoch(0)
            b = l.next_batch()
            first = np.from_dlpack(b.features)
            again = np.from_dlpack(b.features)  # not the one exported with the others
            self.assertEqual(first.ctypes.data, again.ctypes.data)
            self.assertEqual(first.ctypes.data, b.features.data_ptr)
            ids = np.from_dlpack(_Capsule(b.input_nodes.__dlpack__(stream=12345)))  # no stream
            self.assertEqual(ids.ctypes.data, b.input_nodes.data_ptr)
            blk = b.blocks[-1]
            self.assertEqual(np.from_dlpack(blk.indptr).ctypes.data, blk.indptr.data_ptr)
            self.assertEqual(blk.indptr.shape, (blk.num_dst + 1,))
            self.assertEqual(b.labels.shape, (b.num_seeds,))
            want = first.copy()
            kept = b.blocks[0].indices.__dlpack__()  # unconsumed when the batch is released
            dropped = b.labels.__dlpack__()
            del dropped  # unconsumed and gone before the release
            unread = b.labels  # its address never asked while the batch lived
            b.release()
            with self.assertRaises(ValueError):
                unread.data_ptr
            with self.assertRaises(ValueError):
                b.blocks
            # The capsule made before the release is still a valid "dltensor" to consume.
            self.assertEqual(_dlpack.capsule_name(kept), "dltensor")
            late = np.from_dlpack(_Capsule(kept))
            self.assertEqual(_dlpack.capsule_name(kept), "used_dltensor")
            self.assertTrue((late >= 0).all())
            held = l.next_batch()  # the ring goes on while those tensors live
            cap = held.features.__dlpack__()  # settled at the release, dropped unconsumed
            held.release()
            del cap, kept
            np.testing.assert_array_equal(first, want)
            del first, again, ids, late
        gc.collect()
        self.assertEqual(alloc_stats()[0], base, "gd_malloc blocks leaked")

    def test_dlpack_protocol_arguments(self):
        with self.loader() as l:
            b = next(iter(l))
            a = b.features
            self.assertEqual(a.__dlpack_device__(), (1, 0))
            self.assertEqual(a.ndim, 2)
            self.assertEqual(len(a), b.num_input)
            self.assertIn("float32", repr(a))
            self.assertNotEqual(a.data_ptr, 0)
            self.assertEqual(np.from_dlpack(a).ctypes.data, a.data_ptr)  # no copy
            with self.assertRaises(BufferError):
                a.__dlpack__(copy=True)
            with self.assertRaises(BufferError):
                a.__dlpack__(dl_device=(2, 0))
            cap = a.__dlpack__(stream=None, max_version=(1, 0), dl_device=(1, 0), copy=False)
            self.assertEqual(_dlpack.capsule_name(cap), "dltensor")
        sp = _dlpack.stream_pointer
        self.assertIsNone(sp(None, True))
        self.assertIsNone(sp(1, True))
        self.assertIsNone(sp(-1, True))
        self.assertEqual(sp(2, True), 2)  # cudaStreamPerThread
        self.assertEqual(sp(0x7f0012345678, True), 0x7f0012345678)
        self.assertIsNone(sp(12345, False))  # host memory needs no stream
        with self.assertRaises(ValueError):
            sp(0, True)
        with self.assertRaises(TypeError):
            sp("s", True)


    # ------------------------------------------------------------- data parallelism

    def test_loader_shards_cover_each_global_minibatch(self):
        # Rank r of w at batch B gives, for every minibatch b, seeds [r * B, (r + 1) * B) of
        # global minibatch b of one loader at batch w * B, with the same neighbours drawn for
        # every node. World 2 at 300 leaves rank 1 an empty last batch (6103 train seeds).
        B, n = 300, self.ref.num_nodes
        for w in (2, 3):
            with self.loader(batch_size=w * B, seed=5) as whole:
                self.assertEqual((whole.rank, whole.world_size, whole.global_batch_size),
                                 (0, 1, w * B))
                # The whole loader's batches are checked elsewhere; the ranks' are checked
                # against the dataset in epoch 0 (check_batch is slow) and against the whole.
                want = {e: [(seeds_of(b), draws(b, n)) for b in whole.epoch(e)]
                        for e in (0, 1)}
            for r in range(w):
                with self.loader(batch_size=B, seed=5, rank=r, world_size=w) as l:
                    self.assertEqual((l.rank, l.world_size, l.global_batch_size), (r, w, w * B))
                    self.assertIn("rank=%d, world_size=%d" % (r, w), repr(l))
                    self.assertEqual(len(l), len(want[0]))
                    self.assertEqual(l.num_seeds, self.ref.split["train"].size)
                    for e in (0, 1):
                        got = 0
                        for b in l.epoch(e):
                            seeds, glob = want[e][b.index][0], want[e][b.index][1]
                            mine = (self.ref.check_batch(self, b, [5, 3]) if e == 0
                                    else seeds_of(b))
                            np.testing.assert_array_equal(mine, seeds[r * B:(r + 1) * B])
                            # Each node of the rank's blocks drew what it drew in the whole.
                            for layer, ((nodes, keys), (gnodes, gkeys)) in enumerate(
                                    zip(draws(b, n), glob)):
                                self.assertTrue(np.isin(nodes, gnodes).all())
                                np.testing.assert_array_equal(
                                    keys, gkeys[np.isin(gkeys // n, nodes)],
                                    "rank %d of %d, epoch %d, minibatch %d, layer %d"
                                    % (r, w, e, b.index, layer))
                            if b.num_seeds == 0:
                                self.assertEqual(b.num_input, 0)
                                self.assertEqual(np.from_dlpack(b.features).shape, (0, 32))
                                self.assertEqual(np.from_dlpack(b.labels).shape, (0,))
                                self.assertEqual([blk.sizes for blk in b.blocks], [(0, 0)] * 2)
                            got += 1
                        self.assertEqual(got, len(want[e]))
        with self.loader(batch_size=B, rank=1, world_size=2) as l:
            self.assertEqual([b.num_seeds for b in l][-1], 0)

    def test_loader_shard_defaults_and_errors(self):
        with self.loader(seed=2) as a, self.loader(seed=2, rank=0, world_size=1) as b:
            self.assertEqual((a.rank, a.world_size, a.global_batch_size), (0, 1, 300))
            self.assertNotIn("rank", repr(a))
            self.assertEqual(epoch_digests(a), epoch_digests(b))
        with graphdirect.Context(0) as ctx, self.loader(context=ctx) as l:
            self.assertEqual((l.rank, l.world_size), (0, 1))  # the context's
        for kw, bad in ((dict(rank=0), "world_size=None"), (dict(world_size=2), "rank=None"),
                        (dict(rank=0, world_size=0), "0"), (dict(rank=0, world_size=-2), "-2"),
                        (dict(rank=0, world_size=True), "True"),
                        (dict(rank=0, world_size=2.0), "2.0"),
                        (dict(rank=2, world_size=2), "2"), (dict(rank=-1, world_size=2), "-1"),
                        (dict(rank="0", world_size=2), "'0'"),
                        (dict(rank=0, world_size=2**31), str(2**31))):
            with self.assertRaises(ValueError) as cm:
                self.loader(**kw)
            self.assertIn(bad, str(cm.exception), kw)
            self.assertIn("graphdirect.Loader", str(cm.exception))

    def test_comm_id(self):
        # Never a communicator here: an id is only NCCL's unique id (no GPU is touched).
        if graphdirect.comm_available():
            cid = graphdirect.comm_id()
            self.assertIsInstance(cid, bytes)
            self.assertEqual(len(cid), 128)
        else:
            self.check_no_nccl()
        # What a build without NCCL says, whatever this build is.
        real = _lib.lib.gd_comm_available
        _lib.lib.gd_comm_available = lambda: 0
        try:
            self.assertFalse(graphdirect.comm_available())
            self.check_no_nccl()
        finally:
            _lib.lib.gd_comm_available = real

    def check_no_nccl(self):
        with self.assertRaises(graphdirect.GraphdirectError) as cm:
            graphdirect.comm_id()
        self.assertEqual(cm.exception.status_name, "GD_ERR_UNSUPPORTED")
        self.assertIn("without NCCL", cm.exception.message)

    def test_distributed_info(self):
        env = {k: os.environ.pop(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK")
               if k in os.environ}
        try:
            self.assertEqual(graphdirect.distributed_info(), (0, 1, 0))
            os.environ.update(RANK="3", WORLD_SIZE="4", LOCAL_RANK="1")
            self.assertEqual(graphdirect.distributed_info(), (3, 4, 1))
        finally:
            for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
                os.environ.pop(k, None)
            os.environ.update(env)

    def test_context_and_trainer_ranks(self):
        # Every refusal comes before a communicator would be made (none is made here).
        cid = b"\1" * 128
        for kw, exc, bad in ((dict(world_size=2), ValueError, "comm_id"),
                             (dict(world_size=2, comm_id=cid[:64]), ValueError, "64 bytes"),
                             (dict(world_size=2, comm_id="x" * 128), TypeError, "str"),
                             (dict(world_size=0), ValueError, "0"),
                             (dict(rank=1, world_size=1), ValueError, "1"),
                             (dict(rank=-1, world_size=2, comm_id=cid), ValueError, "-1"),
                             (dict(world_size=2, comm_id=cid, comm_timeout=0), ValueError, "0"),
                             (dict(comm_timeout="1s"), ValueError, "'1s'")):
            with self.assertRaises(exc) as cm:
                graphdirect.Context(0, **kw)
            self.assertIn(bad, str(cm.exception), kw)
            with self.assertRaises(exc) as cm:
                self.trainer(**dict(dict(rank=0, world_size=1), **kw))
            self.assertIn(bad, str(cm.exception), kw)
        # One rank needs no id (torchrun with one process may pass one anyway).
        with graphdirect.Context(0, rank=0, world_size=1, comm_id=cid, comm_timeout=5) as c:
            self.assertEqual((c.info()["rank"], c.info()["world_size"]), (0, 1))
            c.abort("no communicator: nothing to do")
            self.assertEqual(repr(c), "graphdirect.Context(device=0)")
            with self.assertRaises(ValueError):
                self.trainer(context=c, rank=0, world_size=1)
        with self.assertRaises(ValueError):
            self.trainer(world_size=1)  # rank missing
        with self.trainer(rank=0, world_size=1) as t:
            ctx = t.context
            self.assertIsInstance(ctx, graphdirect.Context)
            self.assertEqual((t.rank, t.world_size, ctx.info()["world_size"]), (0, 1, 1))
            t.fit(1, exact_test=False)
        self.assertIn("closed", repr(ctx))  # the trainer's own context goes with it
        with graphdirect.Context(0) as c:
            with self.trainer(context=c) as t:
                self.assertIs(t.context, c)
                self.assertEqual((t.rank, t.world_size), (0, 1))
            self.assertEqual(c.info()["world_size"], 1)  # the caller's context stays open

    def test_pyg_ddp_example_under_torchrun(self):
        # examples/pyg_ddp.py on 2 CPU ranks (gloo) at batch 300 gives the losses of 1 rank at
        # batch 600: the loss normalisation is right, and rank 1's empty last batch is taken.
        import importlib.util
        for m in ("torch", "torch_geometric"):
            if importlib.util.find_spec(m) is None:
                self.skipTest("%s is not installed" % m)
        script = os.path.join(HERE, "..", "..", "examples", "pyg_ddp.py")
        env = dict(os.environ, GRAPHDIRECT_LIB=_lib.path, OMP_NUM_THREADS="1")

        def run(n, batch):
            p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                                "--nproc_per_node=%d" % n, script, self.dir, "--device", "cpu",
                                "--epochs", "2", "--batch", str(batch), "--dropout", "0",
                                "--threads", "1"], env=env, capture_output=True, text=True,
                               timeout=240)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            losses = [float(x) for x in re.findall(r"^epoch \d+: loss ([0-9.]+)", p.stdout,
                                                   re.MULTILINE)]
            self.assertEqual(len(losses), 2, p.stdout)
            self.assertIn("%d ranks x %d seeds" % (n, batch), p.stdout)
            return losses, re.search(r"test accuracy ([0-9.]+)", p.stdout).group(1)

        two, one = run(2, 300), run(1, 600)
        np.testing.assert_allclose(two[0], one[0], rtol=1e-4)
        self.assertLess(two[0][1], two[0][0])
        self.assertEqual(two[1], one[1])

    # ------------------------------------------------------------------------ trainer

    def test_trainer_fit_evaluate_save_load(self):
        seen, steps = [], []
        with self.trainer() as t:
            info = t.info
            self.assertEqual((info["mode"], info["model"], info["mlp"], info["epochs_done"]),
                             ("cpu", "sage", False, 0))
            self.assertGreater(info["num_params"], 0)
            self.assertIn("cpu", info["plan"])
            r = t.fit(3, on_epoch=seen.append,
                      progress=lambda e, done, total, loss: steps.append((e, done, total)),
                      report_every=1)
            self.assertEqual([s["epoch"] for s in seen], [0, 1, 2])
            self.assertEqual(r["history"], seen)
            self.assertLess(seen[-1]["loss"], seen[0]["loss"])
            self.assertEqual(sorted({e for e, _, _ in steps}), [0, 1, 2])
            self.assertTrue(all(1 <= done <= total for _, done, total in steps))
            self.assertEqual((r["start_epoch"], r["epochs_done"], r["stopped"]), (0, 3, False))
            best = max(s["valid_acc"] for s in seen)
            self.assertEqual(r["best_valid"], best)
            self.assertEqual(seen[r["best_epoch"]]["valid_acc"], best)
            self.assertGreater(r["test_acc"], 0.3)
            self.assertEqual(t.evaluate("test"), r["test_acc"])
            self.assertEqual(t.evaluate("test", exact=True), r["test_exact"])
            self.assertGreater(t.evaluate("valid", exact=True), 0.3)
            self.assertEqual(t.info["epochs_done"], 3)
            path = os.path.join(self.tmp.name, "model.gdc")
            t.save(path)
            exact = t.evaluate("test", exact=True)
        ci = graphdirect.checkpoint_info(path)
        self.assertEqual((ci["model"], ci["hidden"], ci["num_layers"], ci["epochs_done"],
                          ci["has_state"]), ("sage", 32, 2, 3, False))
        with self.trainer() as t2:
            t2.load(path)
            self.assertEqual(t2.evaluate("test", exact=True), exact)

    def test_trainer_callbacks_stop_and_raise(self):
        with self.trainer() as t:
            r = t.fit(10, on_epoch=lambda s: s["epoch"] == 1)
            self.assertEqual((r["epochs_done"], r["stopped"]), (2, True))
            self.assertIsNotNone(r["test_acc"])

            class Stop(Exception):
                pass

            def boom(s):
                raise Stop("from on_epoch")
            with self.assertRaises(Stop):
                t.fit(10, on_epoch=boom)
            self.assertEqual(t.info["epochs_done"], 3)

            def halt(epoch, done, total, loss):
                raise Stop("from progress")
            with self.assertRaises(Stop):
                t.fit(10, progress=halt)
            self.assertEqual(t.info["epochs_done"], 3)
            r = t.fit(4, test=False, exact_test=False)
            self.assertEqual((r["start_epoch"], r["epochs_done"], r["test_acc"]), (3, 4, None))

    def test_trainer_resume_reproduces_the_run(self):
        a = os.path.join(self.tmp.name, "ck-a")
        b = os.path.join(self.tmp.name, "ck-b")
        with self.trainer() as t:
            full = t.fit(3, checkpoint=a)
        self.assertTrue(os.path.exists(os.path.join(a, "checkpoint.gdc")))
        self.assertTrue(os.path.exists(os.path.join(a, "best.gdc")))
        with self.trainer() as t:
            t.fit(1, checkpoint=b, test=False, exact_test=False)
        with self.trainer() as t:
            r = t.fit(3, checkpoint=b, resume=True)
        self.assertEqual(r["start_epoch"], 1)
        self.assertEqual([s["loss"] for s in r["history"]],
                         [s["loss"] for s in full["history"][1:]])
        self.assertEqual((r["best_epoch"], r["test_acc"], r["test_exact"]),
                         (full["best_epoch"], full["test_acc"], full["test_exact"]))
        with self.trainer(hidden=16) as t:
            with self.assertRaisesRegex(graphdirect.GraphdirectError, "hidden"):
                t.resume(a)
            with self.assertRaisesRegex(graphdirect.GraphdirectError, "hidden"):
                t.load(os.path.join(a, "best.gdc"))

    def test_trainer_checkpoint_dir_not_replaced_nor_shared(self):
        # Regression, "train --checkpoint DIR without --resume silently replaces an earlier
        # run; two runs on one DIR clobber each other": the policy is the library's.
        d = os.path.join(self.tmp.name, "ck-owned")
        with self.trainer() as t:
            t.fit(1, checkpoint=d, test=False, exact_test=False)
        before = graphdirect.checkpoint_info(os.path.join(d, "checkpoint.gdc"))
        with self.trainer() as t:
            with self.assertRaisesRegex(graphdirect.GraphdirectError,
                                        "already holds a run .*1 epochs done.*resume=True"
                                        ".*overwrite=True"):
                t.fit(1, checkpoint=d)
            self.assertEqual(graphdirect.checkpoint_info(os.path.join(d, "checkpoint.gdc")),
                             before)
            with self.trainer() as other:
                with self.assertRaisesRegex(graphdirect.GraphdirectError,
                                            "in use by process %d" % os.getpid()):
                    other.fit(2, checkpoint=d, resume=True)
            r = t.fit(2, checkpoint=d, overwrite=True, test=False, exact_test=False)
            self.assertEqual(r["start_epoch"], 0)
        with self.trainer() as t:
            r = t.fit(3, checkpoint=d, resume=True, test=False, exact_test=False)
            self.assertEqual(r["start_epoch"], 2)

    def test_trainer_host_memory_checked_before_work(self):
        # Regression, "no host-memory check before work": a model whose host memory exceeds
        # the budget is refused at creation, naming the bytes.
        with self.assertRaisesRegex(graphdirect.GraphdirectError,
                                    "host memory, more than the .*1000000 bytes"):
            self.trainer(hidden=512, host_mem_budget="1M")
        with self.trainer(hidden=512, host_mem_budget="1G") as t:
            self.assertEqual(t.info["epochs_done"], 0)

    def test_trainer_errors_and_lifetime(self):
        with self.assertRaisesRegex(graphdirect.GraphdirectError, "unknown training mode"):
            self.trainer(mode="zerocopy")
        with self.assertRaisesRegex(graphdirect.GraphdirectError, "dropout"):
            self.trainer(dropout=1.5)
        with self.assertRaises(ValueError):
            self.trainer(fanouts=[5, -3])
        with self.assertRaises(TypeError):
            graphdirect.Trainer("not a dataset")
        t = self.trainer()
        with self.assertRaises(ValueError):
            t.evaluate("everything")
        with self.assertRaises(ValueError):
            t.fit(-1)
        with self.assertRaisesRegex(graphdirect.GraphdirectError, "checkpoint_dir"):
            t.fit(1, resume=True)
        self.assertIn("graphdirect.Trainer(mode='cpu'", repr(t))
        t.close()
        t.close()
        self.assertEqual(repr(t), "graphdirect.Trainer(closed)")
        with self.assertRaises(ValueError):
            t.evaluate()
        ds = graphdirect.Dataset(self.dir)
        t = graphdirect.Trainer(ds, mode="cpu", fanouts=[3], batch_size=500, hidden=16)
        ds.close()
        self.assertTrue(t.closed)

    def test_trainer_gat(self):
        # GAT through the same Trainer: heads checked, the sampled and the exact (layer-wise,
        # every neighbour) test accuracy, and an exact evaluation.
        with self.assertRaises(ValueError):
            self.trainer(model="gat", heads=0)
        with self.trainer(model="gat", heads=2, hidden=8) as t:
            r = t.fit(2)
            self.assertEqual(t.info["model"], "gat")
            self.assertGreater(r["test_acc"], 0.3)
            self.assertGreater(r["test_exact"], 0.3)
            acc = t.evaluate("test", exact=True)
            self.assertAlmostEqual(acc, r["test_exact"], places=6)

    def test_trainer_no_leak(self):
        gc.collect()
        base = alloc_stats()[0]
        for _ in range(2):
            with self.trainer() as t:
                t.fit(1)
                t.evaluate("valid", exact=True)
            del t
            gc.collect()
        self.assertEqual(alloc_stats()[0], base, "gd_malloc blocks leaked")


class _Capsule:
    """Hands numpy.from_dlpack a capsule that was made earlier."""

    def __init__(self, cap):
        self.cap = cap

    def __dlpack__(self, **kw):
        return self.cap

    def __dlpack_device__(self):
        return (1, 0)


class BringYourOwnDataTest(unittest.TestCase):
    """Dataset.from_arrays / from_pyg / from_scipy and Loader(input_nodes=) (issue 18, item 3):
    the arrays of a generated dataset, handed over as numpy arrays, torch tensors, a PyG-like
    Data and a scipy matrix, give back that dataset; a loader over any seeds visits them."""

    @classmethod
    def setUpClass(cls):
        try:
            import numpy
        except ImportError:
            raise unittest.SkipTest("numpy is not installed")
        cls.np = numpy
        cls.ref = graphdirect.generate("tiny", seed=5)
        np = numpy
        cls.arr = {k: np.from_dlpack(cls.ref.array(k)).copy() for k in
                   ("indptr", "indices", "features", "labels", "train_idx", "valid_idx",
                    "test_idx")}
        ip = cls.arr["indptr"]
        cls.edge_index = np.stack([cls.arr["indices"].astype(np.int64),
                                   np.repeat(np.arange(cls.ref.num_nodes), np.diff(ip))])

    def same(self, ds):
        np = self.np
        self.assertEqual((ds.num_nodes, ds.num_edges, ds.feature_dim, ds.num_classes),
                         (self.ref.num_nodes, self.ref.num_edges, self.ref.feature_dim,
                          self.ref.num_classes))
        for k, want in self.arr.items():
            got = np.from_dlpack(ds.array(k))
            self.assertTrue(np.array_equal(got, want), k)

    def splits(self):
        return dict(train_idx=self.arr["train_idx"], valid_idx=self.arr["valid_idx"],
                    test_idx=self.arr["test_idx"])

    def test_from_edge_index_shuffled(self):
        np = self.np
        perm = np.random.default_rng(0).permutation(self.edge_index.shape[1])
        ds = graphdirect.Dataset.from_arrays(self.edge_index[:, perm],
                                             features=self.arr["features"],
                                             labels=self.arr["labels"], **self.splits())
        self.same(ds)
        # The model sees the same data: one epoch, the same loss as on the source.
        losses = []
        for d in (self.ref, ds):
            with graphdirect.Trainer(d, mode="cpu", fanouts=[5, 5], hidden=16, seed=1) as t:
                losses.append(self._loss(t))
        self.assertEqual(losses[0], losses[1])

    @staticmethod
    def _loss(t):
        seen = []
        t.fit(1, on_epoch=lambda s: seen.append(s["loss"]))
        return seen[0]

    def test_from_csc_borrowed_and_copied(self):
        np = self.np
        x = self.arr["features"].copy()
        ds = graphdirect.Dataset.from_arrays(indptr=self.arr["indptr"],
                                             indices=self.arr["indices"], features=x,
                                             labels=self.arr["labels"], **self.splits())
        self.same(ds)
        # Borrowed: the dataset reads x itself.
        self.assertEqual(ds._view("features").data, x.ctypes.data)
        copied = graphdirect.Dataset.from_arrays(indptr=self.arr["indptr"],
                                                 indices=self.arr["indices"], features=x,
                                                 borrow=False)
        x[0, 0] += 1
        self.assertNotEqual(np.from_dlpack(copied.array("features"))[0, 0], x[0, 0])
        # float64 features are converted, masks become ids.
        mask = np.zeros(self.ref.num_nodes, bool)
        mask[self.arr["train_idx"]] = True
        ds64 = graphdirect.Dataset.from_arrays(self.edge_index, features=x.astype(np.float64),
                                               train_idx=mask)
        self.assertTrue(np.array_equal(np.from_dlpack(ds64.array("train_idx")),
                                       np.sort(self.arr["train_idx"])))

    def test_from_pyg_like_data_and_torch(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        np = self.np

        class Data:  # what PyG's Data offers here
            pass
        d = Data()
        d.edge_index = torch.from_numpy(self.edge_index)
        d.x = torch.from_numpy(self.arr["features"])
        d.y = torch.from_numpy(self.arr["labels"]).view(-1, 1)
        d.num_nodes = self.ref.num_nodes
        for name, key in (("train_mask", "train_idx"), ("val_mask", "valid_idx"),
                          ("test_mask", "test_idx")):
            m = torch.zeros(d.num_nodes, dtype=torch.bool)
            m[torch.from_numpy(self.arr[key])] = True
            setattr(d, name, m)
        ds = graphdirect.Dataset.from_pyg(d)
        self.assertEqual(ds.num_edges, self.ref.num_edges)
        self.assertTrue(np.array_equal(np.from_dlpack(ds.array("valid_idx")),
                                       np.sort(self.arr["valid_idx"])))
        # bfloat16 features stay bfloat16.
        ds16 = graphdirect.Dataset.from_arrays(d.edge_index, features=d.x.to(torch.bfloat16))
        self.assertEqual(ds16.array("features").dtype, "bfloat16")

    def test_from_scipy(self):
        try:
            import scipy.sparse as sp
        except ImportError:
            self.skipTest("scipy is not installed")
        np = self.np
        n = self.ref.num_nodes
        a = sp.coo_matrix((np.ones(self.edge_index.shape[1]), (self.edge_index[0],
                                                                self.edge_index[1])),
                          shape=(n, n))
        ds = graphdirect.Dataset.from_scipy(a, features=self.arr["features"],
                                            labels=self.arr["labels"], **self.splits())
        self.same(ds)

    def test_bad_arrays(self):
        np = self.np
        with self.assertRaisesRegex(ValueError, "one of the two"):
            graphdirect.Dataset.from_arrays()
        with self.assertRaisesRegex(ValueError, r"shape \[2, num_edges\]"):
            graphdirect.Dataset.from_arrays(self.edge_index[0])
        # The nodes are the feature rows: edges past them are named.
        with self.assertRaisesRegex(graphdirect.GraphdirectError, "outside"):
            graphdirect.Dataset.from_arrays(self.edge_index, features=self.arr["features"][:5])
        with self.assertRaisesRegex(ValueError, "rows"):
            graphdirect.Dataset.from_arrays(self.edge_index, features=self.arr["features"],
                                            labels=self.arr["labels"][:5])
        bad = self.edge_index.copy()
        bad[0, 3] = -1
        with self.assertRaisesRegex(graphdirect.GraphdirectError, "negative"):
            graphdirect.Dataset.from_arrays(bad)
        x = self.arr["features"].copy()
        x[7, 1] = np.nan
        with self.assertRaisesRegex(graphdirect.GraphdirectError, "finite"):
            graphdirect.Dataset.from_arrays(self.edge_index, features=x)

    def test_input_nodes(self):
        np = self.np
        n = self.ref.num_nodes
        with graphdirect.Loader(self.ref, mode="cpu", fanouts=[3], batch_size=999,
                                input_nodes=range(n), shuffle=False) as l:
            seen = np.concatenate([np.from_dlpack(b.input_nodes)[:b.num_seeds].copy()
                                   for b in l])
        self.assertTrue(np.array_equal(seen, np.arange(n)))
        ids = np.array([5, 9, 17, n - 1])
        with graphdirect.Loader(self.ref, mode="cpu", fanouts=[3], batch_size=3,
                                input_nodes=ids, shuffle=False) as l:
            got = [np.from_dlpack(b.input_nodes)[:b.num_seeds].tolist() for b in l]
        self.assertEqual(got, [[5, 9, 17], [n - 1]])
        with self.assertRaisesRegex(graphdirect.GraphdirectError, "not a node"):
            graphdirect.Loader(self.ref, mode="cpu", input_nodes=[0, n])
        with self.assertRaisesRegex(graphdirect.GraphdirectError, "twice"):
            graphdirect.Loader(self.ref, mode="cpu", input_nodes=[3, 8, 3])


class HeteroTest(unittest.TestCase):
    """A heterogeneous dataset from Python: its types, a type's table, and R-SAGE training with
    fanouts per (hop, edge type)."""

    def test_types_tables_and_training(self):
        ds = graphdirect.generate("mag-tiny", seed=3)
        types = ds.node_types
        self.assertEqual([t["name"] for t in types],
                         ["paper", "author", "institution", "field_of_study"])
        self.assertEqual(sum(t["count"] for t in types), ds.num_nodes)
        self.assertEqual(ds.target_type, "paper")
        self.assertIn(("author", "writes", "paper"), ds.edge_types)
        try:
            import numpy as np
        except ImportError:
            np = None
        if np is not None:
            paper = np.from_dlpack(ds.type_features("paper"))
            self.assertEqual(paper.shape, (types[0]["count"], 128))
        with self.assertRaisesRegex(ValueError, "has no features"):
            ds.type_features("author")
        with self.assertRaisesRegex(ValueError, "no node type 'venue'"):
            ds.type_features("venue")
        self.assertEqual(graphdirect.generate("tiny").node_types, [])
        common = dict(model="rsage", mode="cpu", batch_size=256, hidden=32, seed=1)
        by_list = graphdirect.Trainer(ds, relation_fanouts=[
            {"cites": 6, ("author", "writes", "paper"): 3}, {"cites": 2}], **common)
        by_text = graphdirect.Trainer(ds, relation_fanouts="cites=6,writes=3;cites=2", **common)
        a = by_list.fit(epochs=2, exact_test=False)
        b = by_text.fit(epochs=2, exact_test=False)
        self.assertEqual([h["loss"] for h in a["history"]], [h["loss"] for h in b["history"]])
        self.assertGreater(a["test_acc"], 0.5)
        with self.assertRaises(graphdirect.GraphdirectError):
            graphdirect.Trainer(ds, relation_fanouts="venue=3", **common)
        with self.assertRaises(graphdirect.GraphdirectError):
            graphdirect.Trainer(ds, model="sage", mode="cpu")
        by_list.close()
        by_text.close()
        # R-GCN (a root and bias per node type) trains through the same Trainer.
        rgcn = graphdirect.Trainer(ds, **dict(common, model="rgcn"))
        self.assertEqual(rgcn.info["model"], "rgcn")
        r = rgcn.fit(epochs=2)
        self.assertGreater(r["test_acc"], 0.5)
        self.assertGreater(r["test_exact"], 0.5)
        rgcn.close()


class UnifiedTensorCPUTest(unittest.TestCase):
    """graphdirect.UnifiedTensor over a numpy table without a GPU: ut[ids] is table[ids]; bad ids
    are refused naming them (test_gpu.py has the GPU path)."""

    def test_numpy_table(self):
        try:
            import numpy as np
        except ImportError:
            self.skipTest("numpy is not installed")
        rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
        for dtype in (np.float32, np.float16, np.int64):
            x = (rng.standard_normal((3000, 17)) * 100).astype(dtype)
            ids = rng.integers(0, 3000, 10000)
            with graphdirect.UnifiedTensor(x, device=None, max_ids=777) as ut:
                self.assertEqual(len(ut), 3000)
                got = ut[ids]
                self.assertEqual(got.dtype, x.dtype)
                self.assertTrue(np.array_equal(got, x[ids]))
                with self.assertRaisesRegex(graphdirect.GraphdirectError, "3000"):
                    ut[np.array([0, 3000])]
        with self.assertRaises(ValueError):
            graphdirect.UnifiedTensor(np.zeros((4, 3, 2), np.float32), device=None)
        with self.assertRaises(ValueError):
            graphdirect.UnifiedTensor(np.zeros((4, 3), np.float32)[:, ::2], device=None)


if __name__ == "__main__":
    run_unittest()
