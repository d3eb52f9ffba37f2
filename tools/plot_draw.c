/*
 * `graphdirect plot`, writing the chart: the gnuplot script (into c->gp) and its tab-separated
 * data files in the temporary directory, with the helpers every chart uses (quoting, the PNG
 * terminal, stacked bars of time by part), and the charts of training metrics: the loss per
 * epoch and per step, the accuracy per epoch, and each run's epoch time by part.
 */
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Writing the script and its data                                                             */

/* A gnuplot single-quoted string: ' doubled; control characters become spaces. */
void plot_gp_str(FILE *f, const char *s) {
    putc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("''", f);
        else
            putc((unsigned char)*s < 32 ? ' ' : *s, f);
    }
    putc('\'', f);
}

/* A string field of a tab-separated data file: no tabs, newlines or double quotes. */
void plot_tsv_str(FILE *f, const char *s) {
    if (*s == '#') putc(' ', f); /* a leading '#' would make the line a comment */
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        putc(ch < 32 ? ' ' : ch == '"' ? '\'' : ch, f);
    }
}

void plot_tsv_num(FILE *f, double v) {
    if (isfinite(v))
        fprintf(f, "\t%.9g", v);
    else
        fputs("\tNaN", f);
}

/* Open a new data file in the temporary directory; its path goes to *path (caller frees). */
FILE *plot_data_open(plot_ctx *c, char **path) {
    *path = plot_printf("%s/data%d.tsv", c->dir, c->n_data++);
    if (!*path) {
        plot_oom();
        return NULL;
    }
    FILE *f = fopen(*path, "w");
    if (!f) fprintf(stderr, PREFIX "cannot create %s: %s\n", *path, strerror(errno));
    return f;
}

