/*
 * Checkpoint files: the trainer's model parameters, Adam's state and run position in one binary
 * file, written atomically and read back only after its size and a CRC32 of every byte have been
 * checked. The layout (docs/formats.md, "Checkpoint and model files", says the same):
 *
 *   offset 0      8 bytes   magic "\x89GDCKPT\n"
 *   offset 8      u32       format version (1)
 *   offset 12     u32       H: bytes of the header text that follows
 *   offset 16     u64       the file's total size in bytes
 *   offset 24     H bytes   a JSON object (meta and layout), padded with spaces and a final
 *                           newline so that the data starts at a multiple of 64 bytes
 *   offset 24 + H           the parameters: numel elements of the dtype, the flat buffer as the
 *                           trainer holds it (padding between tensors included)
 *   then                    Adam's state when "adam_state" is true: 2 * numel elements, m then v
 *   last 4 bytes  u32       CRC32 (zlib) of every byte before it
 *
 * Integers and elements are little-endian. The magic's first byte is not ASCII and it ends in a
 * newline, so a text-mode transfer that altered the file shows at once. Reading checks, in this
 * order: the magic, the version, the recorded size against the real one (a shorter file is
 * "truncated"), the CRC, and only then parses the header, whose every field is range-checked
 * and whose layout must describe exactly the bytes that follow. So a damaged file is reported
 * as damaged before any of its values is believed. The run description's defaults and the
 * check that a run may resume from a checkpoint are in checkpoint_meta.c.
 */
#include "train/checkpoint.h"

#include "core/json.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static const unsigned char ckpt_magic[8] = {0x89, 'G', 'D', 'C', 'K', 'P', 'T', '\n'};
#define PREFIX_BYTES 24
#define CRC_BYTES 4
#define DATA_ALIGN 64
/* Counts and sizes in the header: integers beyond 2^53 are not exact in JSON doubles. */
#define MAX_COUNT (INT64_C(1) << 53)
/* The read buffer of the CRC pass. */
#define CHUNK_BYTES (1 << 20)

#define ADVICE "use an older checkpoint or start without --resume"

/* ------------------------------------------------------------ small helpers */

static int host_little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* zlib's crc32 takes a uInt length: feed it at most 1 GiB at a time. */
static uLong crc_update(uLong crc, const void *data, size_t bytes) {
    const Bytef *p = data;
    while (bytes > 0) {
        uInt n = bytes > (1u << 30) ? (1u << 30) : (uInt)bytes;
        crc = crc32(crc, p, n);
        p += n;
        bytes -= n;
    }
    return crc;
}

static int supported_dtype(gd_dtype d) {
    return d == GD_DTYPE_FLOAT32 || d == GD_DTYPE_FLOAT64;
}

/*
 * A layout is usable when its dtype is float32 or float64, it has 1..GD__NN_MAX_PARAMS tensors
 * of positive shape, each starts at or after the end of the one before, the last ends within
 * numel, and 3 * numel elements (parameters and state) fit a file. `who` starts the message.
 */
static gd_status check_layout(const gd__nn_params *l, const char *who) {
    if (!supported_dtype(l->dtype))
        return gd__error(GD_ERR_UNSUPPORTED, "%s: dtype %s (checkpoints hold float32 or float64)",
                         who, gd_dtype_name(l->dtype));
    if (l->count < 1 || l->count > GD__NN_MAX_PARAMS)
        return gd__error(GD_ERR_INVALID_ARG, "%s: %d tensors (1 to %d)", who, l->count,
                         GD__NN_MAX_PARAMS);
    if (l->numel < 1 || l->numel > MAX_COUNT)
        return gd__error(GD_ERR_INVALID_ARG, "%s: flat size %lld elements (1 to 2^53)", who,
                         (long long)l->numel);
    int64_t end = 0;
    for (int i = 0; i < l->count; i++) {
        int64_t n, e;
        if (l->rows[i] < 1 || l->cols[i] < 1 || l->fan_in[i] < 1 ||
            gd__mul_overflow_i64(l->rows[i], l->cols[i], &n))
            return gd__error(GD_ERR_INVALID_ARG,
                             "%s: tensor %d is %lld x %lld with fan-in %lld "
                             "(each must be at least 1)",
                             who, i, (long long)l->rows[i], (long long)l->cols[i],
                             (long long)l->fan_in[i]);
        if (l->offset[i] < end || gd__add_overflow_i64(l->offset[i], n, &e) || e > l->numel)
            return gd__error(GD_ERR_INVALID_ARG,
                             "%s: tensor %d (%lld x %lld at element %lld) overlaps the tensor "
                             "before it (which ends at %lld) or runs past the flat size %lld",
                             who, i, (long long)l->rows[i], (long long)l->cols[i],
                             (long long)l->offset[i], (long long)end, (long long)l->numel);
        end = e;
    }
    return GD_OK;
}

