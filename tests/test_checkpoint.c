/*
 * Checkpoint files (src/train/checkpoint.c): a save and a load give back every bit of the
 * parameters, Adam's state and the meta, in float32 and float64, with and without state, for
 * random layouts and for a real GraphSAGE model; peek reads the meta and layout alone; a layout
 * that differs is refused naming the tensor and both shapes; every truncation length and a
 * changed byte at every position are detected with the right message; a header rewritten with a
 * matching CRC is still checked; every allocation, write and read of save, peek and load is made
 * to fail in turn and must fail cleanly (a message, no leak, the previous file intact, no
 * temporary file left); NaN and infinity are refused; resuming compares the settings.
 */
#include "train/checkpoint.h"
#include "test.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <zlib.h>

static const char *kind_name[] = {"alloc", "read", "write", "pin"};

/* ------------------------------------------------------------ helpers */

/* A random layout of 1..max_tensors tensors, rounded as gd__nn_params_alloc rounds it. */
static void random_layout(uint64_t *rng, gd_dtype dtype, int max_tensors, int64_t max_dim,
                          gd__nn_params *l) {
    memset(l, 0, sizeof *l);
    l->dtype = dtype;
    const int count = 1 + (int)(t_rand(rng) % (uint64_t)max_tensors);
    for (int i = 0; i < count; i++) {
        int64_t r = 1 + (int64_t)(t_rand(rng) % (uint64_t)max_dim);
        int64_t c = 1 + (int64_t)(t_rand(rng) % (uint64_t)max_dim);
        if (t_rand(rng) % 3 == 0) r = 1; /* a bias */
        T_OK(gd__nn_params_add(l, r, c, 1 + (int64_t)(t_rand(rng) % 100), NULL));
    }
    l->numel = (l->numel + GD__NN_PARAM_ALIGN - 1) / GD__NN_PARAM_ALIGN * GD__NN_PARAM_ALIGN;
}

/* n random elements, with a few exact oddities (-0, subnormals, extremes) among them. */
static void *random_buffer(uint64_t *rng, gd_dtype dtype, int64_t n) {
    const size_t es = gd_dtype_size(dtype);
    void *b = malloc((size_t)n * es);
    T_ASSERT(b);
    for (int64_t i = 0; i < n; i++) {
        const uint64_t u = t_rand(rng);
        double v = ((double)(u >> 11) / 9007199254740992.0) * 2.0 - 1.0;
        switch (u % 17) {
        case 0:
            v = -0.0;
            break;
        case 1:
            v = dtype == GD_DTYPE_FLOAT64 ? 4.9e-324 : 1.4e-45;
            break;
        case 2:
            v = dtype == GD_DTYPE_FLOAT64 ? -1.7e308 : -3.4e38;
            break;
        default:
            break;
        }
        if (dtype == GD_DTYPE_FLOAT64)
            ((double *)b)[i] = v;
        else
            ((float *)b)[i] = (float)v;
    }
    return b;
}

/* Random text of bytes 1..255 (quotes, backslashes, control and non-ASCII bytes included). */
static void random_text(uint64_t *rng, char *dst, size_t cap) {
    const size_t n = (size_t)(t_rand(rng) % cap);
    for (size_t i = 0; i < n; i++) dst[i] = (char)(1 + t_rand(rng) % 255);
    dst[n] = '\0';
}

static void random_meta(uint64_t *rng, gd__checkpoint_meta *m) {
    gd__checkpoint_meta_init(m);
    m->num_layers = 1 + (int)(t_rand(rng) % GD_SAMPLER_MAX_LAYERS);
    m->in_dim = 1 + (int64_t)(t_rand(rng) % 5000);
    m->hidden_dim = 1 + (int64_t)(t_rand(rng) % 1024);
    m->num_classes = 1 + (int64_t)(t_rand(rng) % 200);
    for (int i = 0; i < m->num_layers; i++) m->fanouts[i] = (int)(t_rand(rng) % 40) - 1;
    m->seed = t_rand(rng);
    m->epochs_done = (int64_t)(t_rand(rng) % 1000);
    m->adam_step = (int64_t)(t_rand(rng) % (INT64_C(1) << 53));
    if (t_rand(rng) % 3) {
        m->best_valid = (double)(t_rand(rng) >> 11) / 9007199254740992.0;
        m->best_epoch = (int64_t)(t_rand(rng) % 1000);
    }
    random_text(rng, m->dataset, sizeof m->dataset);
    random_text(rng, m->config, sizeof m->config);
}

static void same_meta(const gd__checkpoint_meta *a, const gd__checkpoint_meta *b) {
    T_EQ_STR(a->model, b->model);
    T_EQ_INT(a->num_layers, b->num_layers);
    T_EQ_INT(a->in_dim, b->in_dim);
    T_EQ_INT(a->hidden_dim, b->hidden_dim);
    T_EQ_INT(a->num_classes, b->num_classes);
    for (int i = 0; i < a->num_layers; i++) T_EQ_INT(a->fanouts[i], b->fanouts[i]);
    T_EQ_U64(a->seed, b->seed);
    T_EQ_INT(a->epochs_done, b->epochs_done);
    T_EQ_INT(a->adam_step, b->adam_step);
    if (isnan(a->best_valid))
        T_ASSERT(isnan(b->best_valid));
    else
        T_ASSERT(memcmp(&a->best_valid, &b->best_valid, sizeof(double)) == 0);
    T_EQ_INT(a->best_epoch, b->best_epoch);
    T_EQ_STR(a->dataset, b->dataset);
    T_EQ_STR(a->config, b->config);
}

