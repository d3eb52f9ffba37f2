/*
 * `graphdirect plot`, reading its inputs: each file is read whole and told apart by its content,
 * a benchmark result (one JSON document with a "benchmark") or training metrics (JSON lines with
 * a "type"), and checked, so that a malformed file is reported with its line before any chart is
 * written. Training records become runs (run_t), benchmark documents stay as parsed (bench_t).
 * The small string and memory helpers the other plot files share live here too.
 */
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *plot_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *plot_printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

int plot_oom(void) {
    fprintf(stderr, PREFIX "out of memory\n");
    return -1;
}

int plot_grow(void **p, int *cap, int n, size_t size) {
    if (n < *cap) return 0;
    int ncap = *cap ? *cap * 2 : 16;
    void *q = realloc(*p, (size_t)ncap * size);
    if (!q) return plot_oom();
    *p = q;
    *cap = ncap;
    return 0;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* A file as a legend names it: its base name without .json or .jsonl. */
char *plot_file_label(const char *path) {
    const char *b = base_name(path);
    size_t n = strlen(b);
    if (n > 6 && !strcmp(b + n - 6, ".jsonl"))
        n -= 6;
    else if (n > 5 && !strcmp(b + n - 5, ".json"))
        n -= 5;
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, b, n);
    s[n] = '\0';
    return s;
}

/* The whole file, NUL-terminated; a file with a NUL byte inside is not text and is refused. */
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (!f) {
        fprintf(stderr, PREFIX "cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    for (;;) {
        if (cap - len < 65536 + 1) {
            size_t ncap = cap ? cap * 2 : 65536 * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                plot_oom();
                goto fail;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        fprintf(stderr, PREFIX "cannot read %s: %s\n", path, strerror(errno));
        goto fail;
    }
    fclose(f);
    buf[len] = '\0';
    if (strlen(buf) != len) {
        fprintf(stderr, PREFIX "%s: a NUL byte at offset %zu: not a JSON text file\n", path,
                strlen(buf));
        free(buf);
        return NULL;
    }
    return buf;
fail:
    fclose(f);
    free(buf);
    return NULL;
}

/* Line and column (from 1) of position pos in text. */
static void line_col(const char *text, const char *pos, int *line, int *col) {
    int l = 1;
    const char *start = text;
    for (const char *p = text; p < pos && *p; p++)
        if (*p == '\n') l++, start = p + 1;
    *line = l;
    *col = (int)(pos - start) + 1;
}

int plot_is_blank(const char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
    return *s == '\0';
}

/*
 * A number field of a metrics record: absent or null give NaN unless the field is required;
 * anything else that is not a number is an error naming the file, line and field.
 */
static int get_number(const cJSON *o, const char *key, int required, double *out, const char *path,
                      int line, const char *type) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NAN;
    if (cJSON_IsNumber(it)) {
        *out = it->valuedouble;
        return 0;
    }
    if (it && !cJSON_IsNull(it)) {
        fprintf(stderr, PREFIX "%s:%d: \"%s\" of this %s record is not a number\n", path, line, key,
                type);
        return -1;
    }
    if (required) {
        fprintf(stderr, PREFIX "%s:%d: this %s record has no number \"%s\"\n", path, line, type,
                key);
        return -1;
    }
    return 0;
}

static run_t *new_run(plot_ctx *c, const char *path, char *label) {
    if (!label || plot_grow((void **)&c->runs, &c->cap_runs, c->n_runs, sizeof *c->runs)) {
        if (!label) plot_oom();
        free(label);
        return NULL;
    }
    run_t *r = &c->runs[c->n_runs++];
    memset(r, 0, sizeof *r);
    r->label = label;
    r->path = path;
    r->test_acc = NAN;
    return r;
}

/* "products zero-copy" from the run record's dataset, mode and model; its own "label" wins. */
static char *run_label(const cJSON *o, const char *path) {
    const cJSON *label = cJSON_GetObjectItemCaseSensitive(o, "label");
    if (cJSON_IsString(label) && label->valuestring[0]) return strdup(label->valuestring);
    static const char *const keys[] = {"dataset", "mode", "model"};
    size_t n = 1;
    for (int k = 0; k < 3; k++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, keys[k]);
        if (cJSON_IsString(it)) n += strlen(it->valuestring) + 1;
    }
    char *s = malloc(n);
    if (!s) return NULL;
    s[0] = '\0';
    for (int k = 0; k < 3; k++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, keys[k]);
        if (!cJSON_IsString(it) || !it->valuestring[0]) continue;
        if (s[0]) strcat(s, " ");
        strcat(s, it->valuestring);
    }
    if (!s[0]) {
        free(s);
        return plot_file_label(path);
    }
    return s;
}

