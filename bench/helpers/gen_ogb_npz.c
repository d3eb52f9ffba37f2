/*
 * gen_ogb_npz: write OGB's binary raw layout (ogbn-papers100M's `papers100M-bin`) of a random
 * graph, fast enough to make the real size (111M nodes, 1.6G edges, 84.5 GB) inside a benchmark's
 * time budget (bench/convert-device.sh, issue 19). numpy's np.savez writes one member at a time
 * on one core and computes each CRC-32 as it goes; at papers100M's size that is minutes. Here
 * every byte of the archive has a known place before anything is written (stored members, so a
 * member's size is its array's), so the members are cut into 64 MiB chunks that every core
 * fills, checksums and writes with pwrite at its final offset; the chunks' CRC-32s are joined
 * with zlib's crc32_combine, and the headers are written last.
 *
 * It writes, under DIR:
 *   raw/data.npz        edge_index (int64, 2 x E), node_feat (float32, N x D), node_year
 *                       (int64, N x 1), num_nodes_list and num_edges_list (int64, [1]);
 *   raw/node-label.npz  node_label (float64, N x 1; NaN for unlabelled nodes, about 1.4 % of
 *                       the nodes labelled as in papers100M, classes 0..171);
 *   split/time/{train,valid,test}.csv.gz  the labelled nodes, 80/10/10 by a hash.
 * The archives are zip64 with stored (uncompressed) members, as np.savez writes them; numpy's
 * np.load and graphdirect's reader both read them (tests/py_convert_npz.py compares a small one
 * with numpy). Every value is a hash of (seed, position), so the output does not depend on the
 * thread count. Written pages are handed to the disk as each chunk is done (sync_file_range)
 * and the files are flushed (fsync) before the command ends, so the next step can drop the page
 * cache and read from the disk.
 *
 * Usage: gen_ogb_npz DIR [--nodes N] [--edges E] [--dim D] [--seed S] [--threads T]
 * Exit 0 on success, 1 with a message on stderr otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* Counter-based draws: value i is the same whatever thread makes it. */
#include "../bench_mix.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define CHUNK ((int64_t)64 << 20)
#define MAX_MEMBERS 8

typedef enum { FILL_EDGES, FILL_FEAT, FILL_YEAR, FILL_CONST, FILL_LABEL } fill_kind;

typedef struct {
    const char *name; /* without .npy */
    const char *descr;
    int64_t rows, cols; /* cols 0: a 1-D array of rows */
    int elem;
    fill_kind kind;
    int64_t constant;
    /* Layout in the archive, set by plan(). */
    char header[256];
    int64_t header_len, data_len, local, data_start;
    uint32_t crc;
} member;

typedef struct {
    int64_t nodes, edges, dim;
    uint64_t seed;
} params;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void die(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "gen_ogb_npz: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    exit(1);
}

/* Whether node v is labelled, and its label (papers100M labels about 1.4 % of its nodes). */
static inline int label_of(const params *p, int64_t v, int64_t *label) {
    const uint64_t h = bench_mix64(p->seed ^ 0x6c6162656cull ^ (uint64_t)v * 0x100000001b3ull);
    if (h % 1000 >= 14) return 0;
    *label = (int64_t)((h >> 20) % 172);
    return 1;
}

