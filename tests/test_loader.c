/*
 * The public minibatch loader (gd_loader_*, gd_batch_*; issue 6 item 1). In cpu mode, on a
 * generated dataset: every field of every batch of an epoch equals what the library's own CPU
 * sampler and the dataset give for the same (seed, epoch, minibatch) (input ids, feature rows,
 * labels, blocks); the epoch covers the split once, shuffled per epoch or in order; drop_last;
 * holding batches up to the ring depth and past it (held batches keep their memory, within
 * max_held_bytes); DLPack exports (shape, dtype,
 * device, data pointer, the deleter keeping the memory alive after release and after the
 * loader is destroyed); use after release refused; bad options. Where a GPU is visible, the
 * all-gpu and zero-copy loaders (the latter also with its host rows by CPU gather + DMA) give
 * the same batches as the cpu one, byte for byte, and exports name the GPU.
 */
#include "test.h"

#include "core/cuda.h"

#ifdef GD_HAVE_DLPACK
#include <dlpack/dlpack.h>
#endif

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t num_in, num_seeds;
    int64_t *ids, *labels;
    float *x;
    int64_t num_dst[GD_SAMPLER_MAX_LAYERS], num_src[GD_SAMPLER_MAX_LAYERS],
        num_edges[GD_SAMPLER_MAX_LAYERS];
    int32_t *indptr[GD_SAMPLER_MAX_LAYERS], *indices[GD_SAMPLER_MAX_LAYERS];
} host_batch;

#ifdef GD_WITH_CUDA
/* The test's own stream for reading GPU batches; it outlives every batch read on it. */
static void *read_stream;
#endif

/*
 * A host copy of bytes at src, read on stream (GPU batches) after the caller ordered the stream
 * after the batch with gd_batch_wait.
 */
static void *host_copy(const void *src, size_t bytes, int on_device, void *stream) {
    void *dst = malloc(bytes ? bytes : 1);
    T_ASSERT(dst != NULL);
    if (!on_device) {
        memcpy(dst, src, bytes);
        return dst;
    }
#ifdef GD_WITH_CUDA
    T_OK(gd__cuda_memcpy_async(dst, src, bytes, stream));
    T_OK(gd__cuda_stream_sync(stream));
#else
    (void)stream;
#endif
    return dst;
}

/*
 * A host copy of every field of b, read on a fresh stream of the test's own. Regression, "the
 * loader test read batches on a stream that never waited for them" (test_loader.c:93 failed in
 * the whole suite, 9 of 24 runs as 8 concurrent processes, every run under memcheck): the
 * stream is ordered after the batch with gd_batch_wait before anything reads it.
 */
static host_batch grab(gd_batch_t *b, int layers, int64_t dim) {
    host_batch h;
    gd_batch_info bi = GD_BATCH_INFO_INIT;
    T_OK(gd_batch_get_info(b, &bi));
    void *stream = NULL;
#ifdef GD_WITH_CUDA
    if (bi.on_device && !read_stream) T_OK(gd__cuda_stream_create(bi.device, &read_stream));
    stream = bi.on_device ? read_stream : NULL;
#endif
    T_OK(gd_batch_wait(b, stream));
    T_EQ_INT(bi.num_layers, layers);
    h.num_in = bi.num_input;
    h.num_seeds = bi.num_seeds;
    gd_array_view v;
    T_OK(gd_batch_array(b, GD_BATCH_INPUT_NODES, 0, &v));
    T_EQ_INT(v.shape[0], h.num_in);
    h.ids = host_copy(v.data, (size_t)h.num_in * 8, bi.on_device, stream);
    T_OK(gd_batch_array(b, GD_BATCH_FEATURES, 0, &v));
    T_EQ_INT(v.ndim, 2);
    T_EQ_INT(v.shape[1], dim);
    h.x = host_copy(v.data, (size_t)(h.num_in * dim) * 4, bi.on_device, stream);
    T_OK(gd_batch_array(b, GD_BATCH_LABELS, 0, &v));
    T_EQ_INT(v.shape[0], h.num_seeds);
    h.labels = host_copy(v.data, (size_t)h.num_seeds * 8, bi.on_device, stream);
    for (int l = 0; l < layers; l++) {
        gd_block blk;
        T_OK(gd_batch_block(b, l, &blk));
        h.num_dst[l] = blk.num_dst;
        h.num_src[l] = blk.num_src;
        h.num_edges[l] = blk.num_edges;
        h.indptr[l] = host_copy(blk.indptr, (size_t)(blk.num_dst + 1) * 4, bi.on_device, stream);
        h.indices[l] = host_copy(blk.indices, (size_t)blk.num_edges * 4, bi.on_device, stream);
    }
    return h;
}

