/*
 * `graphdirect plot`: PNG charts, drawn by gnuplot, of the files the other commands write. A
 * training metrics file (JSON lines, tools/metrics_log.c) gives the loss per epoch and per step,
 * the train and valid accuracy per epoch and the epoch time split into its parts; several runs,
 * in one file or in several, are overlaid. A benchmark result (the JSON of `graphdirect bench`)
 * gives its main number per mode and configuration as bars, or, for `bench gather`, as lines
 * over the swept row width. The kind of each file is read from its content, never its name.
 *
 * The chart is a gnuplot script and tab-separated data in a temporary directory; gnuplot draws
 * into a temporary file beside the output, which is renamed into place only once gnuplot has
 * succeeded and the file is a PNG, so a failure never leaves a half-written picture. Every input
 * is read and checked, and the script written, before gnuplot is looked for, so a malformed file
 * is reported (file and line) on any machine. docs/plot.md describes the record formats and the
 * charts.
 */
#include "plot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void help(void) {
    printf("usage: graphdirect plot FILE... -o OUT.png [--what loss|acc|time|auto] [--title T]\n"
           "                        [--metric FIELD] [--logy] [--size WxH]\n\n"
           "Draw a PNG chart with gnuplot from training metrics (the JSON-lines file of\n"
           "`graphdirect train --metrics`) or from benchmark results (the JSON of `graphdirect\n"
           "bench ... --json`). The kind of each file is read from its content. Several files\n"
           "of the same kind are overlaid, each run labelled by its dataset and mode (or its\n"
           "file name). OUT is replaced only when the chart was drawn.\n\n"
           "  -o, --output OUT   the PNG to write (required)\n"
           "  --what W           training metrics: loss (per epoch, and per step when the file\n"
           "                     has step records), acc (train and valid accuracy per epoch),\n"
           "                     time (each epoch's time stacked by part: sample, gather,\n"
           "                     train, waiting), auto (loss and accuracy side by side; the\n"
           "                     default). Benchmarks: auto (the main number per mode, or per\n"
           "                     row width for bench gather), time (bench epoch: each\n"
           "                     result's epoch time stacked by part)\n"
           "  --title T          the chart's title\n"
           "  --metric FIELD     benchmarks: the result field to draw (default: gbps for\n"
           "                     gather, seps for sample, epoch_s for epoch)\n"
           "  --logy             a logarithmic y axis for the loss and for benchmark bars and\n"
           "                     lines (the bench gather lines switch to it by themselves when\n"
           "                     their values span more than 30x)\n"
           "  --size WxH         picture size in pixels (default 1000x600, taller for several\n"
           "                     time panels)\n"
           "  -h, --help         this text\n\n"
           "Needs gnuplot (Debian package gnuplot-nox). Record formats: docs/plot.md.\n");
}

/* ------------------------------------------------------------------------------------------ */
/* Running gnuplot                                                                             */

/* The first executable `name` on PATH, or NULL. */
static char *find_in_path(const char *name) {
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        char *cand = len ? plot_printf("%.*s/%s", (int)len, p, name) : plot_printf("./%s", name);
        struct stat st;
        if (cand && stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
            return cand;
        free(cand);
        if (!colon) return NULL;
        p = colon + 1;
    }
}

/* Print a file's lines to stderr, each after prefix; up to max_lines of them. */
static void print_log(const char *path, const char *prefix, int max_lines) {
    FILE *f = fopen(path, "r");
    char line[1024];
    int n = 0;
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        if (plot_is_blank(line)) continue;
        if (n++ == max_lines) {
            fprintf(stderr, "%s...\n", prefix);
            break;
        }
        fprintf(stderr, "%s%s%s", prefix, line, strchr(line, '\n') ? "" : "\n");
    }
    fclose(f);
}

static int run_gnuplot(const char *gnuplot, const char *script, const char *log) {
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status, err;
    char arg0[] = "gnuplot";
    char *args[] = {arg0, (char *)script, NULL};
    if (posix_spawn_file_actions_init(&fa)) return plot_oom();
    err = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!err)
        err = posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!err) err = posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (!err) err = posix_spawn(&pid, gnuplot, &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err) {
        fprintf(stderr, PREFIX "cannot run %s: %s\n", gnuplot, strerror(err));
        return -1;
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, PREFIX "waiting for gnuplot failed: %s\n", strerror(errno));
            return -1;
        }
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        print_log(log, "gnuplot: ", 20); /* its warnings, if any */
        return 0;
    }
    if (WIFEXITED(status))
        fprintf(stderr, PREFIX "gnuplot failed (exit status %d):\n", WEXITSTATUS(status));
    else
        fprintf(stderr, PREFIX "gnuplot was killed by signal %d\n",
                WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    print_log(log, "  ", 40);
    return -1;
}

/* 1 when path starts with the PNG signature. */
static int is_png(const char *path) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char buf[8];
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t got = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return got == sizeof buf && !memcmp(buf, sig, sizeof sig);
}

/* Remove the temporary directory and what this command wrote in it. */
static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char *p = plot_printf("%s/%s", dir, e->d_name);
            if (p) unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