/*
 * A record of an epoch already finished in this run starts another run: files appended to one
 * another without "run" records still draw as separate runs instead of a zigzag.
 */
static int epoch_goes_back(const run_t *r, double epoch) {
    return r->n_epochs > 0 && epoch <= r->epochs[r->n_epochs - 1].epoch;
}

static int metrics_record(plot_ctx *c, const char *path, int line, const cJSON *o, run_t **cur) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
    if (!cJSON_IsObject(o) || !cJSON_IsString(type)) {
        fprintf(stderr,
                PREFIX "%s:%d: a metrics line must be a JSON object with a string \"type\" "
                       "(run, step, epoch or test)\n",
                path, line);
        return -1;
    }
    const char *t = type->valuestring;
    if (!strcmp(t, "run")) {
        *cur = new_run(c, path, run_label(o, path));
        return *cur ? 0 : -1;
    }
    /* Unknown record types are skipped, so that a newer trainer's files stay readable. */
    if (strcmp(t, "step") && strcmp(t, "epoch") && strcmp(t, "test")) return 0;
    if (!*cur && !(*cur = new_run(c, path, plot_file_label(path)))) return -1;
    run_t *r = *cur;
    if (!strcmp(t, "step")) {
        step_rec s;
        if (get_number(o, "epoch", 1, &s.epoch, path, line, t) ||
            get_number(o, "step", 1, &s.step, path, line, t) ||
            get_number(o, "loss", 0, &s.loss, path, line, t))
            return -1;
        if (epoch_goes_back(r, s.epoch) && !(r = *cur = new_run(c, path, strdup(r->label))))
            return -1;
        if (plot_grow((void **)&r->steps, &r->cap_steps, r->n_steps, sizeof s)) return -1;
        r->steps[r->n_steps++] = s;
    } else if (!strcmp(t, "epoch")) {
        epoch_rec e;
        if (get_number(o, "epoch", 1, &e.epoch, path, line, t) ||
            get_number(o, "loss", 0, &e.loss, path, line, t) ||
            get_number(o, "train_acc", 0, &e.train_acc, path, line, t) ||
            get_number(o, "valid_acc", 0, &e.valid_acc, path, line, t) ||
            get_number(o, "epoch_s", 0, &e.epoch_s, path, line, t) ||
            get_number(o, "minibatches", 0, &e.minibatches, path, line, t))
            return -1;
        for (int k = 0; k < NUM_PARTS; k++)
            if (get_number(o, part_keys[k], 0, &e.parts[k], path, line, t)) return -1;
        if (epoch_goes_back(r, e.epoch) && !(r = *cur = new_run(c, path, strdup(r->label))))
            return -1;
        if (plot_grow((void **)&r->epochs, &r->cap_epochs, r->n_epochs, sizeof e)) return -1;
        r->epochs[r->n_epochs++] = e;
    } else {
        /* The exact accuracy (all neighbours) when the trainer computed it, else the sampled. */
        double sampled, exact;
        if (get_number(o, "test_acc", 0, &sampled, path, line, t) ||
            get_number(o, "test_acc_full", 0, &exact, path, line, t))
            return -1;
        r->test_acc = isfinite(exact) ? exact : sampled;
    }
    return 0;
}

/*
 * JSON lines: each non-blank line one object. An unparsable last line without its newline is
 * what a run killed while writing leaves behind: it is skipped with a note, not an error.
 */
static int parse_metrics(plot_ctx *c, const char *path, char *text) {
    run_t *cur = NULL;
    int line = 0;
    char *p = text;
    while (*p) {
        char *nl = strchr(p, '\n');
        char *end = nl ? nl : p + strlen(p);
        line++;
        *end = '\0';
        if (!plot_is_blank(p)) {
            const char *err = NULL;
            cJSON *o = cJSON_ParseWithOpts(p, &err, 1);
            if (!o) {
                if (!nl) {
                    fprintf(stderr,
                            PREFIX "note: %s:%d: skipping the incomplete last line (the run "
                                   "was probably stopped while writing it)\n",
                            path, line);
                    break;
                }
                fprintf(stderr,
                        PREFIX "%s:%d: not valid JSON near column %d (a metrics file holds one "
                               "JSON object per line)\n",
                        path, line, err ? (int)(err - p) + 1 : 1);
                return -1;
            }
            int rc = metrics_record(c, path, line, o, &cur);
            cJSON_Delete(o);
            if (rc) return -1;
        }
        if (!nl) break;
        p = nl + 1;
    }
    return 0;
}