static int64_t elem_bytes(const gd__nn_params *l) {
    return (int64_t)gd_dtype_size(l->dtype);
}

/*
 * The first element of a tensor that is not finite, in `buf` (numel elements laid out as l):
 * returns 1 and sets *tensor, *at (element index within the tensor) and *value, or returns 0.
 */
static int find_nonfinite(const gd__nn_params *l, const void *buf, int *tensor, int64_t *at,
                          double *value) {
    for (int i = 0; i < l->count; i++) {
        const int64_t n = l->rows[i] * l->cols[i];
        if (l->dtype == GD_DTYPE_FLOAT64) {
            const double *p = (const double *)buf + l->offset[i];
            for (int64_t j = 0; j < n; j++) {
                if (!isfinite(p[j])) {
                    *tensor = i, *at = j, *value = p[j];
                    return 1;
                }
            }
        } else {
            const float *p = (const float *)buf + l->offset[i];
            for (int64_t j = 0; j < n; j++) {
                if (!isfinite(p[j])) {
                    *tensor = i, *at = j, *value = (double)p[j];
                    return 1;
                }
            }
        }
    }
    return 0;
}

/*
 * Check params and (if non-NULL) state for NaN or infinity; on one, fail with `status` and a
 * message "<lead>: <what> of tensor i (r x c) is nan at [row, col]<tail>".
 */
static gd_status check_finite(const gd__nn_params *l, const void *params, const void *state,
                              gd_status status, const char *lead, const char *tail) {
    const void *bufs[3] = {params, NULL, NULL};
    const char *names[3] = {"parameter", "Adam's first moment (m)", "Adam's second moment (v)"};
    if (state) {
        bufs[1] = state;
        bufs[2] = (const char *)state + (size_t)(l->numel * elem_bytes(l));
    }
    for (int b = 0; b < 3; b++) {
        int t;
        int64_t at;
        double v;
        if (bufs[b] && find_nonfinite(l, bufs[b], &t, &at, &v))
            return gd__error(status, "%s: %s of tensor %d (%lld x %lld) is %s at [%lld, %lld]%s",
                             lead, names[b], t, (long long)l->rows[t], (long long)l->cols[t],
                             isnan(v) ? "NaN" : (v > 0 ? "+inf" : "-inf"),
                             (long long)(at / l->cols[t]), (long long)(at % l->cols[t]), tail);
    }
    return GD_OK;
}

/* The meta a caller asks to save: every field in the range the header can hold. */
static gd_status check_meta(const gd__checkpoint_meta *m, const char *who) {
    gd_status st = GD_OK;
    gd__model_kind kind;
    GD_REQUIRE(memchr(m->model, '\0', sizeof m->model) != NULL, GD_ERR_INVALID_ARG,
               "%s: the model kind is not terminated within its %zu bytes", who, sizeof m->model);
    if ((st = gd__model_kind_parse(m->model, &kind)) != GD_OK)
        return gd__error_context(st, "%s", who);
    GD_REQUIRE(m->num_layers >= 1 && m->num_layers <= GD_SAMPLER_MAX_LAYERS, GD_ERR_INVALID_ARG,
               "%s: num_layers %d (1 to %d)", who, m->num_layers, GD_SAMPLER_MAX_LAYERS);
    GD_REQUIRE(m->in_dim >= 1 && m->in_dim <= MAX_COUNT && m->hidden_dim >= 1 &&
                   m->hidden_dim <= MAX_COUNT && m->num_classes >= 1 && m->num_classes <= MAX_COUNT,
               GD_ERR_INVALID_ARG,
               "%s: in_dim %lld, hidden_dim %lld, num_classes %lld (each 1 to "
               "2^53)",
               who, (long long)m->in_dim, (long long)m->hidden_dim, (long long)m->num_classes);
    for (int i = 0; i < m->num_layers; i++)
        GD_REQUIRE(m->fanouts[i] >= -1, GD_ERR_INVALID_ARG,
                   "%s: fanout %d of hop %d (-1 for all neighbours, or >= 0)", who, m->fanouts[i],
                   i);
    GD_REQUIRE(m->epochs_done >= 0 && m->epochs_done <= MAX_COUNT && m->adam_step >= 0 &&
                   m->adam_step <= MAX_COUNT,
               GD_ERR_INVALID_ARG, "%s: epochs_done %lld, adam_step %lld (each 0 to 2^53)", who,
               (long long)m->epochs_done, (long long)m->adam_step);
    GD_REQUIRE(isnan(m->best_valid) || isfinite(m->best_valid), GD_ERR_INVALID_ARG,
               "%s: best_valid %g (a finite accuracy, or NaN for none)", who, m->best_valid);
    GD_REQUIRE(m->best_epoch >= -1 && m->best_epoch <= MAX_COUNT, GD_ERR_INVALID_ARG,
               "%s: best_epoch %lld (-1 for none, or an epoch)", who, (long long)m->best_epoch);
    GD_REQUIRE(memchr(m->dataset, '\0', sizeof m->dataset) != NULL, GD_ERR_INVALID_ARG,
               "%s: the dataset text is not terminated within its %zu bytes", who,
               sizeof m->dataset);
    GD_REQUIRE(memchr(m->config, '\0', sizeof m->config) != NULL, GD_ERR_INVALID_ARG,
               "%s: the config text is not terminated within its %zu bytes", who, sizeof m->config);
fail:
    return st;
}