static void put16(unsigned char *p, unsigned v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static void put32(unsigned char *p, uint32_t v) {
    put16(p, v & 0xffff);
    put16(p + 2, v >> 16);
}
static void put64(unsigned char *p, uint64_t v) {
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* The .npy header of a member, padded so that the data starts at a multiple of 64. */
static void npy_header(member *m) {
    char dict[200], shape[64];
    if (m->cols)
        snprintf(shape, sizeof shape, "(%" PRId64 ", %" PRId64 ")", m->rows, m->cols);
    else
        snprintf(shape, sizeof shape, "(%" PRId64 ",)", m->rows);
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     m->descr, shape);
    int64_t total = 10 + n + 1;
    total = (total + 63) / 64 * 64;
    memcpy(m->header, "\x93NUMPY\x01\x00", 8);
    put16((unsigned char *)m->header + 8, (unsigned)(total - 10));
    memcpy(m->header + 10, dict, (size_t)n);
    memset(m->header + 10 + n, ' ', (size_t)(total - 10 - n - 1));
    m->header[total - 1] = '\n';
    m->header_len = total;
    m->data_len = m->rows * (m->cols ? m->cols : 1) * m->elem;
}

/* Local header: 30 bytes, the name, a zip64 extra field of 20 bytes (both sizes). */
static int64_t local_len(const member *m) { return 30 + (int64_t)strlen(m->name) + 4 + 20; }

/* Lay the members out one after the other; returns the offset of the central directory. */
static int64_t plan(member *ms, int count) {
    int64_t at = 0;
    for (int i = 0; i < count; i++) {
        npy_header(&ms[i]);
        ms[i].local = at;
        ms[i].data_start = at + local_len(&ms[i]);
        at = ms[i].data_start + ms[i].header_len + ms[i].data_len;
    }
    return at;
}

/* Fill bytes [off, off + n) of member m's array data (off and n multiples of its element). */
static void fill(const params *p, const member *m, int64_t off, int64_t n, unsigned char *out) {
    const int64_t first = off / m->elem, count = n / m->elem;
    if (m->kind == FILL_EDGES) {
        /* Row 0 the sources, row 1 the destinations; both uniform over the nodes. */
        int64_t *o = (int64_t *)out;
        for (int64_t k = 0; k < count; k++) {
            const int64_t i = first + k;
            o[k] = bench_below(bench_mix64(p->seed ^ ((uint64_t)i << 1)), p->nodes);
        }
    } else if (m->kind == FILL_FEAT) {
        float *o = (float *)out;
        for (int64_t k = 0; k < count; k++) {
            const uint64_t h = bench_mix64(p->seed * 31 + 0x66656174ull + (uint64_t)(first + k));
            o[k] = (float)((double)(h >> 40) * (1.0 / 16777216.0) - 0.5);
        }
    } else if (m->kind == FILL_YEAR) {
        int64_t *o = (int64_t *)out;
        for (int64_t k = 0; k < count; k++)
            o[k] =
                1990 +
                (int64_t)(bench_mix64(p->seed ^ 0x79656172ull ^ (uint64_t)(first + k) << 8) % 30);
    } else if (m->kind == FILL_LABEL) {
        double *o = (double *)out;
        for (int64_t k = 0; k < count; k++) {
            int64_t y;
            o[k] = label_of(p, first + k, &y) ? (double)y : (double)NAN;
        }
    } else {
        int64_t *o = (int64_t *)out;
        for (int64_t k = 0; k < count; k++) o[k] = m->constant;
    }
}

static void write_all(int fd, const void *buf, int64_t n, int64_t off, const char *path) {
    const char *b = buf;
    while (n > 0) {
        ssize_t w = pwrite(fd, b, (size_t)n, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("writing %s failed: %s", path, w < 0 ? strerror(errno) : "short write");
        b += w;
        n -= w;
        off += w;
    }
}

/* One archive: members filled in parallel chunks, then the headers and the central directory. */
static void write_npz(const char *path, const params *p, member *ms, int count, int threads) {
    const int64_t cd_at = plan(ms, count);
    int64_t cd_len = 0;
    for (int i = 0; i < count; i++) cd_len += 46 + (int64_t)strlen(ms[i].name) + 4 + 28;
    const int64_t total = cd_at + cd_len + 56 + 20 + 22;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) die("cannot create %s: %s", path, strerror(errno));
    int r = posix_fallocate(fd, 0, (off_t)total);
    if (r == ENOSPC) die("%s: no space left on the device for the archive (%s)", path, "ENOSPC");
    if (r != 0 && r != EOPNOTSUPP && r != EINVAL) die("cannot reserve %s: %s", path, strerror(r));

    /* Chunks of every member: member data = its .npy header + its array's bytes. */
    int64_t nchunks = 0, starts[MAX_MEMBERS + 1];
    for (int i = 0; i < count; i++) {
        starts[i] = nchunks;
        nchunks += (ms[i].header_len + ms[i].data_len + CHUNK - 1) / CHUNK;
    }
    starts[count] = nchunks;
    uint32_t *crcs = calloc((size_t)nchunks + 1, sizeof *crcs);
    int64_t *lens = calloc((size_t)nchunks + 1, sizeof *lens);
    if (!crcs || !lens) die("out of memory for %s%s", "the chunk table", "");
    int failed = 0;
#pragma omp parallel num_threads(threads)
    {
        unsigned char *buf = aligned_alloc(4096, (size_t)CHUNK);
        if (!buf) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t c = 0; c < nchunks; c++) {
            if (!buf) continue;
            int i = 0;
            while (c >= starts[i + 1]) i++;
            const member *m = &ms[i];
            const int64_t size = m->header_len + m->data_len, at = (c - starts[i]) * CHUNK;
            const int64_t n = size - at < CHUNK ? size - at : CHUNK;
            int64_t h = 0;
            if (at < m->header_len) {
                h = m->header_len - at < n ? m->header_len - at : n;
                memcpy(buf, m->header + at, (size_t)h);
            }
            if (n > h) fill(p, m, at + h - m->header_len, n - h, buf + h);
            crcs[c] = (uint32_t)crc32(crc32(0, Z_NULL, 0), buf, (uInt)n);
            lens[c] = n;
            write_all(fd, buf, n, m->data_start + at, path);
            /* Start the write-back now: the page cache need not hold the archive. */
            sync_file_range(fd, m->data_start + at, n, SYNC_FILE_RANGE_WRITE);
        }
        free(buf);
    }
    if (failed) die("out of memory for %s%s", "a chunk buffer", "");
    for (int i = 0; i < count; i++) {
        uint32_t crc = crc32(0, Z_NULL, 0);
        for (int64_t c = starts[i]; c < starts[i + 1]; c++)
            crc = (uint32_t)crc32_combine(crc, crcs[c], (z_off_t)lens[c]);
        ms[i].crc = crc;
    }
    free(crcs);
    free(lens);

    /* Local headers (every size in the zip64 extra field), central directory, end records. */
    unsigned char *cd = calloc(1, (size_t)(cd_len + 56 + 20 + 22));
    if (!cd) die("out of memory for %s%s", "the central directory", "");
    unsigned char *q = cd;
    for (int i = 0; i < count; i++) {
        const member *m = &ms[i];
        const size_t nl = strlen(m->name) + 4;
        char name[80];
        snprintf(name, sizeof name, "%s.npy", m->name);
        const uint64_t size = (uint64_t)(m->header_len + m->data_len);
        unsigned char lh[30 + 80 + 20];
        memset(lh, 0, sizeof lh);
        put32(lh, 0x04034b50u);
        put16(lh + 4, 45);
        put16(lh + 10, 0);      /* time */
        put16(lh + 12, 0x21);   /* date: 1980-01-01 */
        put32(lh + 14, m->crc);
        put32(lh + 18, 0xffffffffu);
        put32(lh + 22, 0xffffffffu);
        put16(lh + 26, (unsigned)nl);
        put16(lh + 28, 20);
        memcpy(lh + 30, name, nl);
        put16(lh + 30 + nl, 1);
        put16(lh + 32 + nl, 16);
        put64(lh + 34 + nl, size);
        put64(lh + 42 + nl, size);
        write_all(fd, lh, (int64_t)(30 + nl + 20), m->local, path);

        put32(q, 0x02014b50u);
        put16(q + 4, 45 | 3 << 8); /* made by: unix */
        put16(q + 6, 45);
        put16(q + 12, 0);
        put16(q + 14, 0x21);
        put32(q + 16, m->crc);
        put32(q + 20, 0xffffffffu);
        put32(q + 24, 0xffffffffu);
        put16(q + 28, (unsigned)nl);
        put16(q + 30, 28);
        put32(q + 38, (uint32_t)0644 << 16 | 0x8000u << 16);
        put32(q + 42, 0xffffffffu);
        memcpy(q + 46, name, nl);
        put16(q + 46 + nl, 1);
        put16(q + 48 + nl, 24);
        put64(q + 50 + nl, size);
        put64(q + 58 + nl, size);
        put64(q + 66 + nl, (uint64_t)m->local);
        q += 46 + nl + 28;
    }
    const int64_t z64 = cd_at + cd_len;
    put32(q, 0x06064b50u);
    put64(q + 4, 44);
    put16(q + 12, 45);
    put16(q + 14, 45);
    put64(q + 24, (uint64_t)count);
    put64(q + 32, (uint64_t)count);
    put64(q + 40, (uint64_t)cd_len);
    put64(q + 48, (uint64_t)cd_at);
    q += 56;
    put32(q, 0x07064b50u);
    put64(q + 8, (uint64_t)z64);
    put32(q + 16, 1);
    q += 20;
    put32(q, 0x06054b50u);
    put16(q + 8, 0xffff);
    put16(q + 10, 0xffff);
    put32(q + 12, 0xffffffffu);
    put32(q + 16, 0xffffffffu);
    q += 22;
    write_all(fd, cd, (int64_t)(q - cd), cd_at, path);
    free(cd);
    if (ftruncate(fd, (off_t)total) != 0) die("cannot size %s: %s", path, strerror(errno));
    if (fsync(fd) != 0) die("cannot flush %s: %s", path, strerror(errno));
    close(fd);
}