static void drop(host_batch *h, int layers) {
    free(h->ids);
    free(h->x);
    free(h->labels);
    for (int l = 0; l < layers; l++) {
        free(h->indptr[l]);
        free(h->indices[l]);
    }
}

static void same_batch(const host_batch *a, const host_batch *b, int layers, int64_t dim) {
    T_EQ_INT(a->num_in, b->num_in);
    T_EQ_INT(a->num_seeds, b->num_seeds);
    T_ASSERT(memcmp(a->ids, b->ids, (size_t)a->num_in * 8) == 0);
    T_ASSERT(memcmp(a->x, b->x, (size_t)(a->num_in * dim) * 4) == 0);
    T_ASSERT(memcmp(a->labels, b->labels, (size_t)a->num_seeds * 8) == 0);
    for (int l = 0; l < layers; l++) {
        T_EQ_INT(a->num_dst[l], b->num_dst[l]);
        T_EQ_INT(a->num_edges[l], b->num_edges[l]);
        T_ASSERT(memcmp(a->indptr[l], b->indptr[l], (size_t)(a->num_dst[l] + 1) * 4) == 0);
        T_ASSERT(memcmp(a->indices[l], b->indices[l], (size_t)a->num_edges[l] * 4) == 0);
    }
}

static int64_t at(const gd_array_view *v, int64_t i, int64_t j) {
    return v->dtype == GD_DTYPE_INT32
               ? ((const int32_t *)v->data)[i * (v->ndim == 2 ? v->shape[1] : 1) + j]
               : ((const int64_t *)v->data)[i * (v->ndim == 2 ? v->shape[1] : 1) + j];
}

