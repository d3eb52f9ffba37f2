/*
 * The out-degree record of a dataset directory (issue 19, start-up). zero-copy ranks hot
 * neighbour lists and feature rows by out-degree, one pass over every edge per build: on papers
 * (1.6G edges) 1.1-1.7 s of a 3.6-4.6 s start from a warm page cache on the H100, read over PCIe
 * from the pinned graph (s9), the largest phase of zero-copy's start after the graph itself.
 * The degrees are a function of indices.npy alone, so the first build writes them beside it as
 * `.outdeg`, and later builds on the same files read them back.
 *
 * `.outdeg` is a text block of OUTDEG_BLOCK bytes (a header with the node and edge counts, then
 * indptr's and indices' paths with their size, modification and change times, inode and device,
 * as `.validated` records files; padded with newlines) followed by one int32 per node (native
 * byte order). A file whose block differs from the one the files give now, or whose size is not the
 * block plus 4 bytes a node, is not read: the build counts the degrees again and writes a new
 * record. Degrees above INT32_MAX (more than 2^31 edges into one node's list) are not recorded.
 * Writing is best effort and atomic (a temporary file renamed): a read-only directory or a full
 * disk only means that the next build counts again. GD_DEGREE_CACHE=0 turns the record off.
 */
#include "dataset.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define OUTDEG_RECORD ".outdeg"
#define OUTDEG_HEADER "graphdirect out-degrees 1"
#define OUTDEG_BLOCK 4096
/* Degrees converted per read or write. */
#define OUTDEG_CHUNK ((int64_t)1 << 20)

static int outdeg_on(void) {
    int64_t on = 1;
    if (gd_param_get_int("GD_DEGREE_CACHE", &on) != GD_OK) {
        gd_clear_error();
        return 0;
    }
    return on != 0;
}

/* The record's text block for ds (OUTDEG_BLOCK bytes), or -1: not a dataset of files. */
static int outdeg_block(const gd_dataset_t *ds, char *block) {
    const gd__array *ip = &ds->arrays[GD_ARRAY_INDPTR], *ix = &ds->arrays[GD_ARRAY_INDICES];
    if (!ds->dir || !ip->path || !ix->path) return -1;
    char a[192], b[192];
    if (gd__path_identity(ip->path, a, sizeof a) != 0 ||
        gd__path_identity(ix->path, b, sizeof b) != 0)
        return -1;
    memset(block, '\n', OUTDEG_BLOCK);
    const int n =
        snprintf(block, OUTDEG_BLOCK, "%s\nnodes %lld edges %lld\n%s %s\n%s %s\n", OUTDEG_HEADER,
                 (long long)ds->num_nodes, (long long)ds->num_edges, ip->path, a, ix->path, b);
    if (n < 0 || n >= OUTDEG_BLOCK) return -1;
    block[n] = '\n'; /* snprintf's terminator: the padding runs on */
    return 0;
}

static void record_path(const gd_dataset_t *ds, char *path, size_t n) {
    snprintf(path, n, "%s/%s", ds->dir, OUTDEG_RECORD);
}

/* The record, opened, when its header and size are those of ds's files now; else -1. */
static int open_matching(const gd_dataset_t *ds) {
    char want[OUTDEG_BLOCK], have[OUTDEG_BLOCK], path[4200];
    int fd = -1;
    int64_t size = 0;
    if (!outdeg_on() || outdeg_block(ds, want) != 0) return -1;
    record_path(ds, path, sizeof path);
    if (gd__file_open_read(path, &fd, &size) != GD_OK) {
        gd_clear_error(); /* no record (or none to read): the caller counts */
        return -1;
    }
    if (size != OUTDEG_BLOCK + 4 * ds->num_nodes ||
        gd__file_pread(fd, path, have, OUTDEG_BLOCK, 0) != GD_OK ||
        memcmp(have, want, OUTDEG_BLOCK) != 0) {
        gd_clear_error();
        close(fd);
        return -1;
    }
    return fd;
}

int gd__outdeg_cache_matches(const gd_dataset_t *ds) {
    const int fd = open_matching(ds);
    if (fd < 0) return 0;
    close(fd);
    return 1;
}

int gd__outdeg_cache_load(const gd_dataset_t *ds, int64_t *deg) {
    char path[4200];
    int32_t *buf = NULL;
    int ok = 0;
    const int fd = open_matching(ds);
    if (fd < 0) return 0;
    record_path(ds, path, sizeof path);
    const int64_t N = ds->num_nodes;
    buf = gd_malloc((size_t)(N < OUTDEG_CHUNK ? (N > 0 ? N : 1) : OUTDEG_CHUNK) * 4);
    if (!buf) goto done;
    for (int64_t lo = 0; lo < N; lo += OUTDEG_CHUNK) {
        const int64_t k = N - lo < OUTDEG_CHUNK ? N - lo : OUTDEG_CHUNK;
        if (gd__file_pread(fd, path, buf, (size_t)k * 4, OUTDEG_BLOCK + 4 * lo) != GD_OK) goto done;
        for (int64_t i = 0; i < k; i++) {
            if (buf[i] < 0) goto done; /* not a degree: a damaged record */
            deg[lo + i] = buf[i];
        }
    }
    ok = 1;
done:
    gd_free(buf);
    close(fd);
    if (!ok) {
        GD_DEBUG("dataset %s: no usable %s record (%s): counting the out-degrees", ds->dir,
                 OUTDEG_RECORD, gd_last_error());
        gd_clear_error();
    }
    return ok;
}

int gd__outdeg_cache_save(const gd_dataset_t *ds, const int64_t *deg) {
    char block[OUTDEG_BLOCK], path[4200];
    int32_t *buf = NULL;
    gd__outfile f = {-1, NULL, NULL};
    const int64_t N = ds->num_nodes;
    if (!outdeg_on() || outdeg_block(ds, block) != 0) return 0;
    for (int64_t i = 0; i < N; i++)
        if (deg[i] < 0 || deg[i] > INT32_MAX) return 0; /* not recordable as int32 */
    record_path(ds, path, sizeof path);
    /* A temporary file renamed into place once flushed (core/file.c), its stale ones swept. */
    gd_status st = gd__outfile_create(&f, path);
    if (st == GD_OK) {
        buf = gd_malloc((size_t)(N < OUTDEG_CHUNK ? (N > 0 ? N : 1) : OUTDEG_CHUNK) * 4);
        st = buf ? gd__outfile_write(&f, block, OUTDEG_BLOCK)
                 : gd__error(GD_ERR_NO_MEMORY, "out of memory for the %s record", OUTDEG_RECORD);
    }
    for (int64_t lo = 0; st == GD_OK && lo < N; lo += OUTDEG_CHUNK) {
        const int64_t k = N - lo < OUTDEG_CHUNK ? N - lo : OUTDEG_CHUNK;
        for (int64_t i = 0; i < k; i++) buf[i] = (int32_t)deg[lo + i];
        st = gd__outfile_write(&f, buf, (size_t)k * 4);
    }
    if (st == GD_OK)
        st = gd__outfile_commit(&f); /* aborts on failure */
    else
        gd__outfile_abort(&f);
    gd_free(buf);
    if (st == GD_OK) return 1;
    GD_DEBUG("dataset %s: no %s record (%s): the next build counts the out-degrees again", ds->dir,
             OUTDEG_RECORD, gd_last_error());
    gd_clear_error();
    return 0;
}