/* ------------------------------------------------------------------ writer */

/* The header's JSON text (cJSON_free it), or NULL when cJSON runs out of memory. */
static char *header_json(const gd__checkpoint_meta *m, const gd__nn_params *l, int has_state) {
    char text[64];
    cJSON *root = cJSON_CreateObject();
    int ok = root != NULL;
    ok = ok && cJSON_AddStringToObject(root, "format", GD__CHECKPOINT_FORMAT);
    ok = ok && cJSON_AddStringToObject(root, "model", m->model);
    ok = ok && gd__json_add_int(root, "num_layers", m->num_layers);
    ok = ok && gd__json_add_int(root, "in_dim", m->in_dim);
    ok = ok && gd__json_add_int(root, "hidden_dim", m->hidden_dim);
    ok = ok && gd__json_add_int(root, "num_classes", m->num_classes);
    ok = ok && gd__json_add_int(root, "heads", m->heads > 0 ? m->heads : 1);
    cJSON *fan = ok ? cJSON_AddArrayToObject(root, "fanouts") : NULL;
    ok = ok && fan;
    for (int i = 0; ok && i < m->num_layers; i++) ok = gd__json_push_int(fan, m->fanouts[i]);
    /* A 64-bit seed does not fit a JSON double: it is a decimal string. */
    snprintf(text, sizeof text, "%llu", (unsigned long long)m->seed);
    ok = ok && cJSON_AddStringToObject(root, "seed", text);
    ok = ok && gd__json_add_int(root, "epochs_done", m->epochs_done);
    ok = ok && gd__json_add_int(root, "adam_step", m->adam_step);
    if (ok && isnan(m->best_valid)) {
        ok = cJSON_AddNullToObject(root, "best_valid") != NULL;
    } else if (ok) {
        snprintf(text, sizeof text, "%.17g", m->best_valid);
        ok = cJSON_AddRawToObject(root, "best_valid", text) != NULL;
    }
    ok = ok && gd__json_add_int(root, "best_epoch", m->best_epoch);
    ok = ok && cJSON_AddStringToObject(root, "dataset", m->dataset);
    ok = ok && cJSON_AddStringToObject(root, "config", m->config);
    ok = ok && cJSON_AddStringToObject(root, "dtype", gd_dtype_name(l->dtype));
    ok = ok && gd__json_add_int(root, "numel", l->numel);
    cJSON *tensors = ok ? cJSON_AddArrayToObject(root, "tensors") : NULL;
    ok = ok && tensors;
    for (int i = 0; ok && i < l->count; i++) {
        cJSON *t = cJSON_CreateObject();
        ok = t && cJSON_AddItemToArray(tensors, t);
        if (t && !ok) cJSON_Delete(t);
        ok = ok && gd__json_add_int(t, "rows", l->rows[i]) &&
             gd__json_add_int(t, "cols", l->cols[i]) &&
             gd__json_add_int(t, "offset", l->offset[i]) &&
             gd__json_add_int(t, "fan_in", l->fan_in[i]);
    }
    ok = ok && cJSON_AddBoolToObject(root, "adam_state", has_state);
    char *printed = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    return printed;
}