/* An epoch of the cpu loader against the library's CPU sampler and the dataset. */
static void check_cpu_epoch(const gd_dataset_t *ds, const gd_loader_options *o, int64_t epoch) {
    gd_loader_t *l;
    T_OK(gd_loader_create(ds, o, &l));
    gd_loader_info li = GD_LOADER_INFO_INIT;
    T_OK(gd_loader_get_info(l, &li));
    T_EQ_STR(li.mode, "cpu");
    T_EQ_INT(li.on_device, 0);
    gd_array_view feat, lab, split;
    T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &feat));
    T_OK(gd_dataset_array(ds, GD_ARRAY_LABELS, &lab));
    T_OK(gd_dataset_array(ds, o->split, &split));
    const int64_t dim = feat.shape[1], n = split.shape[0];
    T_EQ_INT(li.num_seeds, n);
    /* The reference: the same sampler, the same seed order. */
    gd_graph_t *g;
    gd_sampler_t *s;
    gd_minibatch_t *mb;
    T_OK(gd_graph_create_from_dataset(ds, NULL, &g));
    gd_sampler_options so = GD_SAMPLER_OPTIONS_INIT;
    so.max_batch = o->batch_size;
    so.seed = o->seed;
    T_OK(gd_sampler_create(g, o->fanouts, o->num_layers, &so, &s));
    T_OK(gd_minibatch_create(s, &mb));
    int64_t *ids = malloc((size_t)n * 8), *order = malloc((size_t)n * 8), nb;
    for (int64_t i = 0; i < n; i++) ids[i] = at(&split, i, 0);
    if (o->shuffle)
        T_OK(gd_seed_batches(ids, n, o->batch_size, o->seed, epoch, o->drop_last, order, &nb));
    else {
        memcpy(order, ids, (size_t)n * 8);
        nb = o->drop_last ? n / o->batch_size : (n + o->batch_size - 1) / o->batch_size;
    }
    T_EQ_INT(li.batches_per_epoch, nb);
    T_OK(gd_loader_start_epoch(l, epoch));
    int64_t count = 0;
    for (;;) {
        gd_batch_t *b;
        T_OK(gd_loader_next(l, &b));
        if (!b) break;
        const int64_t lo = count * o->batch_size;
        const int64_t cnt = n - lo < o->batch_size ? n - lo : o->batch_size;
        host_batch h = grab(b, o->num_layers, dim);
        T_EQ_INT(h.num_seeds, cnt);
        T_OK(gd_sample(s, order + lo, cnt, 0, epoch, count, NULL, mb));
        const int64_t *rid;
        int64_t rn;
        T_OK(gd_minibatch_input_nodes(mb, &rid, &rn));
        T_EQ_INT(h.num_in, rn);
        T_ASSERT(memcmp(h.ids, rid, (size_t)rn * 8) == 0);
        for (int64_t i = 0; i < cnt; i++) {
            T_EQ_INT(h.ids[i], order[lo + i]); /* seeds first */
            T_EQ_INT(h.labels[i], at(&lab, order[lo + i], 0));
        }
        for (int64_t i = 0; i < rn; i++)
            T_ASSERT(memcmp(h.x + i * dim, (const float *)feat.data + rid[i] * dim,
                            (size_t)dim * 4) == 0);
        for (int ly = 0; ly < o->num_layers; ly++) {
            gd_block rb;
            T_OK(gd_minibatch_block(mb, ly, &rb));
            T_EQ_INT(h.num_edges[ly], rb.num_edges);
            T_ASSERT(memcmp(h.indices[ly], rb.indices, (size_t)rb.num_edges * 4) == 0);
        }
        drop(&h, o->num_layers);
        gd_batch_release(b);
        count++;
    }
    T_EQ_INT(count, nb);
    gd_batch_t *none;
    T_OK(gd_loader_next(l, &none));
    T_ASSERT(none == NULL);
    free(ids);
    free(order);
    gd_minibatch_destroy(mb);
    gd_sampler_destroy(s);
    gd_graph_destroy(g);
    gd_loader_destroy(l);
}

/* The loader's count of sets outside its ring (held batches' memory and spares). */
static int64_t sets_outside(const gd_loader_t *l) {
    gd_loader_info li = GD_LOADER_INFO_INIT;
    T_OK(gd_loader_get_info(l, &li));
    return li.sets_outside;
}

/*
 * Batches held past their turn (ys.append(y) in PyTorch): with the default bound every batch of
 * an epoch may be held, by its handle or by an exported tensor; each keeps the data it was
 * handed out with while the ring goes on (compared with a reference loader's batches, released
 * at once); a new epoch starts with them held; once released their memory is what the ring
 * takes next, not new memory. Past max_held_bytes the next minibatch fails naming the batches
 * that hold memory, and a release lets it go on; with -1 a held set fails at once.
 */
static void held_beyond_ring(const gd_dataset_t *ds, const gd_loader_options *base) {
    gd_array_view feat;
    T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &feat));
    const int64_t dim = feat.shape[1];
    const int L = base->num_layers;
    gd_loader_options o = *base;
    o.depth = 2;
    o.batch_size = base->batch_size / 4;
    gd_loader_t *ref, *l;
    T_OK(gd_loader_create(ds, &o, &ref));
    T_OK(gd_loader_create(ds, &o, &l));
    gd_loader_info li = GD_LOADER_INFO_INIT;
    T_OK(gd_loader_get_info(l, &li));
    const int64_t nb = li.batches_per_epoch;
    T_ASSERT(nb >= 5 && li.set_bytes > 0 && li.max_held_bytes >= (nb - 2) * li.set_bytes);
    host_batch *want = calloc((size_t)nb, sizeof *want);
    gd_batch_t **held = calloc((size_t)nb, sizeof *held);
    struct DLManagedTensor **kept = calloc((size_t)nb, sizeof *kept);
    T_ASSERT(want && held && kept);
    void *stream = NULL;