static void same_layout(const gd__nn_params *a, const gd__nn_params *b) {
    T_EQ_INT(a->dtype, b->dtype);
    T_EQ_INT(a->count, b->count);
    T_EQ_INT(a->numel, b->numel);
    for (int i = 0; i < a->count; i++) {
        T_EQ_INT(a->rows[i], b->rows[i]);
        T_EQ_INT(a->cols[i], b->cols[i]);
        T_EQ_INT(a->offset[i], b->offset[i]);
        T_EQ_INT(a->fan_in[i], b->fan_in[i]);
    }
}

static void spit(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) T_FAIL_("cannot create %s", path);
    T_ASSERT(fwrite(data, 1, len, f) == len);
    fclose(f);
}

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* No "*.tmp.*" file may be left in dir. */
static void no_temp_files(const char *dir, const char *what, long long n) {
    DIR *d = opendir(dir);
    T_ASSERT(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".tmp."))
            T_FAIL_("%s, fault %lld: temporary file %s left in %s", what, n, e->d_name, dir);
    closedir(d);
}

static void live(int64_t *blocks, int64_t *bytes) {
    gd_alloc_stats(blocks, bytes);
}

static void same_live(int64_t blocks, int64_t bytes, const char *what, long long n) {
    int64_t b2, y2;
    live(&b2, &y2);
    if (b2 != blocks || y2 != bytes)
        T_FAIL_("%s, fault %lld: leak of %lld blocks, %lld bytes", what, n,
                (long long)(b2 - blocks), (long long)(y2 - bytes));
}

/* Rewrite the CRC of a file image after a deliberate edit. */
static void fix_crc(unsigned char *b, size_t len) {
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, b, (uInt)(len - 4));
    for (int i = 0; i < 4; i++) b[len - 4 + i] = (unsigned char)(crc >> (8 * i));
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ------------------------------------------------------------ round trips */

static void round_trip(uint64_t *rng, const char *dir, gd_dtype dtype, int with_state) {
    char path[1200];
    snprintf(path, sizeof path, "%s/rt.gdckpt", dir);
    for (int rep = 0; rep < 6; rep++) {
        gd__nn_params l;
        random_layout(rng, dtype, rep == 0 ? 1 : GD__NN_MAX_PARAMS, rep < 3 ? 40 : 100, &l);
        gd__checkpoint_meta m;
        random_meta(rng, &m);
        void *p = random_buffer(rng, dtype, l.numel);
        void *s = with_state ? random_buffer(rng, dtype, 2 * l.numel) : NULL;
        T_OK(gd__checkpoint_save(path, &m, &l, p, s));
        no_temp_files(dir, "round trip", 0);

        /* The size is the prefix, the padded header, the data and the CRC. */
        size_t len;
        unsigned char *img = t_slurp(path, &len);
        const size_t es = gd_dtype_size(dtype);
        const size_t data = (size_t)l.numel * es * (with_state ? 3 : 1);
        T_EQ_INT((24 + le32(img + 12)) % 64, 0);
        T_EQ_INT(len, 24 + le32(img + 12) + data + 4);
        T_ASSERT(memcmp(img + 24 + le32(img + 12), p, (size_t)l.numel * es) == 0);
        free(img);

        gd__checkpoint_meta pm;
        gd__nn_params pl;
        int hs = -1;
        T_OK(gd__checkpoint_peek(path, &pm, &pl, &hs));
        same_meta(&m, &pm);
        same_layout(&l, &pl);
        T_EQ_INT(pl.step, m.adam_step);
        T_ASSERT(pl.params.data == NULL && pl.state.data == NULL);
        T_EQ_INT(hs, with_state);
        T_OK(gd__checkpoint_peek(path, NULL, NULL, NULL));

        /* Poisoned destinations: every element must be overwritten. */
        void *p2 = malloc((size_t)l.numel * es), *s2 = malloc(2 * (size_t)l.numel * es);
        memset(p2, 0xA5, (size_t)l.numel * es);
        memset(s2, 0xA5, 2 * (size_t)l.numel * es);
        gd__checkpoint_meta lm;
        hs = -1;
        if (with_state) {
            T_OK(gd__checkpoint_load(path, &l, &lm, p2, s2, &hs));
            T_EQ_INT(hs, 1);
            T_ASSERT(memcmp(s, s2, 2 * (size_t)l.numel * es) == 0);
        } else {
            /* No state in the file: refused unless the caller asks whether there is one. */
            T_FAILS(gd__checkpoint_load(path, &l, &lm, p2, s2, NULL), GD_ERR_NOT_FOUND,
                    "holds no optimizer state");
            T_OK(gd__checkpoint_load(path, &l, &lm, p2, s2, &hs));
            T_EQ_INT(hs, 0);
            for (size_t i = 0; i < 2 * (size_t)l.numel * es; i++)
                T_EQ_INT(((unsigned char *)s2)[i], 0);
        }
        T_ASSERT(memcmp(p, p2, (size_t)l.numel * es) == 0);
        same_meta(&m, &lm);
        /* Without a state buffer: the parameters alone. */
        memset(p2, 0xA5, (size_t)l.numel * es);
        T_OK(gd__checkpoint_load(path, &l, NULL, p2, NULL, NULL));
        T_ASSERT(memcmp(p, p2, (size_t)l.numel * es) == 0);
        free(p), free(s), free(p2), free(s2);
    }
}