/* The split files: every labelled node, train/valid/test 8:1:1 by a hash, gzip'd CSV. */
static void write_splits(const char *dir, const params *p) {
    static const char *const names[3] = {"train", "valid", "test"};
    gzFile f[3];
    char path[4200];
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/split/time/%s.csv.gz", dir, names[k]);
        f[k] = gzopen(path, "wb1");
        if (!f[k]) die("cannot create %s: %s", path, strerror(errno));
    }
    for (int64_t v = 0; v < p->nodes; v++) {
        int64_t y;
        if (!label_of(p, v, &y)) continue;
        const uint64_t h = bench_mix64(p->seed ^ 0x73706c6974ull ^ (uint64_t)v << 4) % 10;
        const int k = h < 8 ? 0 : h == 8 ? 1 : 2;
        if (gzprintf(f[k], "%" PRId64 "\n", v) <= 0) die("writing %s failed%s", names[k], "");
    }
    for (int k = 0; k < 3; k++)
        if (gzclose(f[k]) != Z_OK) die("closing the %s split failed%s", names[k], "");
}

static void make_dir(const char *path) {
    if (mkdir(path, 0755) != 0 && errno != EEXIST) die("cannot create %s: %s", path, strerror(errno));
}

static int64_t parse_count(const char *flag, const char *s) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v <= 0) die("%s '%s' is not a positive integer", flag, s);
    return (int64_t)v;
}