#ifdef GD_WITH_CUDA
    if (li.on_device && !read_stream) T_OK(gd__cuda_stream_create(li.device, &read_stream));
    stream = li.on_device ? read_stream : NULL;
#endif
    for (int64_t e = 0; e < 3; e++) {
        T_OK(gd_loader_start_epoch(ref, e));
        T_OK(gd_loader_start_epoch(l, e));
        for (int64_t i = 0; i < nb; i++) {
            gd_batch_t *rb;
            T_OK(gd_loader_next(ref, &rb));
            want[i] = grab(rb, L, dim);
            gd_batch_release(rb);
            T_OK(gd_loader_next(l, &held[i]));
            T_ASSERT(held[i] != NULL);
#ifdef GD_HAVE_DLPACK
            /* Every other one is held by its features tensor alone. */
            if (i % 2) {
                T_OK(gd_batch_export(held[i], GD_BATCH_FEATURES, 0, stream, &kept[i]));
                gd_batch_release(held[i]);
                held[i] = NULL;
            }
#endif
        }
        /* What was handed out is intact after the ring went round nb / 2 times. */
        for (int64_t i = 0; i < nb; i++) {
            if (held[i]) {
                host_batch h = grab(held[i], L, dim);
                same_batch(&want[i], &h, L, dim);
                drop(&h, L);
            } else {
#ifdef GD_HAVE_DLPACK
                const size_t bytes = (size_t)(want[i].num_in * dim) * 4;
                float *x = host_copy(kept[i]->dl_tensor.data, bytes, li.on_device, stream);
                T_ASSERT(memcmp(x, want[i].x, bytes) == 0);
                free(x);
#endif
            }
        }
        /*
         * Epoch 0 took nb - 2 sets, and epoch 7 below two more for the ring's two held sets;
         * the later epochs reuse them.
         */
        T_EQ_INT(sets_outside(l), e == 0 ? nb - 2 : nb);
        if (e == 0) {
            /* A new epoch with every batch held: the two ring sets held are replaced. */
            T_OK(gd_loader_start_epoch(l, 7));
            for (;;) {
                gd_batch_t *b;
                T_OK(gd_loader_next(l, &b));
                if (!b) break;
                gd_batch_release(b);
            }
            T_EQ_INT(sets_outside(l), nb);
        }
        for (int64_t i = 0; i < nb; i++) {
            gd_batch_release(held[i]);
#ifdef GD_HAVE_DLPACK
            if (kept[i]) kept[i]->deleter(kept[i]);
#endif
            held[i] = NULL;
            kept[i] = NULL;
            drop(&want[i], L);
        }
    }
    gd_loader_destroy(ref);
    gd_loader_destroy(l);

    /* Room for one set outside the ring. */
    o.max_held_bytes = li.set_bytes;
    T_OK(gd_loader_create(ds, &o, &l));
    T_OK(gd_loader_start_epoch(l, 0));
    for (int i = 0; i < 3; i++) T_OK(gd_loader_next(l, &held[i]));
    gd_batch_t *b3;
    T_FAILS(gd_loader_next(l, &b3), GD_ERR_INVALID_ARG, "max_held_bytes");
    T_ASSERT(strstr(gd_last_error(), "0 of epoch 0, 2 of epoch 0, 1 of epoch 0") != NULL);
    gd_batch_release(held[0]);
    T_OK(gd_loader_next(l, &b3));
    gd_batch_info bi = GD_BATCH_INFO_INIT;
    T_OK(gd_batch_get_info(b3, &bi));
    T_EQ_INT(bi.index, 3);
    T_EQ_INT(sets_outside(l), 1);
    /* Destroyed with batches held: their memory goes with the loader (no leak). */
    gd_loader_destroy(l);

    /* -1: nothing beyond the ring. */
    o.max_held_bytes = -1;
    T_OK(gd_loader_create(ds, &o, &l));
    T_OK(gd_loader_start_epoch(l, 0));
    T_OK(gd_loader_next(l, &held[0]));
    T_OK(gd_loader_next(l, &held[1]));
    T_FAILS(gd_loader_next(l, &b3), GD_ERR_INVALID_ARG, "still held by batch 0");
    /* Destroyed after a failure (as a caller's cleanup does): the failure's message remains. */
    gd_loader_destroy(l);
    T_ASSERT(strstr(gd_last_error(), "still held by batch 0") != NULL);
    o.max_held_bytes = -2;
    T_FAILS(gd_loader_create(ds, &o, &l), GD_ERR_INVALID_ARG, "max_held_bytes -2");
    free(want);
    free(held);
    free(kept);
    fprintf(stderr, "loader %s: batches held past the ring: ok\n", li.mode);
}