/* A real model's layout: save one default model and load it into another built from the peek. */
static void model_round_trip(uint64_t *rng, const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/model.gdckpt", dir);
    gd__nn_ctx ctx = gd__nn_cpu_ctx();
    gd__model_config cfg =
        gd__model_config_make(GD__MODEL_DEFAULT, 3, 11, 9, 4, 0.5, GD_DTYPE_FLOAT32);
    for (int i = 0; i <= cfg.num_layers; i++) cfg.max_nodes[i] = 8;
    gd__model *a, *b;
    T_OK(gd__model_create(&ctx, &cfg, t_rand(rng), &a));
    T_OK(gd__model_create(&ctx, &cfg, t_rand(rng), &b));
    gd__nn_params *pa = gd__model_params(a), *pb = gd__model_params(b);
    float *st = pa->state.data;
    for (int64_t i = 0; i < 2 * pa->numel; i++) st[i] = (float)(t_rand(rng) % 1000) / 7.0f;
    gd__checkpoint_meta m;
    gd__checkpoint_meta_init(&m);
    T_EQ_STR(m.model, gd__model_kind_name(GD__MODEL_DEFAULT));
    m.num_layers = 3, m.in_dim = 11, m.hidden_dim = 9, m.num_classes = 4;
    m.fanouts[0] = 5, m.fanouts[1] = 3, m.fanouts[2] = -1;
    m.seed = 7, m.epochs_done = 2, m.adam_step = 24;
    snprintf(m.dataset, sizeof m.dataset, "tiny (1000 nodes, 5000 edges, 11 features, 4 classes)");
    snprintf(m.config, sizeof m.config, "batch=64 lr=0.003 dropout=0.5 weight_decay=0");
    T_OK(gd__checkpoint_save(path, &m, pa, pa->params.data, pa->state.data));
    gd__nn_params pl;
    gd__checkpoint_meta pm;
    T_OK(gd__checkpoint_peek(path, &pm, &pl, NULL));
    T_EQ_INT(pm.num_layers, 3);
    T_EQ_STR(pm.model, "sage");
    T_EQ_INT(pl.count, pa->count);
    T_OK(gd__checkpoint_load(path, pb, NULL, pb->params.data, pb->state.data, NULL));
    const size_t bytes = (size_t)pa->numel * 4;
    T_ASSERT(memcmp(pa->params.data, pb->params.data, bytes) == 0);
    T_ASSERT(memcmp(pa->state.data, pb->state.data, 2 * bytes) == 0);
    gd__model_destroy(a);
    gd__model_destroy(b);
}

/* ------------------------------------------------------------ mismatches */