static int parse_size(const char *text, int *w, int *h) {
    char *end;
    long a = strtol(text, &end, 10);
    if (end == text || (*end != 'x' && *end != 'X')) return -1;
    const char *q = end + 1;
    long b = strtol(q, &end, 10);
    if (end == q || *end || a < 100 || a > 10000 || b < 100 || b > 10000) return -1;
    *w = (int)a;
    *h = (int)b;
    return 0;
}

/* Parse the options into c: -1 to go on, else the exit code to return (0 after --help). */
static int parse_args(plot_ctx *c, int argc, char **argv) {
    static const struct option long_opts[] = {
        {"output", required_argument, 0, 'o'}, {"what", required_argument, 0, 'w'},
        {"title", required_argument, 0, 't'},  {"metric", required_argument, 0, 'm'},
        {"size", required_argument, 0, 's'},   {"logy", no_argument, 0, 'l'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    struct stat st;
    int opt;
    c->what = "auto";
    c->width = 1000;
    c->height = 600;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "ho:", long_opts, NULL)) != -1) {
        switch (opt) {
        case 'o':
            c->out = optarg;
            break;
        case 'w':
            if (strcmp(optarg, "loss") && strcmp(optarg, "acc") && strcmp(optarg, "time") &&
                strcmp(optarg, "auto"))
                return cli_usage_error("plot", "--what '%s' is not loss, acc, time or auto",
                                       optarg);
            c->what = optarg;
            break;
        case 't':
            c->title = optarg;
            break;
        case 'm':
            if (!*optarg) return cli_usage_error("plot", "--metric needs a field name");
            c->metric = optarg;
            break;
        case 's':
            if (parse_size(optarg, &c->width, &c->height))
                return cli_usage_error("plot",
                                       "--size '%s' is not WIDTHxHEIGHT in pixels, each "
                                       "100..10000 (e.g. 1200x700)",
                                       optarg);
            c->size_given = 1;
            break;
        case 'l':
            c->logy = 1;
            break;
        case 'h':
            help();
            return 0;
        default:
            return cli_usage_error("plot", "unknown option");
        }
    }
    if (optind >= argc)
        return cli_usage_error("plot", "no input file: give one or more metrics or bench JSON "
                                       "files");
    if (!c->out || !*c->out)
        return cli_usage_error("plot", "no output: name the PNG to write with -o OUT.png");
    if (stat(c->out, &st) == 0 && S_ISDIR(st.st_mode))
        return cli_usage_error("plot", "-o %s is a directory; name the PNG file to write", c->out);
    return -1;
}

/*
 * The output must not be one of the inputs, by any name (a symlink, a hard link, ./x): the
 * rename at the end would replace the input with its own picture. Returns 0, or the exit code
 * with the message printed.
 */