static void holding_and_exports(const gd_dataset_t *ds, const gd_loader_options *base) {
    gd_loader_options o = *base;
    o.depth = 2;
    o.max_held_bytes = -1; /* the ring alone: a held set is refused */
    gd_loader_t *l;
    T_OK(gd_loader_create(ds, &o, &l));
    gd_batch_t *b0, *b1, *b2;
    T_FAILS(gd_loader_next(l, &b0), GD_ERR_INVALID_ARG, "no epoch started");
    T_OK(gd_loader_start_epoch(l, 0));
    T_OK(gd_loader_next(l, &b0));
    T_OK(gd_loader_next(l, &b1));
    T_ASSERT(b0 && b1);
    T_FAILS(gd_loader_next(l, &b2), GD_ERR_INVALID_ARG, "release one first");
    gd_batch_info bi = GD_BATCH_INFO_INIT;
    T_OK(gd_batch_get_info(b0, &bi));
    T_EQ_INT(bi.index, 0);
#ifdef GD_HAVE_DLPACK
    struct DLManagedTensor *feat = NULL, *ip = NULL;
    gd_array_view v;
    T_OK(gd_batch_array(b0, GD_BATCH_FEATURES, 0, &v));
    T_OK(gd_batch_export(b0, GD_BATCH_FEATURES, 0, NULL, &feat));
    T_OK(gd_batch_export(b0, GD_BATCH_INDPTR, 1, NULL, &ip));
    T_ASSERT(feat->dl_tensor.data == v.data); /* no copy */
    T_EQ_INT(feat->dl_tensor.ndim, 2);
    T_EQ_INT(feat->dl_tensor.shape[0], v.shape[0]);
    T_EQ_INT(feat->dl_tensor.shape[1], v.shape[1]);
    T_EQ_INT(feat->dl_tensor.dtype.code, kDLFloat);
    T_EQ_INT(feat->dl_tensor.dtype.bits, 32);
    T_EQ_INT(feat->dl_tensor.device.device_type, kDLCPU);
    T_EQ_INT(ip->dl_tensor.dtype.code, kDLInt);
    T_EQ_INT(ip->dl_tensor.dtype.bits, 32);
    const float first = ((const float *)feat->dl_tensor.data)[0];
    struct DLManagedTensor *all[3 + 2 * GD_SAMPLER_MAX_LAYERS];
    T_FAILS(gd_batch_export_all(b0, NULL, all, 3), GD_ERR_INVALID_ARG, "room for 3");
    T_OK(gd_batch_export_all(b0, NULL, all, 3 + 2 * o.num_layers));
    T_ASSERT(all[1]->dl_tensor.data == v.data);
    T_EQ_INT(all[3 + 2]->dl_tensor.shape[0], ip->dl_tensor.shape[0]); /* layer 1's indptr */
    for (int i = 0; i < 3 + 2 * o.num_layers; i++) all[i]->deleter(all[i]);
    /* Released, the batch keeps its set while the tensors live: b2 cannot use it yet. */
    gd_batch_release(b0);
    T_FAILS(gd_batch_array(b0, GD_BATCH_FEATURES, 0, &v), GD_ERR_INVALID_ARG, "released");
    T_FAILS(gd_loader_next(l, &b2), GD_ERR_INVALID_ARG, "release one first");
    ip->deleter(ip);
    /* The loader goes; the tensor's memory stays until its deleter. */
    gd_batch_release(b1);
    gd_loader_destroy(l);
    T_ASSERT(((const float *)feat->dl_tensor.data)[0] == first);
    feat->deleter(feat);
#else
    struct DLManagedTensor *t = NULL;
    T_FAILS(gd_batch_export(b0, GD_BATCH_FEATURES, 0, NULL, &t), GD_ERR_UNSUPPORTED,
            "libdlpack-dev");
    gd_batch_release(b0);
    gd_batch_release(b1);
    gd_loader_destroy(l);
#endif
}