static void mismatches(uint64_t *rng, const char *dir) {
    char path[1200], nbuf[200];
    const char *needle = nbuf;
    snprintf(path, sizeof path, "%s/mm.gdckpt", dir);
    gd__nn_params l;
    random_layout(rng, GD_DTYPE_FLOAT32, 6, 30, &l);
    if (l.count < 2) T_OK(gd__nn_params_add(&l, 3, 4, 3, NULL));
    l.numel = (l.numel + GD__NN_PARAM_ALIGN - 1) / GD__NN_PARAM_ALIGN * GD__NN_PARAM_ALIGN;
    gd__checkpoint_meta m;
    random_meta(rng, &m);
    float *p = random_buffer(rng, GD_DTYPE_FLOAT32, l.numel);
    float *q = malloc((size_t)l.numel * 2 * sizeof *q); /* room for larger layouts */
    T_OK(gd__checkpoint_save(path, &m, &l, p, NULL));

    /* A different shape of a random tensor. */
    const int i = (int)(t_rand(rng) % (uint64_t)l.count);
    gd__nn_params w = l;
    w.cols[i] = l.cols[i] + 1;
    snprintf(nbuf, sizeof nbuf,
             "tensor %d is %lld x %lld at element %lld in the file, %lld x "
             "%lld at element %lld in the model",
             i, (long long)l.rows[i], (long long)l.cols[i], (long long)l.offset[i],
             (long long)w.rows[i], (long long)w.cols[i], (long long)w.offset[i]);
    /* Keep the changed layout consistent: later tensors move. */
    for (int j = i + 1; j < w.count; j++) w.offset[j] += w.rows[i];
    w.numel += GD__NN_PARAM_ALIGN;
    T_FAILS(gd__checkpoint_load(path, &w, NULL, q, NULL, NULL), GD_ERR_INVALID_ARG, needle);
    T_ASSERT(strstr(gd_last_error(), "saved for"));

    /* One tensor fewer in the model. */
    w = l;
    w.count = l.count - 1;
    snprintf(nbuf, sizeof nbuf,
             "tensor %d is %lld x %lld at element %lld in the file, absent "
             "in the model (the file has %d tensors, the model %d",
             l.count - 1, (long long)l.rows[l.count - 1], (long long)l.cols[l.count - 1],
             (long long)l.offset[l.count - 1], l.count, l.count - 1);
    T_FAILS(gd__checkpoint_load(path, &w, NULL, q, NULL, NULL), GD_ERR_INVALID_ARG, needle);

    /* One tensor more. */
    w = l;
    T_OK(gd__nn_params_add(&w, 2, 2, 2, NULL));
    T_FAILS(gd__checkpoint_load(path, &w, NULL, q, NULL, NULL), GD_ERR_INVALID_ARG,
            "in the file, 2 x 2 at element");

    /* Another dtype. */
    w = l;
    w.dtype = GD_DTYPE_FLOAT64;
    T_FAILS(gd__checkpoint_load(path, &w, NULL, q, NULL, NULL), GD_ERR_INVALID_ARG,
            "holds float32 parameters, the model is float64");

    /* The same tensors in a larger flat buffer. */
    w = l;
    w.numel += GD__NN_PARAM_ALIGN;
    T_FAILS(gd__checkpoint_load(path, &w, NULL, q, NULL, NULL), GD_ERR_INVALID_ARG,
            "parameter alignment");

    /* Layouts the format cannot hold. */
    w = l;
    w.dtype = GD_DTYPE_FLOAT16;
    T_FAILS(gd__checkpoint_save(path, &m, &w, p, NULL), GD_ERR_UNSUPPORTED, "float16");
    T_FAILS(gd__checkpoint_load(path, &w, NULL, q, NULL, NULL), GD_ERR_UNSUPPORTED, "float16");
    w = l;
    w.numel = l.offset[l.count - 1];
    T_FAILS(gd__checkpoint_save(path, &m, &w, p, NULL), GD_ERR_INVALID_ARG, "runs past");

    /* Meta the header cannot hold. */
    gd__checkpoint_meta bad = m;
    bad.num_layers = 0;
    T_FAILS(gd__checkpoint_save(path, &bad, &l, p, NULL), GD_ERR_INVALID_ARG, "num_layers 0");
    bad = m;
    bad.fanouts[0] = -2;
    T_FAILS(gd__checkpoint_save(path, &bad, &l, p, NULL), GD_ERR_INVALID_ARG, "fanout -2");
    bad = m;
    bad.best_valid = INFINITY;
    T_FAILS(gd__checkpoint_save(path, &bad, &l, p, NULL), GD_ERR_INVALID_ARG, "best_valid");
    bad = m;
    memset(bad.config, 'x', sizeof bad.config);
    T_FAILS(gd__checkpoint_save(path, &bad, &l, p, NULL), GD_ERR_INVALID_ARG, "not terminated");
    T_FAILS(gd__checkpoint_save(NULL, &m, &l, p, NULL), GD_ERR_INVALID_ARG, "NULL");
    T_FAILS(gd__checkpoint_load(path, &l, NULL, NULL, NULL, NULL), GD_ERR_INVALID_ARG, "NULL");

    /* Files that are not checkpoints. */
    char other[1300];
    snprintf(other, sizeof other, "%s/absent.gdckpt", dir);
    T_FAILS(gd__checkpoint_peek(other, NULL, NULL, NULL), GD_ERR_NOT_FOUND, "absent.gdckpt");
    snprintf(other, sizeof other, "%s/text.json", dir);
    spit(other, "{\"format\": \"graphdirect-checkpoint\"}\n", 37);
    T_FAILS(gd__checkpoint_peek(other, NULL, NULL, NULL), GD_ERR_FORMAT,
            "is not a graphdirect checkpoint");
    T_FAILS(gd__checkpoint_peek(dir, NULL, NULL, NULL), GD_ERR_IO, "not a regular file");
    snprintf(other, sizeof other, "%s/no-such-dir/x.gdckpt", dir);
    T_FAILS(gd__checkpoint_save(other, &m, &l, p, NULL), GD_ERR_IO, "no-such-dir");
    free(p), free(q);
}

/* ------------------------------------------------------------ damage */

/* Every truncation length and every single-byte change of one checkpoint file. */
static void damage(uint64_t *rng, const char *dir, int with_state) {
    char path[1200], cut[1300], nbuf[200];
    const char *needle = nbuf;
    snprintf(path, sizeof path, "%s/good.gdckpt", dir);
    snprintf(cut, sizeof cut, "%s/cut.gdckpt", dir);
    gd__nn_params l;
    random_layout(rng, t_rand(rng) % 2 ? GD_DTYPE_FLOAT32 : GD_DTYPE_FLOAT64, 4, 12, &l);
    gd__checkpoint_meta m;
    random_meta(rng, &m);
    void *p = random_buffer(rng, l.dtype, l.numel);
    void *s = with_state ? random_buffer(rng, l.dtype, 2 * l.numel) : NULL;
    void *q = malloc((size_t)l.numel * 3 * 8);
    T_OK(gd__checkpoint_save(path, &m, &l, p, s));
    size_t len;
    unsigned char *img = t_slurp(path, &len);
    const size_t header_end = 24 + le32(img + 12);

    /* Truncated at every length: peek and load both say so, with both sizes. */
    for (size_t n = 0; n < len; n++) {
        spit(cut, img, n);
        if (n >= 24)
            snprintf(nbuf, sizeof nbuf,
                     "is truncated: expected %zu bytes, found %zu; it was "
                     "not written completely",
                     len, n);
        else
            snprintf(nbuf, sizeof nbuf, "is truncated: expected at least 28 bytes, found %zu", n);
        T_FAILS(gd__checkpoint_peek(cut, NULL, NULL, NULL), GD_ERR_FORMAT, needle);
        T_FAILS(gd__checkpoint_load(cut, &l, NULL, q, with_state ? q : NULL, NULL), GD_ERR_FORMAT,
                "start without --resume");
    }
    /* Bytes appended. */
    unsigned char *longer = malloc(len + 3);
    memcpy(longer, img, len);
    memset(longer + len, 0, 3);
    spit(cut, longer, len + 3);
    T_FAILS(gd__checkpoint_peek(cut, NULL, NULL, NULL), GD_ERR_FORMAT, "damaged");
    free(longer);

    /* One byte changed at every position, in place, by a random non-zero xor. */
    spit(cut, img, len);
    int fd = open(cut, O_RDWR);
    T_ASSERT(fd >= 0);
    for (size_t i = 0; i < len; i++) {
        const unsigned char x = (unsigned char)(1 + t_rand(rng) % 255);
        const unsigned char b = img[i] ^ x;
        T_ASSERT(pwrite(fd, &b, 1, (off_t)i) == 1);
        gd_status st = gd__checkpoint_load(cut, &l, NULL, q, with_state ? q : NULL, NULL);
        if (st == GD_OK) T_FAIL_("byte %zu of %zu xor 0x%02x was not detected", i, len, x);
        /* The header size (12..15), the header and the data fail the CRC. */
        const char *want = i < 8    ? "is not a graphdirect checkpoint"
                           : i < 12 ? "has format version"
                                    : "is corrupt: the CRC32";
        /* The size field: larger reads as truncated, smaller as damaged (either is right). */
        if (i >= 16 && i < 24) {
            if (!strstr(gd_last_error(), "truncated") && !strstr(gd_last_error(), "damaged"))
                T_FAIL_("byte %zu (size field): message \"%s\"", i, gd_last_error());
        } else if (!strstr(gd_last_error(), want)) {
            T_FAIL_("byte %zu of %zu (header ends at %zu) xor 0x%02x: message \"%s\" does not "
                    "say \"%s\"",
                    i, len, header_end, x, gd_last_error(), want);
        }
        T_ASSERT(pwrite(fd, img + i, 1, (off_t)i) == 1);
    }
    close(fd);
    T_OK(gd__checkpoint_load(cut, &l, NULL, q, with_state ? q : NULL, NULL));
    free(img), free(p), free(s), free(q);
}

