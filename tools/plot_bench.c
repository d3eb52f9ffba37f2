/*
 * `graphdirect plot`, the charts of benchmark results (the JSON of `graphdirect bench`): the
 * main number of each result as bars, a cluster per configuration and a bar per mode (and per
 * file when several are overlaid); for bench gather, lines over the swept row width, a panel
 * per number of ids per call; with --what time, bench epoch's epoch time stacked by part.
 */
#include "plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One result drawn: its bar (category, series) or its point on a sweep (panel, series, x). */
typedef struct {
    char *category, *series;
    double panel, x, y;
    const cJSON *item;
    int file;
} result_t;

typedef struct {
    result_t *res;
    int n, cap;
    char **cats, **sers; /* distinct categories and series, in order of appearance */
    int n_cats, cap_cats, n_sers, cap_sers;
} results;

static void results_free(results *r) {
    for (int i = 0; i < r->n; i++) free(r->res[i].category), free(r->res[i].series);
    free(r->res);
    free(r->cats);
    free(r->sers);
}

static const char *default_metric(const char *benchmark) {
    if (!strcmp(benchmark, "gather")) return "gbps";
    if (!strcmp(benchmark, "sample")) return "seps";
    if (!strcmp(benchmark, "epoch")) return "epoch_s";
    return NULL;
}

static const char *metric_axis(const char *metric, double *scale) {
    *scale = 1;
    if (!strcmp(metric, "gbps")) return "GB/s";
    if (!strcmp(metric, "seps")) return *scale = 1e-6, "million sampled edges per second";
    if (!strcmp(metric, "epoch_s")) return "seconds per epoch";
    if (!strcmp(metric, "seconds")) return "seconds";
    if (!strcmp(metric, "ratio_to_ceiling")) return "ratio to the ceiling";
    return metric;
}