/* Run a lower-level file call; on failure, say which checkpoint it was about. */
#define CK_IO(expr, ...)                                                                           \
    do {                                                                                           \
        st = (expr);                                                                               \
        if (GD_UNLIKELY(st != GD_OK)) {                                                            \
            gd__error_context(st, __VA_ARGS__);                                                    \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

gd_status gd__checkpoint_save(const char *path, const gd__checkpoint_meta *meta,
                              const gd__nn_params *layout, const void *params, const void *state) {
    gd_status st = GD_OK;
    char *json = NULL, *dir = NULL;
    unsigned char *head = NULL;
    gd__outfile f = {-1, NULL, NULL};
    char who[300];
    GD_REQUIRE(path && *path && meta && layout && params, GD_ERR_INVALID_ARG,
               "gd__checkpoint_save: NULL or empty argument (path, meta, layout and params are "
               "required)");
    snprintf(who, sizeof who, "saving checkpoint '%.240s'", path);
    GD_REQUIRE(host_little_endian(), GD_ERR_UNSUPPORTED,
               "%s: checkpoints are little-endian and this host is not", who);
    GD_CHECK(check_meta(meta, who));
    GD_CHECK(check_layout(layout, who));
    GD_CHECK(check_finite(layout, params, state, GD_ERR_RANGE, who,
                          "; refusing to save a diverged model (lower the learning rate); any "
                          "previous checkpoint at that path is kept"));

    const int64_t es = elem_bytes(layout);
    const int64_t param_bytes = layout->numel * es;
    const int64_t state_bytes = state ? 2 * param_bytes : 0;
    json = header_json(meta, layout, state != NULL);
    GD_REQUIRE(json, GD_ERR_NO_MEMORY, "%s: out of memory formatting the header", who);
    /* The header text, then spaces and a newline up to the 64-byte boundary of the data. */
    const size_t len = strlen(json);
    const size_t head_bytes = (PREFIX_BYTES + len + 1 + DATA_ALIGN - 1) / DATA_ALIGN * DATA_ALIGN;
    GD_REQUIRE(head_bytes - PREFIX_BYTES <= GD__CHECKPOINT_MAX_HEADER, GD_ERR_RANGE,
               "%s: the header is %zu bytes, more than the %d a reader accepts", who, len,
               GD__CHECKPOINT_MAX_HEADER);
    const int64_t file_bytes = (int64_t)head_bytes + param_bytes + state_bytes + CRC_BYTES;
    GD_ALLOC(head, head_bytes, "the checkpoint header");
    memcpy(head, ckpt_magic, sizeof ckpt_magic);
    put_u32(head + 8, GD__CHECKPOINT_VERSION);
    put_u32(head + 12, (uint32_t)(head_bytes - PREFIX_BYTES));
    put_u64(head + 16, (uint64_t)file_bytes);
    memcpy(head + PREFIX_BYTES, json, len);
    memset(head + PREFIX_BYTES + len, ' ', head_bytes - PREFIX_BYTES - len);
    head[head_bytes - 1] = '\n';
    cJSON_free(json);
    json = NULL;
    dir = gd__path_dir(path);
    GD_REQUIRE(dir, GD_ERR_NO_MEMORY, "%s: out of memory", who);

    uLong crc = crc32(0L, Z_NULL, 0);
    CK_IO(gd__outfile_create(&f, path), "%s", who);
    CK_IO(gd__outfile_write(&f, head, head_bytes), "%s", who);
    crc = crc_update(crc, head, head_bytes);
    CK_IO(gd__outfile_write(&f, params, (size_t)param_bytes), "%s", who);
    crc = crc_update(crc, params, (size_t)param_bytes);
    if (state) {
        CK_IO(gd__outfile_write(&f, state, (size_t)state_bytes), "%s", who);
        crc = crc_update(crc, state, (size_t)state_bytes);
    }
    unsigned char tail[CRC_BYTES];
    put_u32(tail, (uint32_t)crc);
    CK_IO(gd__outfile_write(&f, tail, sizeof tail), "%s", who);
    CK_IO(gd__outfile_commit(&f), "%s", who);
    /*
     * The rename is done: the new file has replaced any old one. If the directory cannot be
     * flushed the new file is complete but may not survive a power failure; say so.
     */
    CK_IO(gd__fsync_dir(dir, true),
          "%s: the file was written but its directory was not flushed, so it "
          "may not survive a crash",
          who);
fail:
    gd__outfile_abort(&f);
    if (json) cJSON_free(json);
    gd_free(head);
    gd_free(dir);
    return st;
}

/* ------------------------------------------------------------------ reader */

/* An open, verified checkpoint: its descriptor, size, header and what the header says. */
typedef struct {
    int fd;
    int64_t size;
    int64_t data_offset; /* 24 + H */
    gd__checkpoint_meta meta;
    gd__nn_params layout;
    int has_state;
} ckpt_file;

static gd_status malformed(const char *path, const char *fmt, ...) GD_PRINTF(2, 3);
static gd_status malformed(const char *path, const char *fmt, ...) {
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return gd__error(GD_ERR_FORMAT,
                     "checkpoint '%s' is malformed (its CRC is right, so it was written this way): "
                     "%s; " ADVICE,
                     path, detail);
}

static gd_status get_int(const char *path, const cJSON *obj, const char *key, int64_t lo,
                         int64_t hi, int64_t *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v)) return malformed(path, "'%s' is missing or not a number", key);
    if (v->valuedouble != floor(v->valuedouble) || v->valuedouble < (double)lo ||
        v->valuedouble > (double)hi)
        return malformed(path, "'%s' is %g, expected an integer in [%lld, %lld]", key,
                         v->valuedouble, (long long)lo, (long long)hi);
    *out = (int64_t)v->valuedouble;
    return GD_OK;
}