/*
 * A copy of a file image (len bytes) whose header has the bytes at the first match of `from`
 * overwritten with `to`, and its CRC rewritten: the header's length and so the data's place
 * stay the same.
 */
static unsigned char *edited(const unsigned char *img, size_t len, const char *from,
                             const char *to) {
    const size_t h = le32(img + 12);
    unsigned char *b = malloc(len);
    T_ASSERT(b);
    memcpy(b, img, len);
    char *hdr = (char *)b + 24;
    hdr[h - 1] = '\0'; /* the header ends in a newline: stop the search there */
    char *at = strstr(hdr, from);
    hdr[h - 1] = '\n';
    if (!at) T_FAIL_("\"%s\" not in the header", from);
    T_ASSERT(at + strlen(to) <= hdr + h);
    memcpy(at, to, strlen(to));
    fix_crc(b, len);
    return b;
}

/* Files whose CRC is right but whose header or data a careless writer got wrong. */
static void crafted(uint64_t *rng, const char *dir) {
    char path[1200], bad[1300];
    snprintf(path, sizeof path, "%s/craft.gdckpt", dir);
    snprintf(bad, sizeof bad, "%s/crafted.gdckpt", dir);
    gd__nn_params l;
    random_layout(rng, GD_DTYPE_FLOAT32, 3, 5, &l);
    l.fan_in[0] = 7; /* one digit, for the edit below */
    gd__checkpoint_meta m;
    random_meta(rng, &m);
    snprintf(m.config, sizeof m.config, "plain");
    snprintf(m.dataset, sizeof m.dataset, "plain");
    float *p = random_buffer(rng, GD_DTYPE_FLOAT32, l.numel);
    float *q = malloc((size_t)l.numel * sizeof *q);
    T_OK(gd__checkpoint_save(path, &m, &l, p, NULL));
    size_t len;
    unsigned char *img = t_slurp(path, &len);
    const size_t h = le32(img + 12);
    /* Each edit overwrites the bytes at the first match of `from` with `to` (edited()). */
    const struct {
        const char *from, *to, *needle;
    } edits[] = {
        {"\"numel\":\t", "\"numez\":\t", "'numel' is missing"},
        {"\"graphdirect-checkpoint\"", "\"graphdirect-checkpoinX\"", "'format'"},
        {"\"adam_state\":\tfalse", "\"adam_state\":\ttrue ", "describes"},
        {"\"dtype\":\t\"float32\"", "\"dtype\":\t\"float64\"", "describes"},
        {"\"dtype\":\t\"float32\"", "\"dtype\":\t\"int32\"  ", "'dtype'"},
        {"\"rows\":\t", "\"rowz\":\t", "'rows' is missing"},
        {"\"model\":\t\"sage\"", "\"model\":\t7     ", "'model' is not a string"},
        {"\"fan_in\":\t7", "\"fan_in\":\t0", "'fan_in' is 0, expected an integer in [1,"},
        {"\"seed\":\t\"", "\"seed\":\t\"x", "'seed'"},
        {"\"fanouts\":\t[", "\"fanouts\":\t7", "not valid JSON"},
        {"\"best_valid\":\t", "\"best_valid\":\t\"", "not valid JSON"},
        {"{", "[", "not valid JSON"},
        {"\n}", "\n}x", "unexpected bytes after"},
    };
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
        unsigned char *b = edited(img, len, edits[e].from, edits[e].to);
        spit(bad, b, len);
        T_FAILS(gd__checkpoint_peek(bad, NULL, NULL, NULL), GD_ERR_FORMAT, edits[e].needle);
        T_ASSERT(strstr(gd_last_error(), "malformed"));
        free(b);
    }
    /* A NaN in the data with a right CRC: load refuses it. */
    unsigned char *b = malloc(len);
    memcpy(b, img, len);
    const float nan = NAN;
    memcpy(b + 24 + h + 4 * (size_t)l.offset[l.count - 1], &nan, 4);
    fix_crc(b, len);
    spit(bad, b, len);
    T_OK(gd__checkpoint_peek(bad, NULL, NULL, NULL));
    char nbuf[100];
    const char *needle = nbuf;
    snprintf(nbuf, sizeof nbuf, "parameter of tensor %d (%lld x %lld) is NaN at [0, 0]",
             l.count - 1, (long long)l.rows[l.count - 1], (long long)l.cols[l.count - 1]);
    T_FAILS(gd__checkpoint_load(bad, &l, NULL, q, NULL, NULL), GD_ERR_FORMAT, needle);
    /* A future version. */
    memcpy(b, img, len);
    b[8] = 2;
    fix_crc(b, len);
    spit(bad, b, len);
    T_FAILS(gd__checkpoint_peek(bad, NULL, NULL, NULL), GD_ERR_UNSUPPORTED, "format version 2");
    free(b), free(img), free(p), free(q);
}