static int check_out_not_input(const char *out, char *const *files, int nfiles) {
    struct stat so, si;
    if (stat(out, &so) != 0) return 0;
    for (int i = 0; i < nfiles; i++)
        if (stat(files[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
            return cli_usage_error("plot",
                                   "-o %s is the input %s: it would be replaced by the picture; "
                                   "name another file for the PNG",
                                   out, files[i]);
    return 0;
}

/*
 * Read and check every input before anything else; training metrics and benchmark results do
 * not mix. Returns 0, or the exit code with the message printed.
 */
static int read_inputs(plot_ctx *c, char *const *files, int nfiles) {
    int n_metrics_files = 0;
    if (!(c->benches = calloc((size_t)nfiles, sizeof *c->benches)))
        return plot_oom(), CLI_EXIT_FAIL;
    for (int i = 0; i < nfiles; i++) {
        int before = c->n_benches;
        if (plot_read_input(c, files[i])) return CLI_EXIT_FAIL;
        n_metrics_files += c->n_benches == before;
    }
    if (n_metrics_files && c->n_benches) {
        const char *m = NULL, *b = c->benches[0].path;
        for (int i = 0; i < nfiles && !m; i++) {
            int is_bench = 0;
            for (int k = 0; k < c->n_benches; k++) is_bench |= c->benches[k].path == files[i];
            if (!is_bench) m = files[i];
        }
        return cli_usage_error("plot",
                               "%s holds training metrics and %s a benchmark result: plot them "
                               "separately",
                               m, b);
    }
    if (n_metrics_files && c->metric)
        return cli_usage_error("plot",
                               "--metric is for benchmark results; %s holds training "
                               "metrics",
                               files[0]);
    return plot_tidy_runs(c) ? CLI_EXIT_FAIL : 0;
}

/*
 * gnuplot draws into a temporary file beside OUT, renamed over OUT when it is complete. It is
 * named OUT.tmp.<pid>, as the library's writers name theirs, so that what a killed plot left is
 * swept by the next one (gd_sweep_stale_temporaries).
 */
static int make_tmp_out(const char *out, char **tmp_out) {
    gd_sweep_stale_temporaries(out);
    if (!(*tmp_out = plot_printf("%s.tmp.%ld", out, (long)getpid()))) return plot_oom();
    (void)unlink(*tmp_out); /* an earlier process of this pid is gone */
    const int fd = open(*tmp_out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        fprintf(stderr,
                PREFIX "cannot create %s: %s (is the directory of the output there and "
                       "writable?)\n",
                *tmp_out, strerror(errno));
        free(*tmp_out);
        *tmp_out = NULL;
        return -1;
    }
    close(fd);
    return 0;
}

/* The temporary directory for the script, its data and gnuplot's log, into c->dir. */
static int make_tmp_dir(plot_ctx *c) {
    const char *tmpdir = getenv("TMPDIR");
    if (!(c->dir = plot_printf("%s/graphdirect-plot.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp")))
        return plot_oom();
    if (!mkdtemp(c->dir)) {
        fprintf(stderr, PREFIX "cannot create the temporary directory %s: %s\n", c->dir,
                strerror(errno));
        free(c->dir);
        c->dir = NULL;
        return -1;
    }
    return 0;
}

/* Write the chart's script and data: 0, -1 (failure, reported) or -2 (usage error, reported). */
static int write_script(plot_ctx *c, const char *script, const char *tmp_out, char *const *files,
                        int nfiles) {
    if (!(c->gp = fopen(script, "w"))) {
        fprintf(stderr, PREFIX "cannot create %s: %s\n", script, strerror(errno));
        return -1;
    }
    int prc = c->n_benches ? plot_bench(c, tmp_out) : plot_metrics(c, tmp_out, files, nfiles);
    int bad = ferror(c->gp);
    if ((fclose(c->gp) != 0 || bad) && !prc) {
        fprintf(stderr, PREFIX "writing %s failed: %s\n", script, strerror(errno));
        prc = -1;
    }
    c->gp = NULL;
    return prc;
}

/* Run gnuplot on the script and put its picture in place as out: 0, or -1 with a message. */
static int draw(const char *script, const char *log, const char *tmp_out, const char *out) {
    struct stat st;
    int rc = -1;
    /* Only now, with every input checked and the chart written out, is gnuplot needed. */
    char *gnuplot = find_in_path("gnuplot");
    if (!gnuplot) {
        fprintf(stderr, PREFIX "gnuplot is not installed; run `sudo apt-get install gnuplot-nox` "
                               "(or scripts/install-deps.sh as root)\n");
        return -1;
    }
    if (run_gnuplot(gnuplot, script, log)) goto done;
    if (stat(tmp_out, &st) != 0 || !is_png(tmp_out)) {
        fprintf(stderr, PREFIX "gnuplot finished but wrote no PNG (into %s)\n", tmp_out);
        goto done;
    }
    if (rename(tmp_out, out) != 0) {
        fprintf(stderr, PREFIX "renaming %s to %s failed: %s\n", tmp_out, out, strerror(errno));
        goto done;
    }
    rc = 0;
done:
    free(gnuplot);
    return rc;
}

static void ctx_free(plot_ctx *c) {
    if (c->gp) fclose(c->gp);
    if (c->dir) remove_dir(c->dir);
    for (int i = 0; i < c->n_runs; i++) {
        free(c->runs[i].label);
        free(c->runs[i].epochs);
        free(c->runs[i].steps);
    }
    for (int i = 0; i < c->n_benches; i++) cJSON_Delete(c->benches[i].doc);
    free(c->runs);
    free(c->benches);
    free(c->dir);
}

int cmd_plot(int argc, char **argv) {
    plot_ctx c;
    char *tmp_out = NULL, *script = NULL, *log = NULL;
    memset(&c, 0, sizeof c);
    int rc = parse_args(&c, argc, argv);
    if (rc >= 0) return rc;
    const int nfiles = argc - optind;
    char *const *files = argv + optind;

    rc = read_inputs(&c, files, nfiles);
    if (!rc) rc = check_out_not_input(c.out, files, nfiles);
    if (rc) goto done;
    rc = CLI_EXIT_FAIL;
    /* From here on temporary files exist: a stop signal lets them be removed (below). */
    cli_catch_stop_signals();
    if (make_tmp_out(c.out, &tmp_out) || make_tmp_dir(&c)) goto done;
    if (!(script = plot_printf("%s/plot.gp", c.dir)) ||
        !(log = plot_printf("%s/gnuplot.log", c.dir))) {
        plot_oom();
        goto done;
    }
    int prc = write_script(&c, script, tmp_out, files, nfiles);
    if (prc) {
        if (prc == -2) rc = CLI_EXIT_USAGE, fprintf(stderr, "(see graphdirect plot --help)\n");
        goto done;
    }
    if (cli_interrupted()) {
        rc = cli_interrupted_exit();
        goto done;
    }
    if (draw(script, log, tmp_out, c.out)) goto done;
    free(tmp_out);
    tmp_out = NULL;
    printf("wrote %s (%dx%d)\n", c.out, c.width, c.height);
    rc = 0;
done:
    if (tmp_out) unlink(tmp_out);
    ctx_free(&c);
    free(tmp_out);
    free(script);
    free(log);
    return rc;
}