static gd_status get_string(const char *path, const cJSON *obj, const char *key, char *dst,
                            size_t cap) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(v) || !v->valuestring)
        return malformed(path, "'%s' is missing or not a string", key);
    size_t n = strlen(v->valuestring);
    if (n >= cap)
        return malformed(path, "'%s' is %zu bytes long, at most %zu are allowed", key, n, cap - 1);
    memcpy(dst, v->valuestring, n + 1);
    return GD_OK;
}

/* The model kind: absent in files written before the field existed, all of the default kind. */
static gd_status get_model(const char *path, const cJSON *root, char *dst, size_t cap) {
    gd__model_kind kind = GD__MODEL_DEFAULT;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (v && (!cJSON_IsString(v) || !v->valuestring))
        return malformed(path, "'model' is not a string");
    if (v && gd__model_kind_parse(v->valuestring, &kind) != GD_OK)
        return gd__error_context(GD_ERR_UNSUPPORTED,
                                 "checkpoint '%s' holds a model this build "
                                 "cannot load (use the build that wrote it)",
                                 path);
    snprintf(dst, cap, "%s", gd__model_kind_name(kind));
    return GD_OK;
}

/* Fill cf->meta, cf->layout and cf->has_state from the header's JSON object. */
static gd_status parse_header(const char *path, const cJSON *root, ckpt_file *cf) {
    gd_status st = GD_OK;
    gd__checkpoint_meta *m = &cf->meta;
    gd__nn_params *l = &cf->layout;
    int64_t v = 0;
    gd__checkpoint_meta_init(m);
    memset(l, 0, sizeof *l);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, GD__CHECKPOINT_FORMAT) != 0)
        return malformed(path, "'format' is not \"" GD__CHECKPOINT_FORMAT "\"");
    GD_CHECK(get_model(path, root, m->model, sizeof m->model));
    GD_CHECK(get_int(path, root, "num_layers", 1, GD_SAMPLER_MAX_LAYERS, &v));
    m->num_layers = (int)v;
    GD_CHECK(get_int(path, root, "in_dim", 1, MAX_COUNT, &m->in_dim));
    GD_CHECK(get_int(path, root, "hidden_dim", 1, MAX_COUNT, &m->hidden_dim));
    GD_CHECK(get_int(path, root, "num_classes", 1, MAX_COUNT, &m->num_classes));
    /* heads came with GAT: a file written before it holds a one-head model. */
    if (cJSON_GetObjectItemCaseSensitive(root, "heads")) {
        GD_CHECK(get_int(path, root, "heads", 1, 64, &v));
        m->heads = (int)v;
    }
    const cJSON *fan = cJSON_GetObjectItemCaseSensitive(root, "fanouts");
    if (!cJSON_IsArray(fan) || cJSON_GetArraySize(fan) != m->num_layers)
        return malformed(path, "'fanouts' is not an array of %d integers", m->num_layers);
    for (int i = 0; i < m->num_layers; i++) {
        const cJSON *e = cJSON_GetArrayItem(fan, i);
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < -1 ||
            e->valuedouble > INT_MAX)
            return malformed(path, "fanout %d is not an integer in [-1, %d]", i, INT_MAX);
        m->fanouts[i] = (int)e->valuedouble;
    }
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(root, "seed");
    if (!cJSON_IsString(seed) || !seed->valuestring || !*seed->valuestring)
        return malformed(path, "'seed' is missing or not a decimal string");
    uint64_t s = 0;
    for (const char *c = seed->valuestring; *c; c++) {
        if (*c < '0' || *c > '9' || s > (UINT64_MAX - (uint64_t)(*c - '0')) / 10)
            return malformed(path, "'seed' \"%.40s\" is not a decimal number below 2^64",
                             seed->valuestring);
        s = s * 10 + (uint64_t)(*c - '0');
    }
    m->seed = s;
    GD_CHECK(get_int(path, root, "epochs_done", 0, MAX_COUNT, &m->epochs_done));
    GD_CHECK(get_int(path, root, "adam_step", 0, MAX_COUNT, &m->adam_step));
    const cJSON *bv = cJSON_GetObjectItemCaseSensitive(root, "best_valid");
    if (cJSON_IsNull(bv))
        m->best_valid = NAN;
    else if (cJSON_IsNumber(bv) && isfinite(bv->valuedouble))
        m->best_valid = bv->valuedouble;
    else
        return malformed(path, "'best_valid' is neither a number nor null");
    GD_CHECK(get_int(path, root, "best_epoch", -1, MAX_COUNT, &m->best_epoch));
    GD_CHECK(get_string(path, root, "dataset", m->dataset, sizeof m->dataset));
    GD_CHECK(get_string(path, root, "config", m->config, sizeof m->config));

    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "dtype");
    if (cJSON_IsString(dt) && strcmp(dt->valuestring, "float32") == 0)
        l->dtype = GD_DTYPE_FLOAT32;
    else if (cJSON_IsString(dt) && strcmp(dt->valuestring, "float64") == 0)
        l->dtype = GD_DTYPE_FLOAT64;
    else
        return malformed(path, "'dtype' is not \"float32\" or \"float64\"");
    GD_CHECK(get_int(path, root, "numel", 1, MAX_COUNT, &l->numel));
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    const int count = cJSON_IsArray(tensors) ? cJSON_GetArraySize(tensors) : -1;
    if (count < 1 || count > GD__NN_MAX_PARAMS)
        return malformed(path, "'tensors' is not an array of 1 to %d tensors", GD__NN_MAX_PARAMS);
    l->count = count;
    for (int i = 0; i < count; i++) {
        const cJSON *t = cJSON_GetArrayItem(tensors, i);
        if (!cJSON_IsObject(t)) return malformed(path, "tensor %d is not an object", i);
        GD_CHECK(get_int(path, t, "rows", 1, MAX_COUNT, &l->rows[i]));
        GD_CHECK(get_int(path, t, "cols", 1, MAX_COUNT, &l->cols[i]));
        GD_CHECK(get_int(path, t, "offset", 0, MAX_COUNT, &l->offset[i]));
        GD_CHECK(get_int(path, t, "fan_in", 1, MAX_COUNT, &l->fan_in[i]));
    }
    l->step = m->adam_step;
    const cJSON *hs = cJSON_GetObjectItemCaseSensitive(root, "adam_state");
    if (!cJSON_IsBool(hs)) return malformed(path, "'adam_state' is not true or false");
    cf->has_state = cJSON_IsTrue(hs);
    char who[300];
    snprintf(who, sizeof who, "checkpoint '%.240s' is malformed: its layout", path);
    if ((st = check_layout(l, who)) != GD_OK) {
        /* check_layout's status says "invalid argument"; for a file it is a format error. */
        return GD_ERR_FORMAT;
    }