static void gpu_modes(const gd_dataset_t *ds, const gd_loader_options *base) {
    gd_array_view feat;
    T_OK(gd_dataset_array(ds, GD_ARRAY_FEATURES, &feat));
    /*
     * The third run: zero-copy with the rows outside its cache by CPU gather + DMA; the fourth
     * by auto, whose trial changes the way every 6 minibatches (GD_HOST_TRIAL) through eight
     * ways and then keeps one: the batches stay the CPU loader's, bit for bit, throughout.
     */
    const char *modes[] = {"all-gpu", "zero-copy", "zero-copy", "zero-copy"};
    for (int m = 0; m < 4; m++) {
        gd_loader_options oc = *base, og = *base;
        og.mode = modes[m];
        if (m >= 1) og.gpu_cache_bytes = feat.shape[0] * feat.shape[1] * 4 / 3;
        if (m == 2) og.host_gather = "cpu";
        if (m == 3) og.host_gather = "auto";
        T_OK(gd_param_set("GD_HOST_TRIAL", m == 3 ? "6" : NULL));
        gd_loader_t *lc, *lg;
        T_OK(gd_loader_create(ds, &oc, &lc));
        T_OK(gd_loader_create(ds, &og, &lg));
        gd_loader_info li = GD_LOADER_INFO_INIT;
        T_OK(gd_loader_get_info(lg, &li));
        T_EQ_STR(li.mode, modes[m]);
        T_EQ_INT(li.on_device, 1);
        for (int64_t e = 0; e < 2; e++) {
            T_OK(gd_loader_start_epoch(lc, e));
            T_OK(gd_loader_start_epoch(lg, e));
            int64_t count = 0;
            for (;;) {
                gd_batch_t *bc, *bg;
                T_OK(gd_loader_next(lc, &bc));
                T_OK(gd_loader_next(lg, &bg));
                T_ASSERT((bc == NULL) == (bg == NULL));
                if (!bc) break;
                host_batch hc = grab(bc, base->num_layers, feat.shape[1]);
                host_batch hg = grab(bg, base->num_layers, feat.shape[1]);
                same_batch(&hc, &hg, base->num_layers, feat.shape[1]);
#ifdef GD_HAVE_DLPACK
                struct DLManagedTensor *t;
                T_OK(gd_batch_export(bg, GD_BATCH_FEATURES, 0, NULL, &t));
                T_EQ_INT(t->dl_tensor.device.device_type, kDLCUDA);
                t->deleter(t);
#endif
                drop(&hc, base->num_layers);
                drop(&hg, base->num_layers);
                gd_batch_release(bc);
                gd_batch_release(bg);
                count++;
            }
            T_ASSERT(count > 0);
        }
        /* A second loader on the same dataset at once (a validation loader beside the
         * training one): zero-copy shares the registered table and pins a copy of the lists. */
        gd_loader_options ov = og;
        ov.split = GD_ARRAY_VALID_IDX;
        gd_loader_t *lv;
        T_OK(gd_loader_create(ds, &ov, &lv));
        T_OK(gd_loader_start_epoch(lv, 0));
        gd_batch_t *bv;
        T_OK(gd_loader_next(lv, &bv));
        T_ASSERT(bv != NULL);
        gd_batch_release(bv);
        gd_loader_destroy(lc);
        gd_loader_destroy(lg);
        T_OK(gd_loader_start_epoch(lv, 1)); /* still usable when the first one is gone */
        T_OK(gd_loader_next(lv, &bv));
        T_ASSERT(bv != NULL);
        gd_batch_release(bv);
        gd_loader_destroy(lv);
        T_OK(gd_param_set("GD_HOST_TRIAL", NULL));
        held_beyond_ring(ds, &og);
        fprintf(stderr, "loader %s%s == cpu: ok\n", modes[m],
                m == 2 ? " (host rows by CPU gather + DMA)" : "");
    }
}

