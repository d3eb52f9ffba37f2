/*
 * Edge-list input of `graphdirect convert` (SNAP-style text: "src dst" per line), plus the
 * pieces every text input shares: growable arrays, integer scanning, and the chunked reader
 * that streams a plain or gzip file through a parser without ever holding the whole file.
 *
 * Data path: file -> gd__read_text (zlib, 4 MiB chunks) -> gd__edgelist_parse (src/dst int64
 * arrays) -> optional relabelling (hash map, in place) -> gd_csc_from_coo -> dataset. The
 * parsed edges are the only O(E) copy besides the CSC arrays; they are freed as soon as the
 * graph is built.
 */
#include "io/ingest.h"
#include "io/npy.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* ------------------------------------------------------------ growable arrays */

#define VEC_MIN_CAP 1024

static gd_status vec_grow(void **data, int64_t *cap, int64_t len, int64_t more, size_t elem,
                          const char *what) {
    int64_t need, bytes;
    if (gd__add_overflow_i64(len, more, &need) || gd__mul_overflow_i64(need, (int64_t)elem,
                                                                       &bytes) ||
        (uint64_t)bytes > SIZE_MAX)
        return gd__error(GD_ERR_OVERFLOW, "%s: %lld + %lld elements overflow the size", what,
                         (long long)len, (long long)more);
    if (need <= *cap) return GD_OK;
    int64_t cap2 = *cap < VEC_MIN_CAP ? VEC_MIN_CAP : *cap;
    while (cap2 < need) cap2 = cap2 > INT64_MAX / 4 ? need : cap2 + cap2 / 2;
    if (gd__mul_overflow_i64(cap2, (int64_t)elem, &bytes) || (uint64_t)bytes > SIZE_MAX) {
        cap2 = need;
        bytes = need * (int64_t)elem;
    }
    void *p = gd_realloc(*data, (size_t)bytes);
    if (!p)
        return gd__error(GD_ERR_NO_MEMORY, "out of memory growing %s to %lld elements", what,
                         (long long)cap2);
    *data = p;
    *cap = cap2;
    return GD_OK;
}

gd_status gd__i64vec_reserve(gd__i64vec *v, int64_t more, const char *what) {
    if (more <= v->cap - v->len) return GD_OK;
    void *d = v->data;
    gd_status st = vec_grow(&d, &v->cap, v->len, more, sizeof(int64_t), what);
    v->data = d;
    return st;
}

gd_status gd__f32vec_reserve(gd__f32vec *v, int64_t more, const char *what) {
    if (more <= v->cap - v->len) return GD_OK;
    void *d = v->data;
    gd_status st = vec_grow(&d, &v->cap, v->len, more, sizeof(float), what);
    v->data = d;
    return st;
}