fail:
    return st;
}

/* Open path and check it whole: magic, version, size, CRC, header, and that the layout
 * accounts for every byte. On success cf->fd is open (the caller closes it). */
static gd_status open_checked(const char *path, ckpt_file *cf) {
    gd_status st = GD_OK;
    unsigned char prefix[PREFIX_BYTES];
    unsigned char *chunk = NULL;
    char *text = NULL;
    cJSON *root = NULL;
    memset(cf, 0, sizeof *cf);
    cf->fd = -1;
    GD_REQUIRE(path && *path, GD_ERR_INVALID_ARG, "checkpoint: NULL or empty path");
    GD_REQUIRE(host_little_endian(), GD_ERR_UNSUPPORTED,
               "checkpoint '%s': checkpoints are little-endian and this host is not", path);
    /* Saves into this directory that were killed mid-write left "<name>.gdc.tmp.<pid>". */
    gd__sweep_stale_beside(path, ".gdc");
    CK_IO(gd__file_open_read(path, &cf->fd, &cf->size), "reading checkpoint '%s'", path);

    /* A file too short for the prefix: truncated if what is there starts like a checkpoint. */
    const int64_t have = cf->size < PREFIX_BYTES ? cf->size : PREFIX_BYTES;
    if (have > 0)
        CK_IO(gd__file_pread(cf->fd, path, prefix, (size_t)have, 0), "reading checkpoint '%s'",
              path);
    const size_t magic_have = (size_t)(have < 8 ? have : 8);
    GD_REQUIRE(memcmp(prefix, ckpt_magic, magic_have) == 0, GD_ERR_FORMAT,
               "'%s' is not a graphdirect checkpoint (it does not start with the checkpoint "
               "magic bytes \\x89GDCKPT\\n)",
               path);
    GD_REQUIRE(cf->size >= PREFIX_BYTES, GD_ERR_FORMAT,
               "checkpoint '%s' is truncated: expected at least %d bytes, found %lld; it was not "
               "written completely: " ADVICE,
               path, PREFIX_BYTES + CRC_BYTES, (long long)cf->size);
    const uint32_t version = get_u32(prefix + 8);
    GD_REQUIRE(version == GD__CHECKPOINT_VERSION, GD_ERR_UNSUPPORTED,
               "checkpoint '%s' has format version %u; this build reads version %d (a newer "
               "graphdirect wrote it, or the file is damaged)",
               path, version, GD__CHECKPOINT_VERSION);
    const uint64_t file_bytes = get_u64(prefix + 16);
    GD_REQUIRE(file_bytes <= (uint64_t)cf->size, GD_ERR_FORMAT,
               "checkpoint '%s' is truncated: expected %llu bytes, found %lld; it was not written "
               "completely: " ADVICE,
               path, (unsigned long long)file_bytes, (long long)cf->size);
    GD_REQUIRE(file_bytes == (uint64_t)cf->size, GD_ERR_FORMAT,
               "checkpoint '%s' is damaged: it has %lld bytes, its header records %llu; " ADVICE,
               path, (long long)cf->size, (unsigned long long)file_bytes);
    GD_REQUIRE(cf->size >= PREFIX_BYTES + CRC_BYTES, GD_ERR_FORMAT,
               "checkpoint '%s' is damaged: it records a size of %lld bytes, less than the "
               "smallest checkpoint; " ADVICE,
               path, (long long)cf->size);

    /* The CRC of everything before the last 4 bytes, in chunks through one buffer. */
    const int64_t body = cf->size - CRC_BYTES;
    const size_t cap = body < CHUNK_BYTES ? (size_t)body : CHUNK_BYTES;
    GD_ALLOC(chunk, cap, "reading a checkpoint");
    uLong crc = crc32(0L, Z_NULL, 0);
    for (int64_t at = 0; at < body;) {
        const size_t n = (size_t)(body - at < (int64_t)cap ? body - at : (int64_t)cap);
        CK_IO(gd__file_pread(cf->fd, path, chunk, n, at), "reading checkpoint '%s'", path);
        crc = crc_update(crc, chunk, n);
        at += (int64_t)n;
    }
    unsigned char tail[CRC_BYTES];
    CK_IO(gd__file_pread(cf->fd, path, tail, CRC_BYTES, body), "reading checkpoint '%s'", path);
    gd_free(chunk);
    chunk = NULL;
    GD_REQUIRE((uint32_t)crc == get_u32(tail), GD_ERR_FORMAT,
               "checkpoint '%s' is corrupt: the CRC32 of its contents is 0x%08x, the file records "
               "0x%08x (the file was damaged after it was written); " ADVICE,
               path, (unsigned)(uint32_t)crc, (unsigned)get_u32(tail));

    /* The CRC is right: from here on a bad value means a bad writer, not a bad disk. */
    const uint32_t h = get_u32(prefix + 12);
    if (h < 2 || h > GD__CHECKPOINT_MAX_HEADER || (int64_t)h > body - PREFIX_BYTES) {
        st = malformed(path, "a header of %u bytes (2 to %d, within the file)", h,
                       GD__CHECKPOINT_MAX_HEADER);
        goto fail;
    }
    GD_ALLOC(text, (size_t)h + 1, "a checkpoint header");
    CK_IO(gd__file_pread(cf->fd, path, text, h, PREFIX_BYTES), "reading checkpoint '%s'", path);
    text[h] = '\0';
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(text, h, &end, 0);
    if (!root) {
        st = malformed(path, "its header is not valid JSON (error near byte %lld)",
                       (long long)(end && end >= text ? end - text : 0));
        goto fail;
    }
    for (const char *p = end; p < text + h; p++) {
        if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r') {
            st = malformed(path, "unexpected bytes after the header's JSON object");
            goto fail;
        }
    }
    GD_CHECK(parse_header(path, root, cf));
    cf->data_offset = PREFIX_BYTES + (int64_t)h;
    const int64_t data = cf->layout.numel * elem_bytes(&cf->layout) * (cf->has_state ? 3 : 1);
    if (cf->data_offset + data + CRC_BYTES != cf->size) {
        st = malformed(path, "its header describes %lld bytes of data, the file holds %lld",
                       (long long)data, (long long)(body - cf->data_offset));
        goto fail;
    }