/* Counts the log lines of a level, so that the test can tell the line was formatted. */
static int info_lines;
static void count_info(gd_log_level level, const char *message, void *user) {
    (void)user;
    if (level == GD_LOG_INFO && strstr(message, "loader:")) info_lines++;
}

/*
 * Regression, "gd_loader_create segfaults at GD_LOG_LEVEL=info": the creation log line read the
 * parameter count of the model, and a loader has no model. At info level (and above) a loader
 * is created and its line written.
 */
static void regress_loader_create_log_info_segfault(const gd_dataset_t *ds,
                                                    const gd_loader_options *o) {
    const gd_log_level was = gd_log_level_get();
    gd_log_set(count_info, NULL);
    for (gd_log_level lv = GD_LOG_INFO; lv <= GD_LOG_TRACE; lv++) {
        gd_log_level_set(lv);
        info_lines = 0;
        gd_loader_t *l = NULL;
        T_OK(gd_loader_create(ds, o, &l));
        T_ASSERT(info_lines >= 1);
        gd_loader_destroy(l);
    }
    gd_log_set(NULL, NULL);
    gd_log_level_set(was);
}

/*
 * Regression, "two threads using one Loader segfault" (the Python binding, 2 of 3 runs): two
 * threads fetch and release the batches of one epoch together; every batch comes exactly once.
 */
typedef struct {
    gd_loader_t *l;
    int64_t got;
    int failed;
} fetcher;

static void *fetch_all(void *arg) {
    fetcher *f = arg;
    for (;;) {
        gd_batch_t *b = NULL;
        const gd_status st = gd_loader_next(f->l, &b);
        if (st == GD_ERR_INVALID_ARG && strstr(gd_last_error(), "still held")) {
            /* The other thread has not released the batch whose set comes next: again. */
            sched_yield();
            continue;
        }
        if (st != GD_OK) {
            fprintf(stderr, "fetch: %s\n", gd_last_error());
            f->failed = 1;
            return NULL;
        }
        if (!b) return NULL;
        gd_batch_info bi = GD_BATCH_INFO_INIT;
        if (gd_batch_get_info(b, &bi) != GD_OK) f->failed = 1;
        f->got++;
        gd_batch_release(b);
    }
}

static void regress_two_threads_one_loader_segfault(const gd_dataset_t *ds,
                                                    const gd_loader_options *base) {
    gd_loader_options o = *base;
    o.batch_size = 50;
    gd_loader_t *l;
    T_OK(gd_loader_create(ds, &o, &l));
    gd_loader_info li = GD_LOADER_INFO_INIT;
    T_OK(gd_loader_get_info(l, &li));
    for (int64_t epoch = 0; epoch < 3; epoch++) {
        T_OK(gd_loader_start_epoch(l, epoch));
        fetcher f[2] = {{l, 0, 0}, {l, 0, 0}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++) T_ASSERT(pthread_create(&th[i], NULL, fetch_all, &f[i]) == 0);
        for (int i = 0; i < 2; i++) T_ASSERT(pthread_join(th[i], NULL) == 0);
        T_EQ_INT(f[0].failed, 0);
        T_EQ_INT(f[1].failed, 0);
        T_EQ_INT(f[0].got + f[1].got, li.batches_per_epoch);
    }
    gd_loader_destroy(l);
}