void gd__i64vec_free(gd__i64vec *v) {
    gd_free(v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}

void gd__f32vec_free(gd__f32vec *v) {
    gd_free(v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}

/* ------------------------------------------------------------ scanning text */

int gd__scan_i64(const char *p, const char *end, int64_t *out, const char **stop) {
    int neg = 0;
    if (p < end && (*p == '-' || *p == '+')) neg = *p++ == '-';
    if (p >= end || *p < '0' || *p > '9') return 1;
    /* Accumulate as a negative number so that INT64_MIN is representable. */
    int64_t v = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        int d = *p - '0';
        if (v < (INT64_MIN + d) / 10) return 2;
        v = v * 10 - d;
    }
    if (!neg) {
        if (v == INT64_MIN) return 2;
        v = -v;
    }
    *out = v;
    *stop = p;
    return 0;
}

const char *gd__quote(const char *p, size_t n, char *buf, size_t size) {
    size_t o = 0, max = size - 4;
    for (size_t i = 0; i < n && o < max; i++) {
        unsigned char c = (unsigned char)p[i];
        buf[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (n > max) buf[o++] = '.', buf[o++] = '.', buf[o++] = '.';
    buf[o] = '\0';
    return buf;
}

/* ------------------------------------------------------------ edge lists */

static int is_blank(char c) { return c == ' ' || c == '\t'; }

static gd_status push_edge(gd__edgelist *el, int64_t s, int64_t d) {
    if (GD_UNLIKELY(el->src.len == el->src.cap || el->dst.len == el->dst.cap)) {
        gd_status st = gd__i64vec_reserve(&el->src, 1, "the edge sources");
        if (st == GD_OK) st = gd__i64vec_reserve(&el->dst, 1, "the edge destinations");
        if (st != GD_OK) return st;
    }
    el->src.data[el->src.len++] = s;
    el->dst.data[el->dst.len++] = d;
    return GD_OK;
}

/* One id of line [p, end): scanned, checked, and *p moved past it. */
static gd_status edge_id(gd__edgelist *el, const char **p, const char *line, const char *end,
                         const char *role, int64_t *out) {
    char q[64];
    const char *stop = NULL, *tok = *p;
    const char *tok_end = tok;
    while (tok_end < end && !is_blank(*tok_end)) tok_end++;
    if (tok == end)
        return gd__error(GD_ERR_FORMAT,
                         "%s:%lld: '%s' has no %s id: expected 'src dst' (two integers "
                         "separated by spaces or tabs)",
                         el->what, (long long)el->line, gd__quote(line, (size_t)(end - line), q,
                                                                  sizeof q), role);
    int r = gd__scan_i64(tok, end, out, &stop);
    if (r == 0 && stop < end && !is_blank(*stop)) r = 1;
    if (r == 1)
        return gd__error(GD_ERR_FORMAT,
                         "%s:%lld: %s id '%s' is not an integer: expected 'src dst' (two "
                         "integers separated by spaces or tabs)",
                         el->what, (long long)el->line, role,
                         gd__quote(tok, (size_t)(tok_end - tok), q, sizeof q));
    if (r == 2)
        return gd__error(GD_ERR_RANGE, "%s:%lld: %s id '%s' does not fit in 64 bits", el->what,
                         (long long)el->line, role,
                         gd__quote(tok, (size_t)(tok_end - tok), q, sizeof q));
    if (*out < 0 && !el->allow_negative)
        return gd__error(GD_ERR_RANGE,
                         "%s:%lld: %s id %lld is negative: ids must be >= 0 (or relabel the "
                         "ids with --relabel)",
                         el->what, (long long)el->line, role, (long long)*out);
    if (el->limit > 0 && *out >= el->limit)
        return gd__error(GD_ERR_RANGE,
                         "%s:%lld: %s id %lld is outside [0, %lld): raise the node count or "
                         "relabel the ids with --relabel",
                         el->what, (long long)el->line, role, (long long)*out,
                         (long long)el->limit);
    *p = stop;
    return GD_OK;
}

static gd_status edge_line(gd__edgelist *el, const char *p, const char *end) {
    gd_status st = GD_OK;
    const char *line = p;
    if (end > p && end[-1] == '\r') end--;
    while (p < end && is_blank(*p)) p++;
    if (p == end || *p == '#' || *p == '%') return GD_OK;
    int64_t s, d;
    GD_CHECK(edge_id(el, &p, line, end, "source", &s));
    while (p < end && is_blank(*p)) p++;
    GD_CHECK(edge_id(el, &p, line, end, "destination", &d));
    GD_CHECK(push_edge(el, s, d));
fail:
    return st;
}

gd_status gd__split_lines(const char *buf, size_t len, int final, size_t *consumed,
                          int64_t *line_no, gd__line_fn fn, void *state) {
    gd_status st = GD_OK;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl && !final) break;
        const char *le = nl ? nl : end;
        (*line_no)++;
        GD_CHECK(fn(state, p, le));
        p = nl ? nl + 1 : end;
    }
fail:
    *consumed = (size_t)(p - buf);
    return st;
}

static gd_status edge_line_fn(void *state, const char *p, const char *end) {
    return edge_line(state, p, end);
}

gd_status gd__edgelist_parse(gd__edgelist *el, const char *buf, size_t len, int final,
                             size_t *consumed) {
    return gd__split_lines(buf, len, final, consumed, &el->line, edge_line_fn, el);
}

gd_status gd__edgelist_parse_cb(void *state, const char *buf, size_t len, int final,
                                size_t *consumed) {
    return gd__edgelist_parse(state, buf, len, final, consumed);
}

void gd__edgelist_free(gd__edgelist *el) {
    gd__i64vec_free(&el->src);
    gd__i64vec_free(&el->dst);
}

/* ------------------------------------------------------------ chunked reading */

#define READ_CHUNK ((size_t)4 << 20)
/* A single line longer than this is not text we can parse. */
#define READ_MAX_LINE ((size_t)1 << 30)

gd_status gd__read_text(const char *path, gd__chunk_parser parse, void *state,
                        gd_progress_fn progress, void *progress_user, const char *stage) {
    gd_status st = GD_OK;
    int fd = -1;
    int64_t size = 0;
    gzFile gz = NULL;
    char *buf = NULL;
    size_t cap = READ_CHUNK, have = 0;
    GD_CHECK(gd__file_open_read(path, &fd, &size));
    gz = gzdopen(fd, "rb");
    GD_REQUIRE(gz, GD_ERR_NO_MEMORY, "cannot start reading '%s': out of memory in zlib", path);
    fd = -1; /* gzclose closes it now */
    gzbuffer(gz, 1u << 18);
    GD_ALLOC(buf, cap, "the text read buffer");
    for (;;) {
        GD_CHECK(gd__progress(progress, progress_user, stage, (uint64_t)gzoffset(gz),
                              (uint64_t)size));
        GD_REQUIRE(!gd__fault_hit(GD_FAULT_READ), GD_ERR_IO, "cannot read '%s': injected fault",
                   path);
        size_t want = cap - have;
        if (want > (1u << 30)) want = 1u << 30;
        int got = gzread(gz, buf + have, (unsigned)want);
        int zerr = Z_OK;
        const char *ztext = gzerror(gz, &zerr);
        /* zlib prefixes its message with "<fd:N>: "; the path is named already */
        if (ztext && strncmp(ztext, "<fd:", 4) == 0 && strstr(ztext, ": "))
            ztext = strstr(ztext, ": ") + 2;
        GD_REQUIRE(got >= 0 && (zerr == Z_OK || (zerr == Z_BUF_ERROR && got > 0)),
                   zerr == Z_ERRNO ? GD_ERR_IO : GD_ERR_FORMAT,
                   "'%s' is truncated or corrupt after %lld compressed bytes (zlib: %s): "
                   "re-download or re-compress it",
                   path, (long long)gzoffset(gz),
                   zerr == Z_ERRNO ? strerror(errno) : (ztext ? ztext : "read error"));
        have += (size_t)got;
        int final = got == 0;
        size_t used = 0;
        GD_CHECK(parse(state, buf, have, final, &used));
        if (final) break;
        memmove(buf, buf + used, have - used);
        have -= used;
        if (have == cap) { /* one line fills the buffer: make room for the rest of it */
            GD_REQUIRE(cap < READ_MAX_LINE, GD_ERR_FORMAT,
                       "'%s' has a line longer than %zu bytes: it is not a text file this "
                       "reader understands",
                       path, READ_MAX_LINE);
            char *b2 = gd_realloc(buf, cap * 2);
            GD_REQUIRE(b2, GD_ERR_NO_MEMORY, "out of memory reading a long line of '%s'", path);
            buf = b2;
            cap *= 2;
        }
    }
    GD_CHECK(gd__progress(progress, progress_user, stage, (uint64_t)size, (uint64_t)size));
fail:
    gd_free(buf);
    if (gz) gzclose_r(gz);
    if (fd >= 0) close(fd);
    return st;
}

/* ------------------------------------------------------------ relabelling */

/*
 * Map arbitrary ids to 0..n-1 in order of first appearance (sources before destinations,
 * edge by edge), rewriting src and dst in place. An open-addressing table keyed by the id
 * holds 16 bytes per slot at most half full; it is the only extra memory (O(distinct ids)).
 */
static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

typedef struct {
    int64_t *key, *val; /* val -1 = empty */
    uint64_t mask;
    int64_t count;
} id_map;

static gd_status id_map_init(id_map *m, uint64_t slots) {
    gd_status st = GD_OK;
    m->key = m->val = NULL;
    m->mask = slots - 1;
    m->count = 0;
    GD_ALLOC(m->key, (size_t)slots * sizeof(int64_t), "the relabelling table");
    GD_ALLOC(m->val, (size_t)slots * sizeof(int64_t), "the relabelling table");
    memset(m->val, 0xff, (size_t)slots * sizeof(int64_t));
    return GD_OK;
fail:
    gd_free(m->key);
    gd_free(m->val);
    m->key = m->val = NULL;
    return st;
}

static void id_map_free(id_map *m) {
    gd_free(m->key);
    gd_free(m->val);
    m->key = m->val = NULL;
}

static void id_map_put(id_map *m, int64_t key, int64_t val) {
    uint64_t h = mix64((uint64_t)key) & m->mask;
    while (m->val[h] >= 0) h = (h + 1) & m->mask;
    m->key[h] = key;
    m->val[h] = val;
}

static gd_status id_map_get_or_add(id_map *m, int64_t key, int64_t *out) {
    gd_status st = GD_OK;
    uint64_t h = mix64((uint64_t)key) & m->mask;
    while (m->val[h] >= 0) {
        if (m->key[h] == key) {
            *out = m->val[h];
            return GD_OK;
        }
        h = (h + 1) & m->mask;
    }
    if ((uint64_t)(m->count + 1) * 2 > m->mask + 1) { /* keep the table at most half full */
        id_map bigger;
        GD_CHECK(id_map_init(&bigger, (m->mask + 1) * 2));
        for (uint64_t i = 0; i <= m->mask; i++)
            if (m->val[i] >= 0) id_map_put(&bigger, m->key[i], m->val[i]);
        bigger.count = m->count;
        id_map_free(m);
        *m = bigger;
        h = mix64((uint64_t)key) & m->mask;
        while (m->val[h] >= 0) h = (h + 1) & m->mask;
    }
    m->key[h] = key;
    m->val[h] = m->count;
    *out = m->count++;
fail:
    return st;
}

static gd_status relabel(gd__i64vec *src, gd__i64vec *dst, int64_t *num_ids,
                         gd_progress_fn progress, void *user) {
    gd_status st = GD_OK;
    id_map m = {0};
    GD_CHECK(id_map_init(&m, 1u << 16));
    int64_t e = src->len;
    for (int64_t i = 0; i < e; i++) {
        if ((i & ((1 << 22) - 1)) == 0)
            GD_CHECK(gd__progress(progress, user, "convert: relabel", (uint64_t)i, (uint64_t)e));
        GD_CHECK(id_map_get_or_add(&m, src->data[i], &src->data[i]));
        GD_CHECK(id_map_get_or_add(&m, dst->data[i], &dst->data[i]));
    }
    *num_ids = m.count;
fail:
    id_map_free(&m);
    return st;
}

/* ------------------------------------------------------------ the converter */

/*
 * The node count max id + 1 of an edge list whose ids are far sparser than any graph's: one
 * stray id of 2^31 in a two-line file would make a 17 GB dataset of isolated nodes. Past 2^24
 * nodes, more than 1024 nodes per edge end is refused; --num-nodes says the count is meant,
 * --relabel numbers the ids seen.
 */
static gd_status check_implied_nodes(const char *input, int64_t max_id, int64_t edges) {
    const int64_t n = max_id + 1, ends = 2 * edges;
    if (n <= (INT64_C(1) << 24) || n / 1024 <= ends) return GD_OK;
    return gd__error(GD_ERR_RANGE,
                     "%s: the largest node id is %lld, so the graph would have %lld nodes "
                     "(%.1f GB of indptr alone), but its %lld edges name at most %lld: "
                     "number the ids 0..n-1 (--relabel does it), or give the node count "
                     "(--num-nodes N) if that many nodes are meant",
                     input, (long long)max_id, (long long)n, 8e-9 * (double)n, (long long)edges,
                     (long long)ends);
}

gd_status gd__convert_edgelist(const gd__convert_job *job) {
    gd_status st = GD_OK;
    const gd_convert_options *opt = job->opt;
    gd__edgelist el;
    memset(&el, 0, sizeof el);
    el.what = job->input;
    el.allow_negative = opt->relabel;
    el.limit = opt->relabel ? 0 : opt->num_nodes;
    GD_CHECK(gd__read_text(job->input, gd__edgelist_parse_cb, &el, opt->progress,
                           opt->progress_user, "convert: edges"));
    int64_t n = 0;
    if (opt->relabel) {
        GD_CHECK(relabel(&el.src, &el.dst, &n, opt->progress, opt->progress_user));
        GD_REQUIRE(opt->num_nodes == 0 || opt->num_nodes >= n, GD_ERR_RANGE,
                   "%s: %lld distinct node ids, more than the %lld nodes asked for", job->input,
                   (long long)n, (long long)opt->num_nodes);
        if (opt->num_nodes > 0) n = opt->num_nodes;
    } else if (opt->num_nodes > 0) {
        n = opt->num_nodes;
    } else {
        int64_t mx = -1;
        const int64_t *s = el.src.data, *d = el.dst.data;
        int64_t e = el.src.len;
#pragma omp parallel for reduction(max : mx) schedule(static) num_threads(gd__num_threads())
        for (int64_t i = 0; i < e; i++) {
            int64_t m2 = s[i] > d[i] ? s[i] : d[i];
            if (m2 > mx) mx = m2;
        }
        GD_REQUIRE(mx < INT64_MAX, GD_ERR_RANGE,
                   "%s: node id %lld leaves no room for a node count: relabel the ids",
                   job->input, (long long)mx);
        GD_CHECK(check_implied_nodes(job->input, mx, e));
        n = mx + 1;
    }
    GD_REQUIRE(n > 0, GD_ERR_INVALID_ARG,
               "%s holds no edge, so the graph would have no node: check the file, or give the "
               "node count (--num-nodes N) for a graph of N nodes without edges",
               job->input);
    GD_INFO("%s: %lld edges, %lld nodes", job->input, (long long)el.src.len, (long long)n);
    GD_CHECK(gd__dataset_set_info(job->ds, "source", job->input));
    GD_CHECK(gd__dataset_set_info(job->ds, "input_format", "edge list"));
    if (opt->relabel)
        GD_CHECK(gd__dataset_set_info(job->ds, "relabelled", "in order of first appearance"));
    GD_CHECK(gd__convert_graph(job, n, &el.src, &el.dst));
    if (opt->features) GD_CHECK(gd__convert_npy_features(job, opt->features, n));
    if (opt->labels) GD_CHECK(gd__convert_npy_labels(job, opt->labels, n));
fail:
    gd__edgelist_free(&el);
    return st;
}