static double item_number(const cJSON *it, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *item_string(const cJSON *it, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*
 * Whether a string field of a result names part of its configuration ("products", "15,10,5"):
 * a short identifier. Descriptions (bench epoch's "plan", a note) are not, nor is the mode.
 */
static int is_config_field(const cJSON *f) {
    if (!cJSON_IsString(f) || !strcmp(f->string, "mode") || !f->valuestring[0]) return 0;
    if (strlen(f->valuestring) > 32) return 0;
    for (const char *p = f->valuestring; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '\n') return 0;
    return 1;
}

/* The configuration fields of a result, in order, joined by spaces: its bar cluster. */
static char *item_category(const cJSON *it) {
    size_t n = 1;
    for (const cJSON *f = it->child; f; f = f->next)
        if (is_config_field(f)) n += strlen(f->valuestring) + 1;
    char *s = malloc(n);
    if (!s) return NULL;
    s[0] = '\0';
    for (const cJSON *f = it->child; f; f = f->next) {
        if (!is_config_field(f)) continue;
        if (s[0]) strcat(s, " ");
        strcat(s, f->valuestring);
    }
    return s;
}

/* Index of s in list, appending it when absent; -1 when out of memory. */
static int intern(char ***list, int *n, int *cap, char *s) {
    for (int i = 0; i < *n; i++)
        if (!strcmp((*list)[i], s)) return i;
    if (plot_grow((void **)list, cap, *n, sizeof **list)) return -1;
    (*list)[*n] = s;
    return (*n)++;
}

static int same_panel(double a, double b) {
    return a == b || (isnan(a) && isnan(b));
}

/*
 * Every result that has the field drawn (stacked: the epoch time or one of its parts). A
 * result's category is its string fields but the mode ("products 15,10,5"), its series the
 * mode, with the file name when several files are overlaid. Results told apart by mode alone
 * make the modes the categories and the files the series. *sweep stays 1 when every result of
 * bench gather has a row width to draw it over.
 */
static int collect_results(const plot_ctx *c, const char *metric, double scale, int stacked,
                           results *R, int *sweep) {
    const char *benchmark = c->benches[0].benchmark;
    *sweep = !stacked && !strcmp(benchmark, "gather");
    for (int b = 0; b < c->n_benches; b++) {
        for (const cJSON *it = c->benches[b].items->child; it; it = it->next) {
            double y = item_number(it, metric);
            int parts = 0;
            for (int k = 0; k < NUM_PARTS; k++) parts += isfinite(item_number(it, part_keys[k]));
            if (!isfinite(y) && !(stacked && parts)) continue;
            if (plot_grow((void **)&R->res, &R->cap, R->n, sizeof *R->res)) return -1;
            result_t *r = &R->res[R->n++];
            memset(r, 0, sizeof *r);
            r->item = it;
            r->file = b;
            r->y = y * scale;
            r->x = item_number(it, "row_bytes");
            r->panel = item_number(it, "ids_requested");
            if (!isfinite(r->panel)) r->panel = item_number(it, "ids");
            if (!isfinite(r->x)) *sweep = 0;
            const char *mode = item_string(it, "mode");
            char *file = plot_file_label(c->benches[b].path);
            r->category = item_category(it);
            r->series = !file ? NULL
                        : c->n_benches > 1
                            ? plot_printf("%s%s(%s)", mode ? mode : "", mode ? " " : "", file)
                            : strdup(mode ? mode : metric);
            free(file);
            if (!r->category || !r->series) return plot_oom();
        }
    }
    int no_category = 1;
    for (int i = 0; i < R->n; i++) no_category &= R->res[i].category[0] == '\0';
    if (no_category && !*sweep) {
        for (int i = 0; i < R->n; i++) {
            result_t *r = &R->res[i];
            const char *mode = item_string(r->item, "mode");
            free(r->category);
            free(r->series);
            r->category = strdup(mode ? mode : "result");
            r->series =
                c->n_benches > 1 ? plot_file_label(c->benches[r->file].path) : strdup(metric);
            if (!r->category || !r->series) return plot_oom();
        }
    }
    for (int i = 0; i < R->n; i++)
        if (intern(&R->cats, &R->n_cats, &R->cap_cats, R->res[i].category) < 0 ||
            intern(&R->sers, &R->n_sers, &R->cap_sers, R->res[i].series) < 0)
            return -1;
    return 0;
}

static int no_results(const plot_ctx *c, const char *metric, int stacked) {
    const cJSON *first = c->benches[0].items->child;
    fprintf(stderr, PREFIX "no result in %s%s has a number \"%s\"; ", c->benches[0].path,
            c->n_benches > 1 ? " (or the other files)" : "", metric);
    if (stacked) {
        fprintf(stderr, "--what time needs epoch_s or its parts (sample_s, gather_s, train_s, "
                        "wait_s)\n");
    } else {
        fprintf(stderr, "the numeric fields of its first result:");
        for (const cJSON *f = first->child; f; f = f->next)
            if (cJSON_IsNumber(f)) fprintf(stderr, " %s", f->string);
        fprintf(stderr, " (choose one with --metric)\n");
    }
    return -1;
}

static int draw_stacked(plot_ctx *c, const results *R, const char *metric, const char *title,
                        const char *tmp_out) {
    stack_row *rows = calloc((size_t)R->n, sizeof *rows);
    int rc = -1;
    if (!rows) return plot_oom();
    for (int i = 0; i < R->n; i++) {
        const char *cat = R->res[i].category, *ser = R->res[i].series;
        if (!strcmp(ser, metric)) ser = "";
        rows[i].label = plot_printf("%s%s%s", cat, cat[0] && ser[0] ? " " : "", ser);
        if (!rows[i].label) {
            plot_oom();
            goto done;
        }
        rows[i].total = item_number(R->res[i].item, "epoch_s");
        for (int k = 0; k < NUM_PARTS; k++)
            rows[i].parts[k] = item_number(R->res[i].item, part_keys[k]);
    }
    plot_gp_preamble(c, tmp_out);
    rc = plot_stack_panel(c, title, "", rows, R->n);
done:
    for (int i = 0; i < R->n; i++) free(rows[i].label);
    free(rows);
    return rc;
}

/* Lines over the row width, a line per series, a panel per ids-per-call; the ceiling dashed. */
static int draw_sweep(plot_ctx *c, const results *R, const char *metric, const char *axis,
                      const char *title, const char *tmp_out) {
    double *panels = NULL;
    char *path = NULL;
    int n_panels = 0, rc = -1;
    FILE *gp = c->gp;
    for (int i = 0; i < R->n; i++) {
        int found = 0;
        for (int p = 0; p < n_panels; p++) found |= same_panel(panels[p], R->res[i].panel);
        if (found) continue;
        double *np = realloc(panels, (size_t)(n_panels + 1) * sizeof *panels);
        if (!np) {
            plot_oom();
            goto done;
        }
        panels = np;
        panels[n_panels++] = R->res[i].panel;
    }
    int p_cols = n_panels <= 3 ? n_panels : 3, p_rows = (n_panels + 2) / 3;
    if (!c->size_given) {
        c->width = p_cols > 1 ? 560 * p_cols : 1000;
        c->height = 640 * p_rows;
    }
    /* Rates that span orders of magnitude (GPU-resident next to zero-copy) need a log axis. */
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < R->n; i++)
        if (R->res[i].y > 0) lo = fmin(lo, R->res[i].y), hi = fmax(hi, R->res[i].y);
    int logy = c->logy || (hi > 0 && hi > 30 * lo);
    plot_gp_preamble(c, tmp_out);
    fputs("set logscale x 2\nset format x '%.0f'\nset xlabel 'row bytes'\n"
          "set key below horizontal nobox height 1.5\n",
          gp);
    fputs(logy ? "set logscale y\nset yrange [*:*]\nset ylabel " : "set yrange [0:*]\nset ylabel ",
          gp);
    plot_gp_str(gp, axis);
    putc('\n', gp);
    if (n_panels > 1) {
        fprintf(gp, "set multiplot layout %d,%d title ", p_rows, p_cols);
        plot_gp_str(gp, title);
        putc('\n', gp);
    }
    for (int p = 0; p < n_panels; p++) {
        char *pt = n_panels == 1         ? strdup(title)
                   : isfinite(panels[p]) ? plot_printf("%.0f ids per call", panels[p])
                                         : strdup("");
        if (!pt) {
            plot_oom();
            goto done;
        }
        plot_gp_title(gp, pt);
        free(pt);
        int first = 1;
        for (int s = 0; s < R->n_sers; s++) {
            /* This series' points of this panel, by increasing row width. */
            int count = 0;
            for (int i = 0; i < R->n; i++)
                count +=
                    !strcmp(R->res[i].series, R->sers[s]) && same_panel(R->res[i].panel, panels[p]);
            if (!count) continue;
            free(path);
            FILE *f = plot_data_open(c, &path);
            if (!f) goto done;
            for (double last = -INFINITY;;) {
                double next = INFINITY;
                for (int i = 0; i < R->n; i++)
                    if (!strcmp(R->res[i].series, R->sers[s]) &&
                        same_panel(R->res[i].panel, panels[p]) && R->res[i].x > last &&
                        R->res[i].x < next)
                        next = R->res[i].x;
                if (!isfinite(next)) break;
                for (int i = 0; i < R->n; i++)
                    if (!strcmp(R->res[i].series, R->sers[s]) &&
                        same_panel(R->res[i].panel, panels[p]) && R->res[i].x == next) {
                        fprintf(f, "%.9g", next);
                        plot_tsv_num(f, R->res[i].y);
                        putc('\n', f);
                    }
                last = next;
            }
            if (plot_data_close(f, path)) goto done;
            plot_sep(gp, &first);
            plot_gp_str(gp, path);
            fputs(" using 1:2 with linespoints lw 2 pt 7 ps 0.8", gp);
            plot_gp_colour(gp, s);
            fputs(" title ", gp);
            plot_gp_str(gp, R->sers[s]);
        }
        /* The ceiling each file measured, when the field drawn is the rate in GB/s. */
        for (int b = 0; b < c->n_benches && !strcmp(metric, "gbps"); b++) {
            const cJSON *ceil = cJSON_GetObjectItemCaseSensitive(c->benches[b].doc, "ceiling");
            double g = item_number(ceil, "gbps");
            if (!isfinite(g)) continue;
            char *file = plot_file_label(c->benches[b].path);
            /* Short, so that the key fits under the panel; its kind is in the chart title. */
            char *t = !file
                          ? NULL
                          : plot_printf("ceiling %.1f GB/s%s%s%s", g, c->n_benches > 1 ? " (" : "",
                                        c->n_benches > 1 ? file : "", c->n_benches > 1 ? ")" : "");
            free(file);
            if (!t) {
                plot_oom();
                goto done;
            }
            plot_sep(gp, &first);
            fprintf(gp, "%.9g with lines dt 2 lw 1.5 lc rgb '#%s' title ", g,
                    b ? colours[(R->n_sers + b) % NUM_COLOURS] : "000000");
            plot_gp_str(gp, t);
            free(t);
        }
        fputs("\n", gp);
    }
    if (n_panels > 1) fputs("unset multiplot\n", gp);
    rc = 0;
done:
    free(panels);
    free(path);
    return rc;
}

/* Bars: a cluster per configuration, a bar per mode (or per file). */
static int draw_bars(plot_ctx *c, const results *R, const char *metric, const char *axis,
                     const char *title, const char *tmp_out) {
    const int nc = R->n_cats, ns = R->n_sers;
    double *m = malloc((size_t)nc * (size_t)ns * sizeof *m);
    char *path = NULL;
    int rc = -1;
    FILE *gp = c->gp, *f = NULL;
    if (!m) return plot_oom();
    for (int i = 0; i < nc * ns; i++) m[i] = NAN;
    for (int i = 0; i < R->n; i++) {
        int ci = 0, si = 0;
        while (strcmp(R->cats[ci], R->res[i].category)) ci++;
        while (strcmp(R->sers[si], R->res[i].series)) si++;
        double *cell = &m[(size_t)ci * (size_t)ns + (size_t)si];
        if (isfinite(*cell))
            fprintf(stderr, PREFIX "note: several results for '%s' / '%s'; drawing the last\n",
                    R->res[i].category, R->res[i].series);
        *cell = R->res[i].y;
    }
    if (!(f = plot_data_open(c, &path))) goto done;
    size_t longest = 0;
    for (int ci = 0; ci < nc; ci++) {
        plot_tsv_str(f, R->cats[ci]);
        if (strlen(R->cats[ci]) > longest) longest = strlen(R->cats[ci]);
        for (int si = 0; si < ns; si++) plot_tsv_num(f, m[(size_t)ci * (size_t)ns + (size_t)si]);
        putc('\n', f);
    }
    if (plot_data_close(f, path)) goto done;
    if (!c->size_given && nc * ns > 24) c->width = 1400;
    plot_gp_preamble(c, tmp_out);
    plot_gp_title(gp, title);
    fputs("set style data histograms\nset style histogram clustered gap 1\n"
          "set style fill solid 0.85 border -1\nset key top left\n",
          gp);
    fputs(c->logy ? "set logscale y\nset yrange [*:*]\nset ylabel "
                  : "set yrange [0:*]\nset ylabel ",
          gp);
    plot_gp_str(gp, axis);
    fprintf(gp, "\nset xtics %s\n", longest * (size_t)nc > 90 ? "rotate by -25" : "norotate");
    if (ns == 1 && !strcmp(R->sers[0], metric)) fputs("unset key\n", gp);
    int first = 1;
    for (int si = 0; si < ns; si++) {
        int any = 0;
        for (int ci = 0; ci < nc; ci++) any |= isfinite(m[(size_t)ci * (size_t)ns + (size_t)si]);
        if (!any) continue;
        int label_it = first;
        plot_sep(gp, &first);
        plot_gp_str(gp, path);
        fprintf(gp, " using %d%s", si + 2, label_it ? ":xtic(1)" : "");
        plot_gp_colour(gp, si);
        if (ns == 1 && !strcmp(R->sers[0], metric)) {
            fputs(" notitle", gp); /* one series: the key is left out below */
        } else {
            fputs(" title ", gp);
            plot_gp_str(gp, R->sers[si]);
        }
    }
    fputs("\n", gp);
    rc = 0;
done:
    free(m);
    free(path);
    return rc;
}

/* Returns 0, -1 (failure, reported) or -2 (usage error, reported). */
int plot_bench(plot_ctx *c, const char *tmp_out) {
    const char *benchmark = c->benches[0].benchmark;
    results R;
    char *title = NULL;
    int sweep, rc = -1;
    double scale;
    memset(&R, 0, sizeof R);
    for (int b = 1; b < c->n_benches; b++) {
        if (strcmp(c->benches[b].benchmark, benchmark)) {
            fprintf(stderr,
                    PREFIX "%s is a bench %s result and %s a bench %s result: plot them "
                           "separately\n",
                    c->benches[0].path, benchmark, c->benches[b].path, c->benches[b].benchmark);
            return -2;
        }
    }
    if (!strcmp(c->what, "loss") || !strcmp(c->what, "acc")) {
        fprintf(stderr,
                PREFIX "--what %s is for training metrics; %s is a bench %s result (use auto, or "
                       "time for bench epoch)\n",
                c->what, c->benches[0].path, benchmark);
        return -2;
    }
    const int stacked = !strcmp(c->what, "time");
    const char *metric = stacked ? "epoch_s" : c->metric ? c->metric : default_metric(benchmark);
    if (!metric) {
        fprintf(stderr,
                PREFIX "%s: no default field to draw for a bench %s result; name one with "
                       "--metric\n",
                c->benches[0].path, benchmark);
        return -2;
    }
    const char *axis = metric_axis(metric, &scale);
    if (collect_results(c, metric, scale, stacked, &R, &sweep)) goto done;
    if (R.n == 0) {
        no_results(c, metric, stacked);
        goto done;
    }
    /* The title: --title, or the benchmark, with the device and commit of a single file. */
    const char *what_drawn = stacked ? "epoch time by part" : axis;
    if (c->title) {
        title = strdup(c->title);
    } else if (c->n_benches == 1) {
        const cJSON *doc = c->benches[0].doc;
        const char *commit = item_string(doc, "commit");
        const char *device = item_string(cJSON_GetObjectItemCaseSensitive(doc, "device"), "name");
        const char *ceiling = item_string(cJSON_GetObjectItemCaseSensitive(doc, "ceiling"), "kind");
        int show_ceiling = sweep && ceiling && !strcmp(metric, "gbps");
        const char *preset = item_string(cJSON_GetObjectItemCaseSensitive(doc, "config"), "preset");
        title = plot_printf("bench %s%s%s: %s%s%s%s%s%s%s", benchmark, preset ? " " : "",
                            preset ? preset : "", what_drawn,
                            show_ceiling ? " (dashed: the ceiling, " : "",
                            show_ceiling ? ceiling : "", show_ceiling ? ")" : "",
                            device ? ", " : "", device ? device : "", commit ? ", commit " : "");
        if (title && commit) {
            /* A configure-time commit is the whole hash: 12 digits tell it apart. */
            char *t = plot_printf("%s%.12s", title, commit);
            free(title);
            title = t;
        }
    } else {
        title = plot_printf("bench %s: %s", benchmark, what_drawn);
    }
    if (!title) {
        plot_oom();
        goto done;
    }
    if (stacked)
        rc = draw_stacked(c, &R, metric, title, tmp_out);
    else if (sweep)
        rc = draw_sweep(c, &R, metric, axis, title, tmp_out);
    else
        rc = draw_bars(c, &R, metric, axis, title, tmp_out);
done:
    free(title);
    results_free(&R);
    return rc;
}