/* ------------------------------------------------------------ model kinds */

/*
 * The model kind: written as "model" and read back; a file without it (written before the
 * field existed) reads as the default kind; a kind this build does not know is refused on
 * saving and on reading, naming it; resuming a run of another kind names both kinds.
 */
static void model_kinds(uint64_t *rng, const char *dir) {
    char path[1200], bad[1300];
    snprintf(path, sizeof path, "%s/kind.gdckpt", dir);
    snprintf(bad, sizeof bad, "%s/kind-edited.gdckpt", dir);
    gd__nn_params l;
    random_layout(rng, GD_DTYPE_FLOAT32, 3, 5, &l);
    gd__checkpoint_meta m, pm;
    random_meta(rng, &m);
    float *p = random_buffer(rng, GD_DTYPE_FLOAT32, l.numel);

    /* A kind this build does not know is not saved; nothing is written. */
    snprintf(m.model, sizeof m.model, "gcn");
    T_FAILS(gd__checkpoint_save(path, &m, &l, p, NULL), GD_ERR_INVALID_ARG, "model kind 'gcn'");
    T_ASSERT(strstr(gd_last_error(), "sage"));
    T_ASSERT(!exists(path));

    snprintf(m.model, sizeof m.model, "%s", gd__model_kind_name(GD__MODEL_DEFAULT));
    T_OK(gd__checkpoint_save(path, &m, &l, p, NULL));
    size_t len;
    unsigned char *img = t_slurp(path, &len);
    T_OK(gd__checkpoint_peek(path, &pm, NULL, NULL));
    T_EQ_STR(pm.model, "sage");

    /* Without the field (blanked to spaces, which JSON ignores): the default kind. */
    unsigned char *b = edited(img, len, "\"model\":\t\"sage\",", "                ");
    spit(bad, b, len);
    memset(pm.model, 'x', sizeof pm.model);
    T_OK(gd__checkpoint_peek(bad, &pm, NULL, NULL));
    T_EQ_STR(pm.model, gd__model_kind_name(GD__MODEL_DEFAULT));
    free(b);

    /* A kind this build does not know: refused, naming it and the known ones. */
    b = edited(img, len, "\"model\":\t\"sage\"", "\"model\":\t\"gat0\"");
    spit(bad, b, len);
    T_FAILS(gd__checkpoint_peek(bad, NULL, NULL, NULL), GD_ERR_UNSUPPORTED, "kind 'gat0'");
    T_ASSERT(strstr(gd_last_error(), "knows sage"));
    float *q = malloc((size_t)l.numel * sizeof *q);
    T_ASSERT(q);
    T_FAILS(gd__checkpoint_load(bad, &l, NULL, q, NULL, NULL), GD_ERR_UNSUPPORTED, "'gat0'");
    free(b), free(q), free(img), free(p);

    /* Resuming a run of another kind names both. */
    gd__checkpoint_meta run = m;
    snprintf(run.model, sizeof run.model, "gat");
    T_FAILS(gd__checkpoint_check_resume("x.gdckpt", &m, &run), GD_ERR_INVALID_ARG,
            "it holds a 'sage' model, this run trains a 'gat' model");
    T_ASSERT(strstr(gd_last_error(), "without --resume"));
}

/* ------------------------------------------------------------ NaN and infinity */