fail:
    cJSON_Delete(root);
    gd_free(text);
    gd_free(chunk);
    if (st != GD_OK && cf->fd >= 0) {
        close(cf->fd);
        cf->fd = -1;
    }
    return st;
}

gd_status gd__checkpoint_peek(const char *path, gd__checkpoint_meta *meta,
                              gd__nn_params *layout_out, int *has_state) {
    ckpt_file cf;
    gd_status st = open_checked(path, &cf);
    if (st != GD_OK) return st;
    close(cf.fd);
    if (meta) *meta = cf.meta;
    if (layout_out) *layout_out = cf.layout;
    if (has_state) *has_state = cf.has_state;
    return GD_OK;
}

static void shape_text(char *buf, size_t n, const gd__nn_params *l, int i) {
    if (i < l->count)
        snprintf(buf, n, "%lld x %lld at element %lld", (long long)l->rows[i],
                 (long long)l->cols[i], (long long)l->offset[i]);
    else
        snprintf(buf, n, "absent");
}

/* The stored layout must be the model's: say which tensor differs and how. */
static gd_status compare_layout(const char *path, const ckpt_file *cf, const gd__nn_params *want) {
    const gd__nn_params *have = &cf->layout;
    const gd__checkpoint_meta *m = &cf->meta;
    char saved_for[200];
    snprintf(saved_for, sizeof saved_for,
             "it was saved for %d layers, in_dim %lld, hidden_dim %lld, num_classes %lld",
             m->num_layers, (long long)m->in_dim, (long long)m->hidden_dim,
             (long long)m->num_classes);
    if (have->dtype != want->dtype)
        return gd__error(GD_ERR_INVALID_ARG,
                         "checkpoint '%s' holds %s parameters, the model is %s; load it into a "
                         "%s model",
                         path, gd_dtype_name(have->dtype), gd_dtype_name(want->dtype),
                         gd_dtype_name(have->dtype));
    const int n = have->count > want->count ? have->count : want->count;
    for (int i = 0; i < n; i++) {
        if (i < have->count && i < want->count && have->rows[i] == want->rows[i] &&
            have->cols[i] == want->cols[i] && have->offset[i] == want->offset[i])
            continue;
        char a[80], b[80];
        shape_text(a, sizeof a, have, i);
        shape_text(b, sizeof b, want, i);
        return gd__error(GD_ERR_INVALID_ARG,
                         "checkpoint '%s' does not fit this model: tensor %d is %s in the file, "
                         "%s in the model (the file has %d tensors, the model %d; %s); use the "
                         "same model settings, or start without --resume",
                         path, i, a, b, have->count, want->count, saved_for);
    }
    if (have->numel != want->numel)
        return gd__error(GD_ERR_INVALID_ARG,
                         "checkpoint '%s' does not fit this model: its flat buffer has %lld "
                         "elements, the model's %lld (the tensors agree: a build with another "
                         "parameter alignment wrote it)",
                         path, (long long)have->numel, (long long)want->numel);
    return GD_OK;
}