/* Regression, "Loader(threads=100000) segfaults": thread counts past the limit are refused. */
static void regress_loader_threads_100000_segfault(const gd_dataset_t *ds,
                                                   const gd_loader_options *base) {
    gd_loader_options o = *base;
    gd_loader_t *l = (gd_loader_t *)&l;
    o.threads = 100000;
    T_FAILS(gd_loader_create(ds, &o, &l), GD_ERR_INVALID_ARG, "100000 threads");
    T_ASSERT(l == NULL);
    o.threads = -1;
    T_FAILS(gd_loader_create(ds, &o, &l), GD_ERR_INVALID_ARG, "-1 threads");
    o.threads = 1024;
    T_OK(gd_loader_create(ds, &o, &l));
    gd_loader_destroy(l);
}

int main(void) {
    const uint64_t seed = t_seed();
    gd_generate_options go = GD_GENERATE_OPTIONS_INIT;
    go.preset = "tiny";
    go.seed = seed % 1000;
    gd_dataset_t *ds;
    T_OK(gd_generate(&go, &ds));
    gd_loader_options o = GD_LOADER_OPTIONS_INIT;
    o.mode = "cpu";
    o.batch_size = 700;
    o.seed = seed;
    o.num_layers = 2;
    o.fanouts[0] = 6;
    o.fanouts[1] = 3;
    check_cpu_epoch(ds, &o, 0);
    check_cpu_epoch(ds, &o, 3);
    o.drop_last = 1;
    check_cpu_epoch(ds, &o, 1);
    o.drop_last = 0;
    o.shuffle = 0;
    o.split = GD_ARRAY_VALID_IDX;
    check_cpu_epoch(ds, &o, 0);
    o.shuffle = 1;
    o.split = GD_ARRAY_TRAIN_IDX;
    holding_and_exports(ds, &o);
    held_beyond_ring(ds, &o);
    regress_loader_create_log_info_segfault(ds, &o);
    regress_two_threads_one_loader_segfault(ds, &o);
    regress_loader_threads_100000_segfault(ds, &o);

    gd_loader_t *l = (gd_loader_t *)&l;
    gd_loader_options bad = o;
    bad.mode = "warp-drive";
    T_FAILS(gd_loader_create(ds, &bad, &l), GD_ERR_INVALID_ARG, "warp-drive");
    T_ASSERT(l == NULL);
    bad = o;
    bad.mode = "cpu-centric";
    T_FAILS(gd_loader_create(ds, &bad, &l), GD_ERR_UNSUPPORTED, "cpu-centric");
    bad = o;
    bad.num_layers = 0;
    T_FAILS(gd_loader_create(ds, &bad, &l), GD_ERR_INVALID_ARG, "layers");
    bad = o;
    bad.size = 3;
    T_FAILS(gd_loader_create(ds, &bad, &l), GD_ERR_INVALID_ARG, "GD_LOADER_OPTIONS_INIT");

    if (gd_device_count() > 0) {
        gpu_modes(ds, &o);
    } else {
        gd_loader_options g = o;
        g.mode = "zero-copy";
        T_FAILS(gd_loader_create(ds, &g, &l), GD_ERR_NO_DEVICE, "GPU");
    }
#ifdef GD_WITH_CUDA
    gd__cuda_stream_destroy(read_stream);
#endif
    gd_dataset_close(ds);
    t_check_no_leaks();
    fprintf(stderr, "loader: ok%s\n",
            gd_device_count() > 0 ? "" : " (no GPU: the GPU part did not run)");
    return 0;
}