static int parse_bench(plot_ctx *c, const char *path, cJSON *doc) {
    static const char *const arrays[] = {"results", "runs", "sweep"};
    bench_t *b = &c->benches[c->n_benches];
    memset(b, 0, sizeof *b);
    b->path = path;
    b->benchmark = cJSON_GetObjectItemCaseSensitive(doc, "benchmark")->valuestring;
    for (int k = 0; k < 3 && !b->items; k++) {
        cJSON *a = cJSON_GetObjectItemCaseSensitive(doc, arrays[k]);
        if (cJSON_IsArray(a)) b->items = a, b->array_name = arrays[k];
    }
    if (!b->items || cJSON_GetArraySize(b->items) == 0) {
        fprintf(stderr,
                PREFIX "%s: a bench \"%s\" result without a non-empty results array (\"results\", "
                       "\"runs\" or \"sweep\"); nothing to plot\n",
                path, b->benchmark);
        cJSON_Delete(doc);
        return -1;
    }
    int i = 0;
    for (const cJSON *it = b->items->child; it; it = it->next, i++) {
        if (!cJSON_IsObject(it)) {
            fprintf(stderr, PREFIX "%s: \"%s\"[%d] is not an object\n", path, b->array_name, i);
            cJSON_Delete(doc);
            return -1;
        }
    }
    b->doc = doc;
    c->n_benches++;
    return 0;
}

/*
 * Read one input and tell its kind from the content: a JSON document with a "benchmark" string
 * is a bench result; JSON lines whose records carry a "type" are training metrics. A file that
 * is neither parses as one document (then the error is at its line) or its first line parses
 * alone (then it is JSON lines, checked line by line).
 */
int plot_read_input(plot_ctx *c, const char *path) {
    char *text = read_text(path);
    const char *err = NULL;
    int rc = -1, line, col;
    if (!text) return -1;
    if (plot_is_blank(text)) {
        fprintf(stderr, PREFIX "%s: the file is empty\n", path);
        goto done;
    }
    cJSON *doc = cJSON_ParseWithOpts(text, &err, 1);
    if (doc) {
        if (cJSON_IsObject(doc) &&
            cJSON_IsString(cJSON_GetObjectItemCaseSensitive(doc, "benchmark"))) {
            rc = parse_bench(c, path, doc);
            goto done;
        }
        int metrics =
            cJSON_IsObject(doc) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(doc, "type"));
        cJSON_Delete(doc);
        if (!metrics) {
            fprintf(stderr,
                    PREFIX "%s: neither a benchmark result (a JSON object with a \"benchmark\") "
                           "nor training metrics (JSON lines with a \"type\")\n",
                    path);
            goto done;
        }
        rc = parse_metrics(c, path, text);
        goto done;
    }
    const char *bad = err ? err : text;
    /* Does the first non-blank line stand alone as a JSON object? Then this is JSON lines. */
    char *p = text;
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    char *nl = strchr(p, '\n');
    if (nl) {
        *nl = '\0';
        cJSON *first = cJSON_ParseWithOpts(p, NULL, 1);
        *nl = '\n';
        if (cJSON_IsObject(first)) {
            cJSON_Delete(first);
            rc = parse_metrics(c, path, text);
            goto done;
        }
        cJSON_Delete(first);
    }
    line_col(text, bad, &line, &col);
    /* An error on the last line is most often a file cut short (a run killed while writing). */
    const char *after = strchr(bad, '\n');
    fprintf(stderr, PREFIX "%s:%d: not valid JSON near column %d%s\n", path, line, col,
            !after || plot_is_blank(after) ? " (the last line: was the file cut short?)" : "");
done:
    free(text);
    return rc;
}

/* Drop runs with nothing in them and make the labels of those left unique. */
int plot_tidy_runs(plot_ctx *c) {
    int n = 0;
    for (int i = 0; i < c->n_runs; i++) {
        run_t *r = &c->runs[i];
        if (r->n_epochs || r->n_steps) {
            c->runs[n++] = *r;
        } else {
            free(r->label);
            free(r->epochs);
            free(r->steps);
        }
    }
    c->n_runs = n;
    /* Candidates in turn: the label, then with the file name (which tells files apart), then
       numbered (which tells runs of one file apart). */
    for (int i = 1; i < n; i++) {
        char *base = c->runs[i].label, *file = plot_file_label(c->runs[i].path), *cand = NULL;
        if (!file) return plot_oom();
        for (int k = 0;; k++) {
            free(cand);
            if (k == 0)
                cand = strdup(base);
            else if (k == 1)
                cand = strstr(base, file) ? NULL : plot_printf("%s (%s)", base, file);
            else
                cand = plot_printf("%s #%d", base, k);
            if (k == 1 && !cand) continue;
            if (!cand) {
                free(file);
                return plot_oom();
            }
            int clash = 0;
            for (int j = 0; j < i && !clash; j++) clash = !strcmp(cand, c->runs[j].label);
            if (!clash) break;
        }
        free(file);
        free(base);
        c->runs[i].label = cand;
    }
    return 0;
}
