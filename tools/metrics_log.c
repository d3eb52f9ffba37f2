/*
 * The JSON-lines metrics file of the `graphdirect` command (`train --metrics FILE`, `bench epoch`):
 * one JSON object per line, each written in one piece and flushed at once, so that a run that
 * crashes or is killed loses at most the line it was writing, and `graphdirect plot` (or any
 * JSON-lines reader) can draw the run while it is still going. The record types ("run", "step",
 * "epoch", "test") and their fields are described in docs/plot.md; this file only frames and
 * writes them.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct cli_metrics {
    FILE *f;
    char *path;
    int failed; /* a write failed: the file is incomplete, and later writes are refused */
};

/*
 * 1 if path holds something other than metrics records: a non-empty regular file whose first
 * bytes are not a record's (`{"type":`), e.g. a dataset's meta.json. Such a file is never
 * truncated or appended to.
 */
static int foreign_file(const char *path) {
    static const char head[] = "{\"type\":";
    char buf[sizeof head - 1];
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size == 0) return 0;
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    const size_t got = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return got != sizeof buf || memcmp(buf, head, sizeof buf) != 0;
}

int cli_metrics_open(const char *path, int append, cli_metrics **out) {
    cli_metrics *m = NULL;
    int fd = -1;
    *out = NULL;
    if (!path || !*path) {
        fprintf(stderr, "graphdirect: the metrics file name is empty\n");
        return -1;
    }
    if (foreign_file(path)) {
        fprintf(stderr,
                "graphdirect: %s exists and is not a metrics file (it does not start with a "
                "graphdirect record); it is left as it is: choose another --metrics path\n",
                path);
        return -1;
    }
    m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        fprintf(stderr, "graphdirect: out of memory opening the metrics file %s\n", path);
        goto fail;
    }
    /* A resumed run adds its records to the earlier ones; a new run starts the file anew. */
    /*
     * O_NONBLOCK: a FIFO without a reader fails at once (ENXIO) instead of blocking the run
     * forever; with a reader it opens, and writes then block as usual.
     */
    fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | (append ? O_APPEND : O_TRUNC) | O_CLOEXEC,
              0644);
    if (fd < 0 && errno == ENXIO) {
        fprintf(stderr,
                "graphdirect: the metrics file %s is a FIFO that no process reads; start its "
                "reader first, or choose a regular file\n",
                path);
        goto fail;
    }
    if (fd >= 0) {
        const int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
            fprintf(stderr, "graphdirect: cannot set up the metrics file %s: %s\n", path,
                    strerror(errno));
            goto fail;
        }
    }
    if (fd < 0) {
        fprintf(stderr,
                "graphdirect: cannot create the metrics file %s: %s (is the directory there "
                "and writable?)\n",
                path, strerror(errno));
        goto fail;
    }
    /* Fully buffered: a record goes out in one write(2) when it is flushed, never in pieces. */
    m->f = fdopen(fd, "w");
    if (!m->f) {
        fprintf(stderr, "graphdirect: cannot open the metrics file %s: %s\n", path,
                strerror(errno));
        goto fail;
    }
    *out = m;
    return 0;
fail:
    if (m && m->f)
        fclose(m->f);
    else if (fd >= 0)
        close(fd);
    if (m) free(m->path);
    free(m);
    return -1;
}

int cli_metrics_write(cli_metrics *m, cJSON *obj) {
    char *text = NULL;
    int rc = -1;
    if (!m) {
        cJSON_Delete(obj);
        return -1;
    }
    if (m->failed) goto done; /* the first failure was reported; the file is already short */
    if (!obj) {
        /* A NULL record is what a cJSON builder returns when it ran out of memory. */
        fprintf(stderr, "graphdirect: out of memory building a record of the metrics file %s\n",
                m->path);
        goto done;
    }
    text = cJSON_PrintUnformatted(obj);
    if (!text) {
        fprintf(stderr, "graphdirect: out of memory formatting a record of the metrics file %s\n",
                m->path);
        goto done;
    }
    /* cJSON escapes control characters inside strings, so the record is one line. */
    errno = 0;
    if (fputs(text, m->f) == EOF || putc('\n', m->f) == EOF || fflush(m->f) != 0) {
        fprintf(stderr, "graphdirect: writing the metrics file %s failed: %s\n", m->path,
                errno ? strerror(errno) : "I/O error");
        m->failed = 1;
        goto done;
    }
    rc = 0;
done:
    if (rc != 0 && m) m->failed = 1;
    cJSON_free(text);
    cJSON_Delete(obj);
    return rc;
}

void cli_metrics_close(cli_metrics *m) {
    if (!m) return;
    if (fclose(m->f) != 0 && !m->failed)
        fprintf(stderr, "graphdirect: closing the metrics file %s failed: %s\n", m->path,
                strerror(errno));
    free(m->path);
    free(m);
}

cJSON *cli_metrics_record(const char *type) {
    cJSON *obj = cJSON_CreateObject();
    if (obj && !cJSON_AddStringToObject(obj, "type", type)) {
        cJSON_Delete(obj);
        return NULL;
    }
    return obj;
}

int cli_metrics_add_time(cJSON *obj) {
    char buf[32];
    struct tm tm;
    time_t now = time(NULL);
    if (!obj || !gmtime_r(&now, &tm) || !strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm))
        return -1;
    return cJSON_AddStringToObject(obj, "time", buf) ? 0 : -1;
}