int plot_data_close(FILE *f, const char *path) {
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, PREFIX "writing %s failed: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

void plot_gp_colour(FILE *gp, int i) {
    fprintf(gp, " lc rgb '#%s'", colours[i % NUM_COLOURS]);
}

/* The terminal: pngcairo (antialiased) when this gnuplot has it, else the libgd png. */
void plot_gp_preamble(plot_ctx *c, const char *tmp_out) {
    FILE *gp = c->gp;
    fprintf(gp,
            "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
            "    set terminal pngcairo size %d,%d noenhanced font 'sans,10'\n"
            "} else {\n"
            "    set terminal png size %d,%d noenhanced\n"
            "}\n",
            c->width, c->height, c->width, c->height);
    fputs("set output ", gp);
    plot_gp_str(gp, tmp_out);
    fputs("\nset datafile separator '\\t'\nset datafile missing 'NaN'\n"
          "set grid\nset key box opaque\n",
          gp);
}

void plot_gp_title(FILE *gp, const char *title) {
    fputs("set title ", gp);
    plot_gp_str(gp, title);
    putc('\n', gp);
}

/* Multiplot with rows x cols panels; the overall title is --title when there is one. */
static void gp_multiplot(plot_ctx *c, int rows, int cols) {
    fprintf(c->gp, "set multiplot layout %d,%d", rows, cols);
    if (c->title) {
        fputs(" title ", c->gp);
        plot_gp_str(c->gp, c->title);
    }
    putc('\n', c->gp);
}

/* 1 when some epoch of r has a finite value in the double field at offset. */
static int epochs_have(const run_t *r, size_t offset) {
    for (int i = 0; i < r->n_epochs; i++) {
        double v;
        memcpy(&v, (const char *)&r->epochs[i] + offset, sizeof v);
        if (isfinite(v)) return 1;
    }
    return 0;
}
#define EPOCH_HAS(r, field) epochs_have((r), offsetof(epoch_rec, field))
#define EPOCH_HAS_PART(r, k)                                                                       \
    epochs_have((r), offsetof(epoch_rec, parts) + (size_t)(k) * sizeof(double))

/*
 * Where a step sits on the epoch axis: epoch e spans (e-1, e], so step s of an epoch of m
 * minibatches is at e - 1 + s/m. m comes from that epoch's record, else from any epoch record
 * of the run, else from the largest step seen in that epoch (a run stopped before its first
 * epoch record).
 */
static double step_x(const run_t *r, const step_rec *s) {
    double m = NAN, any = NAN, seen = 0;
    for (int i = 0; i < r->n_epochs; i++) {
        double mb = r->epochs[i].minibatches;
        if (!(mb > 0)) continue;
        if (r->epochs[i].epoch == s->epoch) m = mb;
        if (!(any >= mb)) any = mb;
    }
    if (!(m > 0)) m = any;
    if (!(m > 0)) {
        for (int i = 0; i < r->n_steps; i++)
            if (r->steps[i].epoch == s->epoch && r->steps[i].step > seen) seen = r->steps[i].step;
        m = seen > 0 ? seen : 1;
    }
    return s->epoch - 1 + s->step / m;
}

/* Write each run's epochs and steps as data files: epoch loss train_acc valid_acc / x loss. */
static int write_run_data(plot_ctx *c, char **epoch_paths, char **step_paths) {
    for (int i = 0; i < c->n_runs; i++) {
        const run_t *r = &c->runs[i];
        FILE *f = plot_data_open(c, &epoch_paths[i]);
        if (!f) return -1;
        for (int k = 0; k < r->n_epochs; k++) {
            const epoch_rec *e = &r->epochs[k];
            fprintf(f, "%.9g", e->epoch);
            plot_tsv_num(f, e->loss);
            plot_tsv_num(f, e->train_acc);
            plot_tsv_num(f, e->valid_acc);
            putc('\n', f);
        }
        if (plot_data_close(f, epoch_paths[i])) return -1;
        if (!(f = plot_data_open(c, &step_paths[i]))) return -1;
        for (int k = 0; k < r->n_steps; k++) {
            fprintf(f, "%.9g", step_x(r, &r->steps[k]));
            plot_tsv_num(f, r->steps[k].loss);
            putc('\n', f);
        }
        if (plot_data_close(f, step_paths[i])) return -1;
    }
    return 0;
}

static int run_has_step_loss(const run_t *r) {
    for (int k = 0; k < r->n_steps; k++)
        if (isfinite(r->steps[k].loss)) return 1;
    return 0;
}

void plot_sep(FILE *gp, int *first) {
    fputs(*first ? "plot " : ", \\\n     ", gp);
    *first = 0;
}

static void gp_loss_panel(plot_ctx *c, char **epoch_paths, char **step_paths, int single) {
    FILE *gp = c->gp;
    plot_gp_title(gp, single && c->title ? c->title : "training loss");
    fputs("set xlabel 'epoch'\nset ylabel 'loss (softmax cross-entropy)'\n"
          "set xrange [0:*]\nset yrange [*:*]\n",
          gp);
    fprintf(gp, "set key %s\n", c->n_runs > 2 ? "below horizontal nobox height 1.5" : "top right");
    if (c->logy) fputs("set logscale y\n", gp);
    int first = 1;
    for (int i = 0; i < c->n_runs; i++) {
        const run_t *r = &c->runs[i];
        int has_epoch = EPOCH_HAS(r, loss), has_step = run_has_step_loss(r);
        /* Steps thin and half transparent, epochs bold: the noise and the trend. */
        if (has_step) {
            plot_sep(gp, &first);
            plot_gp_str(gp, step_paths[i]);
            fprintf(gp, " using 1:2 with lines lw 1 lc rgb '#80%s'", colours[i % NUM_COLOURS]);
            if (has_epoch) {
                fputs(" notitle", gp);
            } else {
                fputs(" title ", gp);
                plot_gp_str(gp, r->label);
            }
        }
        if (has_epoch) {
            plot_sep(gp, &first);
            plot_gp_str(gp, epoch_paths[i]);
            fputs(" using 1:2 with linespoints lw 2 pt 7 ps 0.8", gp);
            plot_gp_colour(gp, i);
            fputs(" title ", gp);
            plot_gp_str(gp, r->label);
        }
    }
    fputs(c->logy ? "\nunset logscale y\n" : "\n", gp);
}

static void gp_acc_panel(plot_ctx *c, char **epoch_paths, int single) {
    FILE *gp = c->gp;
    plot_gp_title(gp, single && c->title ? c->title : "accuracy");
    /* Two lines a run: past two runs the key goes under the panel, off the curves. */
    fprintf(gp,
            "set xlabel 'epoch'\nset ylabel 'accuracy'\nset xrange [0:*]\nset yrange [*:*]\n"
            "set key %s\n",
            c->n_runs > 2 ? "below horizontal nobox height 1.5" : "bottom right");
    int first = 1;
    for (int i = 0; i < c->n_runs; i++) {
        const run_t *r = &c->runs[i];
        if (EPOCH_HAS(r, valid_acc)) {
            plot_sep(gp, &first);
            plot_gp_str(gp, epoch_paths[i]);
            fputs(" using 1:4 with linespoints lw 2 pt 7 ps 0.8", gp);
            plot_gp_colour(gp, i);
            char *t = isfinite(r->test_acc)
                          ? plot_printf("%s valid (test %.4f)", r->label, r->test_acc)
                          : plot_printf("%s valid", r->label);
            fputs(" title ", gp);
            plot_gp_str(gp, t ? t : r->label);
            free(t);
        }
        if (EPOCH_HAS(r, train_acc)) {
            plot_sep(gp, &first);
            plot_gp_str(gp, epoch_paths[i]);
            fputs(" using 1:3 with linespoints lw 1.5 dt 2 pt 6 ps 0.8", gp);
            plot_gp_colour(gp, i);
            char *t = plot_printf("%s train", r->label);
            fputs(" title ", gp);
            plot_gp_str(gp, t ? t : r->label);
            free(t);
        }
    }
    fputs("\n", gp);
}

/*
 * A stacked bar per row: the parts present in any row, "other" for what the parts leave of the
 * total, and the total itself as a mark. In a pipelined mode the stages overlap, so the stack
 * can stand above the mark: the mark is the wall-clock time.
 */
int plot_stack_panel(plot_ctx *c, const char *title, const char *xlabel, const stack_row *rows,
                     int n) {
    FILE *gp = c->gp;
    int has[NUM_PARTS] = {0}, any_part = 0, has_total = 0, has_other = 0;
    for (int i = 0; i < n; i++) {
        double sum = 0;
        for (int k = 0; k < NUM_PARTS; k++)
            if (isfinite(rows[i].parts[k])) {
                sum += rows[i].parts[k];
                any_part = 1;
                has[k] |= rows[i].parts[k] > 0; /* a part that is always 0 gets no legend */
            }
        if (isfinite(rows[i].total)) {
            has_total = 1;
            if (rows[i].total - sum > 1e-3 * rows[i].total) has_other = 1;
        }
    }
    if (!any_part) has_other = has_total; /* no breakdown: the bar is the total */
    char *path = NULL;
    FILE *f = plot_data_open(c, &path);
    if (!f) {
        free(path);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        double sum = 0;
        plot_tsv_str(f, rows[i].label);
        for (int k = 0; k < NUM_PARTS; k++) {
            double v = isfinite(rows[i].parts[k]) ? rows[i].parts[k] : 0;
            sum += v;
            plot_tsv_num(f, v);
        }
        plot_tsv_num(f, isfinite(rows[i].total) && rows[i].total > sum ? rows[i].total - sum : 0);
        plot_tsv_num(f, rows[i].total);
        putc('\n', f);
    }
    if (plot_data_close(f, path)) {
        free(path);
        return -1;
    }
    plot_gp_title(gp, title);
    fputs("set style data histograms\nset style histogram rowstacked\n"
          "set style fill solid 0.85 border -1\nset boxwidth 0.7\nset xrange [*:*]\n"
          "set yrange [0:*]\nset ylabel 'seconds'\nset key outside right top\n",
          gp);
    fputs("set xlabel ", gp);
    plot_gp_str(gp, xlabel);
    /* Long labels or many bars: slant the labels, and with very many label only some. */
    size_t longest = 0;
    for (int i = 0; i < n; i++)
        if (strlen(rows[i].label) > longest) longest = strlen(rows[i].label);
    int every = n > 40 ? (n + 39) / 40 : 1;
    fprintf(gp, "\nset xtics %s\n", longest * (size_t)n > 80 ? "rotate by -30" : "norotate");
    int first = 1;
    for (int k = 0; k <= NUM_PARTS; k++) {
        if (k < NUM_PARTS ? !has[k] : !has_other) continue;
        /* The bar labels come with the first column drawn, once. */
        int label_it = first;
        plot_sep(gp, &first);
        plot_gp_str(gp, path);
        fprintf(gp, " using %d", k + 2);
        if (label_it) fprintf(gp, ":xtic(int($0)%%%d == 0 ? stringcolumn(1) : '')", every);
        fputs(" title ", gp);
        plot_gp_str(gp, k < NUM_PARTS ? part_titles[k] : any_part ? "other" : "epoch time");
        fprintf(gp, " lc rgb '#%s'", k < NUM_PARTS ? part_colours[k] : "a0a0a0");
    }
    if (any_part && has_total) {
        plot_sep(gp, &first);
        plot_gp_str(gp, path);
        fprintf(gp,
                " using 0:%d with points pt 9 ps 1.6 lc rgb '#000000' title "
                "'wall-clock total'",
                NUM_PARTS + 3);
    }
    fputs("\n", gp);
    /* Later panels of a multiplot must not inherit the histogram style. */
    fputs("set style data linespoints\nset xtics norotate\nunset boxwidth\n", gp);
    free(path);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Training metrics                                                                            */

static int run_has_time(const run_t *r) {
    if (EPOCH_HAS(r, epoch_s)) return 1;
    for (int k = 0; k < NUM_PARTS; k++)
        if (EPOCH_HAS_PART(r, k)) return 1;
    return 0;
}

static int runs_have(const plot_ctx *c, int what) {
    for (int i = 0; i < c->n_runs; i++) {
        const run_t *r = &c->runs[i];
        if (what == 'l' && (EPOCH_HAS(r, loss) || run_has_step_loss(r))) return 1;
        if (what == 'a' && (EPOCH_HAS(r, valid_acc) || EPOCH_HAS(r, train_acc))) return 1;
        if (what == 't' && run_has_time(r)) return 1;
    }
    return 0;
}

static int nothing_to_plot(char *const *files, int nfiles, const char *what) {
    fprintf(stderr, PREFIX "nothing to plot: no record in");
    for (int i = 0; i < nfiles; i++) fprintf(stderr, "%s %s", i ? "," : "", files[i]);
    fprintf(stderr, " has %s\n", what);
    return -1;
}

/* Panels of a grid for n charts: a column of up to 3, then two columns. */
static void grid(int n, int *rows, int *cols) {
    *cols = n <= 3 ? 1 : 2;
    *rows = (n + *cols - 1) / *cols;
}

int plot_metrics(plot_ctx *c, const char *tmp_out, char *const *files, int nfiles) {
    char **epoch_paths = calloc((size_t)c->n_runs + 1, sizeof(char *));
    char **step_paths = calloc((size_t)c->n_runs + 1, sizeof(char *));
    stack_row *rows = NULL;
    int rc = -1;
    if (!epoch_paths || !step_paths) {
        plot_oom();
        goto done;
    }
    if (c->n_runs == 0) {
        nothing_to_plot(files, nfiles, "a step or an epoch");
        goto done;
    }
    int has_loss = runs_have(c, 'l'), has_acc = runs_have(c, 'a'), has_time = runs_have(c, 't');
    const char *what = c->what;
    if (!strcmp(what, "loss") && !has_loss) {
        nothing_to_plot(files, nfiles, "a loss");
        goto done;
    }
    if (!strcmp(what, "acc") && !has_acc) {
        nothing_to_plot(files, nfiles, "a train_acc or valid_acc");
        goto done;
    }
    if (!strcmp(what, "time") && !has_time) {
        nothing_to_plot(files, nfiles,
                        "an epoch_s or a part (sample_s, gather_s, train_s, wait_s)");
        goto done;
    }
    if (!strcmp(what, "auto") && !has_loss && !has_acc) {
        nothing_to_plot(files, nfiles,
                        has_time ? "a loss, train_acc or valid_acc (there are epoch times: "
                                   "--what time draws them)"
                                 : "a loss, train_acc or valid_acc");
        goto done;
    }

    if (!strcmp(what, "time")) {
        int n = 0, r_rows, r_cols;
        /* A panel per run that has epoch times (the others are left out). */
        for (int i = 0; i < c->n_runs; i++) n += run_has_time(&c->runs[i]);
        grid(n, &r_rows, &r_cols);
        if (!c->size_given) {
            c->width = r_cols > 1 ? 1400 : 1000;
            c->height = r_rows > 1 ? 340 * r_rows : 600;
        }
        plot_gp_preamble(c, tmp_out);
        if (n > 1) gp_multiplot(c, r_rows, r_cols);
        for (int i = 0; i < c->n_runs; i++) {
            const run_t *r = &c->runs[i];
            if (!run_has_time(r)) continue;
            free(rows);
            if (!(rows = calloc((size_t)r->n_epochs, sizeof *rows))) {
                plot_oom();
                goto done;
            }
            for (int k = 0; k < r->n_epochs; k++) {
                rows[k].label = plot_printf("%g", r->epochs[k].epoch);
                if (!rows[k].label) {
                    for (int j = 0; j < k; j++) free(rows[j].label);
                    plot_oom();
                    goto done;
                }
                rows[k].total = r->epochs[k].epoch_s;
                memcpy(rows[k].parts, r->epochs[k].parts, sizeof rows[k].parts);
            }
            char *title =
                n == 1 && c->title ? strdup(c->title) : plot_printf("epoch time: %s", r->label);
            int prc = title ? plot_stack_panel(c, title, "epoch", rows, r->n_epochs) : plot_oom();
            free(title);
            for (int k = 0; k < r->n_epochs; k++) free(rows[k].label);
            if (prc) goto done;
        }
        if (n > 1) fputs("unset multiplot\n", c->gp);
        rc = 0;
        goto done;
    }

    if (write_run_data(c, epoch_paths, step_paths)) goto done;
    int show_loss = !strcmp(what, "loss") || (!strcmp(what, "auto") && has_loss);
    int show_acc = !strcmp(what, "acc") || (!strcmp(what, "auto") && has_acc);
    int both = show_loss && show_acc;
    if (!c->size_given && both) c->width = 1400, c->height = 560;
    plot_gp_preamble(c, tmp_out);
    if (both) gp_multiplot(c, 1, 2);
    if (show_loss) gp_loss_panel(c, epoch_paths, step_paths, !both);
    if (show_acc) gp_acc_panel(c, epoch_paths, !both);
    if (both) fputs("unset multiplot\n", c->gp);
    rc = 0;
done:
    for (int i = 0; i < c->n_runs; i++) {
        if (epoch_paths) free(epoch_paths[i]);
        if (step_paths) free(step_paths[i]);
    }
    free(epoch_paths);
    free(step_paths);
    free(rows);
    return rc;
}