int main(int argc, char **argv) {
    params p = {111059956, 1615685872, 128, 1};
    int threads = 0;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: gen_ogb_npz DIR [--nodes N] [--edges E] [--dim D] [--seed S] "
                   "[--threads T]\n  writes DIR/raw/data.npz, DIR/raw/node-label.npz and "
                   "DIR/split/time/*.csv.gz\n  (papers100M's sizes by default: 111059956 nodes, "
                   "1615685872 edges, 128 features)\n");
            return 0;
        }
        if (i + 1 < argc && !strcmp(a, "--nodes")) p.nodes = parse_count(a, argv[++i]);
        else if (i + 1 < argc && !strcmp(a, "--edges")) p.edges = parse_count(a, argv[++i]);
        else if (i + 1 < argc && !strcmp(a, "--dim")) p.dim = parse_count(a, argv[++i]);
        else if (i + 1 < argc && !strcmp(a, "--seed")) p.seed = (uint64_t)parse_count(a, argv[++i]);
        else if (i + 1 < argc && !strcmp(a, "--threads")) threads = (int)parse_count(a, argv[++i]);
        else if (a[0] != '-' && !dir) dir = a;
        else die("unknown argument '%s'%s (see --help)", a, "");
    }
    if (!dir) die("usage: gen_ogb_npz DIR [--nodes N] [--edges E] [--dim D]%s%s", "", "");
#ifdef _OPENMP
    if (threads <= 0) threads = omp_get_max_threads();
#else
    threads = 1;
#endif
    char path[4200];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/raw", dir);
    make_dir(path);
    snprintf(path, sizeof path, "%s/split", dir);
    make_dir(path);
    snprintf(path, sizeof path, "%s/split/time", dir);
    make_dir(path);

    const double t0 = now();
    member data[5] = {
        {"edge_index", "<i8", 2, p.edges, 8, FILL_EDGES, 0, "", 0, 0, 0, 0, 0},
        {"node_feat", "<f4", p.nodes, p.dim, 4, FILL_FEAT, 0, "", 0, 0, 0, 0, 0},
        {"node_year", "<i8", p.nodes, 1, 8, FILL_YEAR, 0, "", 0, 0, 0, 0, 0},
        {"num_nodes_list", "<i8", 1, 0, 8, FILL_CONST, p.nodes, "", 0, 0, 0, 0, 0},
        {"num_edges_list", "<i8", 1, 0, 8, FILL_CONST, p.edges, "", 0, 0, 0, 0, 0}};
    snprintf(path, sizeof path, "%s/raw/data.npz", dir);
    write_npz(path, &p, data, 5, threads);
    const double t1 = now();
    member label[1] = {{"node_label", "<f8", p.nodes, 1, 8, FILL_LABEL, 0, "", 0, 0, 0, 0, 0}};
    snprintf(path, sizeof path, "%s/raw/node-label.npz", dir);
    write_npz(path, &p, label, 1, threads);
    const double t2 = now();
    write_splits(dir, &p);
    const double t3 = now();
    struct stat a, b;
    snprintf(path, sizeof path, "%s/raw/data.npz", dir);
    stat(path, &a);
    snprintf(path, sizeof path, "%s/raw/node-label.npz", dir);
    stat(path, &b);
    printf("gen_ogb_npz: %s: %" PRId64 " nodes, %" PRId64 " edges, %" PRId64
           " features; data.npz %.2f GB in %.1f s (%.2f GB/s, flushed), node-label.npz %.2f GB "
           "in %.1f s, splits %.1f s; %d threads\n",
           dir, p.nodes, p.edges, p.dim, (double)a.st_size / 1e9, t1 - t0,
           (double)a.st_size / 1e9 / (t1 - t0), (double)b.st_size / 1e9, t2 - t1, t3 - t2, threads);
    return 0;
}