gd_status gd__checkpoint_load(const char *path, const gd__nn_params *layout,
                              gd__checkpoint_meta *meta, void *params, void *state,
                              int *has_state) {
    gd_status st = GD_OK;
    ckpt_file cf;
    cf.fd = -1;
    GD_REQUIRE(path && *path && layout && params, GD_ERR_INVALID_ARG,
               "gd__checkpoint_load: NULL or empty argument (path, layout and params are "
               "required)");
    char who[300];
    snprintf(who, sizeof who, "loading checkpoint '%.240s' into a model", path);
    GD_CHECK(check_layout(layout, who));
    GD_CHECK(open_checked(path, &cf));
    GD_CHECK(compare_layout(path, &cf, layout));
    GD_REQUIRE(!state || cf.has_state || has_state, GD_ERR_NOT_FOUND,
               "checkpoint '%s' holds no optimizer state (it was saved without it): it can "
               "initialise a model for evaluation but cannot resume training; start without "
               "--resume",
               path);
    const size_t bytes = (size_t)(layout->numel * elem_bytes(layout));
    CK_IO(gd__file_pread(cf.fd, path, params, bytes, cf.data_offset), "reading checkpoint '%s'",
          path);
    if (state && cf.has_state)
        CK_IO(gd__file_pread(cf.fd, path, state, 2 * bytes, cf.data_offset + (int64_t)bytes),
              "reading checkpoint '%s'", path);
    else if (state)
        memset(state, 0, 2 * bytes);
    /* Only a crafted file with a right CRC gets here with NaN: the writer refuses them. */
    char lead[300];
    snprintf(lead, sizeof lead, "checkpoint '%.240s' is malformed", path);
    GD_CHECK(check_finite(layout, params, (state && cf.has_state) ? state : NULL, GD_ERR_FORMAT,
                          lead, "; " ADVICE));
    if (meta) *meta = cf.meta;
    if (has_state) *has_state = cf.has_state;
fail:
    if (cf.fd >= 0) close(cf.fd);
    return st;
}