static void non_finite(uint64_t *rng, const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/nan.gdckpt", dir);
    for (int dt = 0; dt < 2; dt++) {
        const gd_dtype dtype = dt ? GD_DTYPE_FLOAT64 : GD_DTYPE_FLOAT32;
        gd__nn_params l;
        random_layout(rng, dtype, 5, 20, &l);
        gd__checkpoint_meta m;
        random_meta(rng, &m);
        void *p = random_buffer(rng, dtype, l.numel);
        void *s = random_buffer(rng, dtype, 2 * l.numel);
        T_OK(gd__checkpoint_save(path, &m, &l, p, s));
        size_t len0;
        unsigned char *before = t_slurp(path, &len0);
        const char *names[3] = {"parameter", "first moment (m)", "second moment (v)"};
        const char *what[3] = {"NaN", "+inf", "-inf"};
        const double vals[3] = {NAN, INFINITY, -INFINITY};
        for (int buf = 0; buf < 3; buf++) {
            for (int k = 0; k < 3; k++) {
                const int t = (int)(t_rand(rng) % (uint64_t)l.count);
                const int64_t at = (int64_t)(t_rand(rng) % (uint64_t)(l.rows[t] * l.cols[t]));
                const size_t es = gd_dtype_size(dtype);
                char *base = buf == 0 ? p : (char *)s + (size_t)(buf - 1) * (size_t)l.numel * es;
                const int64_t e = l.offset[t] + at;
                double old;
                if (dt) {
                    old = ((double *)base)[e];
                    ((double *)base)[e] = vals[k];
                } else {
                    old = ((float *)base)[e];
                    ((float *)base)[e] = (float)vals[k];
                }
                char nbuf[200];
                const char *needle = nbuf;
                snprintf(nbuf, sizeof nbuf,
                         "%s of tensor %d (%lld x %lld) is %s at [%lld, "
                         "%lld]",
                         names[buf], t, (long long)l.rows[t], (long long)l.cols[t], what[k],
                         (long long)(at / l.cols[t]), (long long)(at % l.cols[t]));
                T_FAILS(gd__checkpoint_save(path, &m, &l, p, s), GD_ERR_RANGE, needle);
                T_ASSERT(strstr(gd_last_error(), "previous checkpoint at that path is kept"));
                size_t len1;
                unsigned char *after = t_slurp(path, &len1);
                T_ASSERT(len1 == len0 && memcmp(before, after, len0) == 0);
                free(after);
                no_temp_files(dir, "non-finite", 0);
                if (dt)
                    ((double *)base)[e] = old;
                else
                    ((float *)base)[e] = (float)old;
            }
        }
        /* The padding after the last tensor is not a parameter: a NaN there is saved as is. */
        const int64_t last = l.offset[l.count - 1] + l.rows[l.count - 1] * l.cols[l.count - 1];
        if (last < l.numel) {
            if (dt)
                ((double *)p)[l.numel - 1] = NAN;
            else
                ((float *)p)[l.numel - 1] = NAN;
        }
        T_OK(gd__checkpoint_save(path, &m, &l, p, s));
        free(before), free(p), free(s);
    }
}

/* ------------------------------------------------------------ fault walks */

static void fault_walks(uint64_t *rng, const char *dir) {
    char path[1200], fresh[1200];
    snprintf(path, sizeof path, "%s/fault.gdckpt", dir);
    snprintf(fresh, sizeof fresh, "%s/fresh.gdckpt", dir);
    gd__nn_params l;
    random_layout(rng, GD_DTYPE_FLOAT32, 8, 50, &l);
    gd__checkpoint_meta m_old, m_new;
    random_meta(rng, &m_old);
    random_meta(rng, &m_new);
    float *p_old = random_buffer(rng, GD_DTYPE_FLOAT32, l.numel);
    float *p_new = random_buffer(rng, GD_DTYPE_FLOAT32, l.numel);
    float *s_new = random_buffer(rng, GD_DTYPE_FLOAT32, 2 * l.numel);
    float *q = malloc((size_t)l.numel * 3 * sizeof *q);
    T_OK(gd__checkpoint_save(path, &m_new, &l, p_new, s_new));
    size_t new_len;
    unsigned char *new_img = t_slurp(path, &new_len);
    T_OK(gd__checkpoint_save(path, &m_old, &l, p_old, NULL));
    size_t old_len;
    unsigned char *old_img = t_slurp(path, &old_len);
    int64_t blocks, bytes;
    live(&blocks, &bytes);

    /* Saving over a good file, and to a new path: every allocation and every write. */
    for (int target = 0; target < 2; target++) {
        const char *to = target ? fresh : path;
        for (int kind = GD_FAULT_ALLOC; kind <= GD_FAULT_WRITE; kind += 2) {
            gd_fault_set((gd_fault_kind)kind, 0);
            T_OK(gd__checkpoint_save(to, &m_new, &l, p_new, s_new));
            const int64_t calls = gd_fault_calls((gd_fault_kind)kind);
            T_ASSERT(calls > 0);
            for (int64_t n = 1; n <= calls; n++) {
                if (target)
                    unlink(fresh);
                else
                    spit(path, old_img, old_len);
                gd_fault_set((gd_fault_kind)kind, n);
                gd_clear_error();
                gd_status st = gd__checkpoint_save(to, &m_new, &l, p_new, s_new);
                gd_fault_set((gd_fault_kind)kind, 0);
                if (st == GD_OK)
                    T_FAIL_("save with %s fault %lld of %lld succeeded", kind_name[kind],
                            (long long)n, (long long)calls);
                T_ASSERT(strstr(gd_last_error(), "checkpoint"));
                same_live(blocks, bytes, "save", (long long)n);
                no_temp_files(dir, "save", (long long)n);
                /*
                 * Before the rename the old file (or none) must be there; only a failed flush
                 * of the directory, after the rename, leaves the complete new file.
                 */
                const int after_rename = strstr(gd_last_error(), "directory was not flushed") != 0;
                if (after_rename) {
                    size_t len;
                    unsigned char *now = t_slurp(to, &len);
                    T_ASSERT(len == new_len && memcmp(now, new_img, len) == 0);
                    free(now);
                } else if (target) {
                    if (exists(fresh))
                        T_FAIL_("save to a new path, %s fault %lld: the file exists",
                                kind_name[kind], (long long)n);
                } else {
                    size_t len;
                    unsigned char *now = t_slurp(path, &len);
                    if (len != old_len || memcmp(now, old_img, len) != 0)
                        T_FAIL_("save, %s fault %lld: the previous file was changed",
                                kind_name[kind], (long long)n);
                    free(now);
                }
            }
        }
    }

    /* Peek and load: every allocation and every read. */
    spit(path, new_img, new_len);
    for (int op = 0; op < 2; op++) {
        for (int kind = GD_FAULT_ALLOC; kind <= GD_FAULT_READ; kind++) {
            gd__checkpoint_meta mm;
            gd__nn_params pl;
            gd_fault_set((gd_fault_kind)kind, 0);
            if (op)
                T_OK(gd__checkpoint_load(path, &l, &mm, q, q + l.numel, NULL));
            else
                T_OK(gd__checkpoint_peek(path, &mm, &pl, NULL));
            const int64_t calls = gd_fault_calls((gd_fault_kind)kind);
            T_ASSERT(calls > 0);
            for (int64_t n = 1; n <= calls; n++) {
                gd_fault_set((gd_fault_kind)kind, n);
                gd_clear_error();
                gd_status st = op ? gd__checkpoint_load(path, &l, &mm, q, q + l.numel, NULL)
                                  : gd__checkpoint_peek(path, &mm, &pl, NULL);
                gd_fault_set((gd_fault_kind)kind, 0);
                if (st == GD_OK)
                    T_FAIL_("%s with %s fault %lld of %lld succeeded", op ? "load" : "peek",
                            kind_name[kind], (long long)n, (long long)calls);
                T_ASSERT(strstr(gd_last_error(), "checkpoint"));
                same_live(blocks, bytes, op ? "load" : "peek", (long long)n);
            }
        }
    }
    size_t len;
    unsigned char *now = t_slurp(path, &len);
    T_ASSERT(len == new_len && memcmp(now, new_img, len) == 0);
    free(now), free(new_img), free(old_img), free(p_old), free(p_new), free(s_new), free(q);
}

/* ------------------------------------------------------------ resuming */

static void resume_checks(uint64_t *rng) {
    gd__checkpoint_meta a, b;
    random_meta(rng, &a);
    snprintf(a.config, sizeof a.config, "batch=1024 lr=0.003 dropout=0.5");
    snprintf(a.dataset, sizeof a.dataset, "cora (2708 nodes)");
    b = a;
    b.epochs_done += 3, b.adam_step += 7, b.best_valid = 0.5, b.best_epoch = 2;
    T_OK(gd__checkpoint_check_resume("x.gdckpt", &a, &b));
    b = a, b.hidden_dim = a.hidden_dim + 1;
    T_FAILS(gd__checkpoint_check_resume("x.gdckpt", &a, &b), GD_ERR_INVALID_ARG, "hidden_dim");
    T_ASSERT(strstr(gd_last_error(), "without --resume"));
    b = a, b.num_layers = a.num_layers % GD_SAMPLER_MAX_LAYERS + 1;
    T_FAILS(gd__checkpoint_check_resume("x.gdckpt", &a, &b), GD_ERR_INVALID_ARG, "num_layers");
    b = a, b.fanouts[a.num_layers - 1] += 1;
    T_FAILS(gd__checkpoint_check_resume("x.gdckpt", &a, &b), GD_ERR_INVALID_ARG, "fanouts");
    b = a, b.fanouts[GD_SAMPLER_MAX_LAYERS - 1] = 99; /* beyond num_layers: ignored */
    if (a.num_layers < GD_SAMPLER_MAX_LAYERS) T_OK(gd__checkpoint_check_resume("x", &a, &b));
    b = a, b.seed = a.seed + 1;
    T_FAILS(gd__checkpoint_check_resume("x.gdckpt", &a, &b), GD_ERR_INVALID_ARG, "seed");
    b = a, snprintf(b.dataset, sizeof b.dataset, "tiny");
    T_FAILS(gd__checkpoint_check_resume("x.gdckpt", &a, &b), GD_ERR_INVALID_ARG,
            "dataset 'cora (2708 nodes)', this run uses 'tiny'");
    b = a, snprintf(b.config, sizeof b.config, "batch=1024 lr=0.01 dropout=0.5");
    T_FAILS(gd__checkpoint_check_resume("x.gdckpt", &a, &b), GD_ERR_INVALID_ARG,
            "at 'lr=0.003' (saved) vs 'lr=0.01' (this run)");
    b = a, snprintf(b.config, sizeof b.config, "batch=1024 lr=0.0031 dropout=0.5");
    T_FAILS(gd__checkpoint_check_resume("x.gdckpt", &a, &b), GD_ERR_INVALID_ARG,
            "at 'lr=0.003' (saved) vs 'lr=0.0031' (this run)");
    b = a, snprintf(b.config, sizeof b.config, "batch=1024 lr=0.003 dropout=0.5 mlp");
    T_FAILS(gd__checkpoint_check_resume("x.gdckpt", &a, &b), GD_ERR_INVALID_ARG,
            "at '(nothing)' (saved) vs 'mlp' (this run)");
}

int main(void) {
    uint64_t rng = t_seed();
    char dir[1024];
    t_tmpdir(dir, sizeof dir);
    for (int dt = 0; dt < 2; dt++)
        for (int with_state = 0; with_state < 2; with_state++)
            round_trip(&rng, dir, dt ? GD_DTYPE_FLOAT64 : GD_DTYPE_FLOAT32, with_state);
    model_round_trip(&rng, dir);
    mismatches(&rng, dir);
    damage(&rng, dir, 0);
    damage(&rng, dir, 1);
    crafted(&rng, dir);
    model_kinds(&rng, dir);
    non_finite(&rng, dir);
    fault_walks(&rng, dir);
    resume_checks(&rng);
    no_temp_files(dir, "the whole test", 0);
    t_rmtree(dir);
    t_check_no_leaks();
    return 0;
}
