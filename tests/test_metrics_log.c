/*
 * The JSON-lines metrics writer of the command-line tool (tools/metrics_log.c, cli_metrics_*):
 * every record is one line with "type" first, is on disk (in the kernel) as soon as it is
 * written, non-finite numbers come back as null, an existing file is truncated, and the
 * failures are clean: a missing directory names the path and the errno text, a full disk
 * (/dev/full) is reported once and later writes are refused, a NULL record (a builder out of
 * memory) is reported. The records hold fresh random numbers each run.
 */
#include "cli.h"
#include "test.h"

#include <fcntl.h>

/* stderr goes to a file while a call runs; the text is returned (static buffer). */
static int saved_err = -1;
static char err_path[256];

static void capture_begin(void) {
    fflush(stderr);
    snprintf(err_path, sizeof err_path, "/tmp/gd_test_metrics_err.%ld", (long)getpid());
    int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    T_ASSERT(fd >= 0);
    saved_err = dup(2);
    T_ASSERT(saved_err >= 0);
    dup2(fd, 2);
    close(fd);
}

static const char *capture_end(void) {
    static char text[4096];
    fflush(stderr);
    dup2(saved_err, 2);
    close(saved_err);
    FILE *f = fopen(err_path, "r");
    T_ASSERT(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    unlink(err_path);
    return text;
}

/* The lines of a file, each parsed; returns how many, at most max. */
static int read_records(const char *path, cJSON **out, int max) {
    FILE *f = fopen(path, "r");
    char line[8192];
    int n = 0;
    T_ASSERT(f);
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        T_ASSERT(len > 0 && line[len - 1] == '\n'); /* every record ends its line */
        T_ASSERT(!strchr(line, '\t'));              /* unformatted: no indentation */
        T_ASSERT(n < max);
        out[n] = cJSON_Parse(line);
        if (!out[n]) T_FAIL_("line %d of %s is not JSON: %s", n + 1, path, line);
        /* "type" comes first, so a reader can dispatch on the opening of the line. */
        T_ASSERT(out[n]->child && !strcmp(out[n]->child->string, "type"));
        n++;
    }
    fclose(f);
    return n;
}

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v)) T_FAIL_("\"%s\" is not a number", key);
    return v->valuedouble;
}

int main(void) {
    char path[256];
    cli_metrics *m = NULL;
    cJSON *recs[8];
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    if (getenv("GD_TEST_SEED")) seed = (unsigned)strtoul(getenv("GD_TEST_SEED"), NULL, 0);
    printf("seed %u (GD_TEST_SEED replays it)\n", seed);
    srand(seed);
    const double loss = 0.5 + rand() / (double)RAND_MAX, acc = rand() / (double)RAND_MAX;
    const int step = 1 + rand() % 1000;

    snprintf(path, sizeof path, "/tmp/gd_test_metrics.%ld.jsonl", (long)getpid());
    /* An existing metrics file (an earlier run's) is truncated. */
    FILE *old = fopen(path, "w");
    T_ASSERT(old);
    fputs("{\"type\":\"run\",\"note\":\"old content that must go\"}\n", old);
    fclose(old);

    T_EQ_INT(cli_metrics_open(path, 0, &m), 0);
    T_ASSERT(m);
    cJSON *run = cli_metrics_record("run");
    T_ASSERT(run);
    T_EQ_INT(cli_metrics_add_time(run), 0);
    cJSON_AddStringToObject(run, "dataset", "tiny");
    cJSON_AddStringToObject(run, "mode", "cpu");
    cJSON_AddStringToObject(run, "note", "a \"quoted\"\nnewline\tand tab");
    T_EQ_INT(cli_metrics_write(m, run), 0);
    /* Flushed at once: the record is in the file before any close. */
    T_EQ_INT(read_records(path, recs, 8), 1);
    cJSON_Delete(recs[0]);

    cJSON *s = cli_metrics_record("step");
    cJSON_AddNumberToObject(s, "epoch", 1);
    cJSON_AddNumberToObject(s, "step", step);
    cJSON_AddNumberToObject(s, "loss", loss);
    T_EQ_INT(cli_metrics_write(m, s), 0);
    cJSON *e = cli_metrics_record("epoch");
    cJSON_AddNumberToObject(e, "epoch", 1);
    cJSON_AddNumberToObject(e, "loss", loss);
    cJSON_AddNumberToObject(e, "train_acc", acc);
    cJSON_AddNumberToObject(e, "valid_acc", NAN); /* not measured: written as null */
    T_EQ_INT(cli_metrics_write(m, e), 0);
    T_EQ_INT(read_records(path, recs, 8), 3);
    for (int i = 0; i < 3; i++) cJSON_Delete(recs[i]);
    cli_metrics_close(m);

    int n = read_records(path, recs, 8);
    T_EQ_INT(n, 3);
    T_EQ_STR(cJSON_GetObjectItem(recs[0], "type")->valuestring, "run");
    const char *when = cJSON_GetObjectItem(recs[0], "time")->valuestring;
    T_ASSERT(strlen(when) == 20 && when[4] == '-' && when[10] == 'T' && when[19] == 'Z');
    T_EQ_STR(cJSON_GetObjectItem(recs[0], "note")->valuestring, "a \"quoted\"\nnewline\tand tab");
    T_EQ_STR(cJSON_GetObjectItem(recs[1], "type")->valuestring, "step");
    T_EQ_INT(num(recs[1], "step"), step);
    T_NEAR(num(recs[1], "loss"), loss, 1e-12);
    T_NEAR(num(recs[2], "train_acc"), acc, 1e-12);
    T_ASSERT(cJSON_IsNull(cJSON_GetObjectItem(recs[2], "valid_acc")));
    for (int i = 0; i < n; i++) cJSON_Delete(recs[i]);

    /* A NULL record is what a builder out of memory gives: reported, and the file is short. */
    /*
     * Regression, "--metrics FILE truncates without warning": a resumed run appends (the
     * earlier epochs' records stay), and a file that is not a metrics file (a dataset's
     * meta.json) is refused and left as it was.
     */
    int rc;
    const char *msg;
    T_EQ_INT(cli_metrics_open(path, 1, &m), 0);
    T_EQ_INT(cli_metrics_write(m, cli_metrics_record("epoch")), 0);
    cli_metrics_close(m);
    T_EQ_INT(read_records(path, recs, 8), 4);
    for (int i = 0; i < 4; i++) cJSON_Delete(recs[i]);
    {
        char meta[sizeof path + 16];
        snprintf(meta, sizeof meta, "%s.meta.json", path);
        FILE *f = fopen(meta, "w");
        T_ASSERT(f);
        fputs("{\"format\": \"graphdirect-dataset\"}\n", f);
        fclose(f);
        for (int append = 0; append < 2; append++) {
            capture_begin();
            rc = cli_metrics_open(meta, append, &m);
            msg = capture_end();
            T_EQ_INT(rc, -1);
            T_ASSERT(m == NULL);
            if (!strstr(msg, "not a metrics file") || !strstr(msg, meta)) T_FAIL_("message: %s", msg);
        }
        char back[64] = {0};
        f = fopen(meta, "r");
        T_ASSERT(f && fgets(back, sizeof back, f));
        fclose(f);
        T_EQ_STR(back, "{\"format\": \"graphdirect-dataset\"}\n");
        remove(meta);
    }

    T_EQ_INT(cli_metrics_open(path, 0, &m), 0);
    T_EQ_INT(read_records(path, recs, 8), 0); /* truncated on open */
    capture_begin();
    rc = cli_metrics_write(m, NULL);
    msg = capture_end();
    T_EQ_INT(rc, -1);
    if (!strstr(msg, "out of memory") || !strstr(msg, path)) T_FAIL_("message: %s", msg);
    cli_metrics_close(m);

    /* A directory that is not there: the path and the reason. */
    m = (cli_metrics *)&rc;
    capture_begin();
    rc = cli_metrics_open("/nonexistent-gd-dir/metrics.jsonl", 0, &m);
    msg = capture_end();
    T_EQ_INT(rc, -1);
    T_ASSERT(m == NULL);
    if (!strstr(msg, "/nonexistent-gd-dir/metrics.jsonl") || !strstr(msg, "No such file"))
        T_FAIL_("message: %s", msg);
    capture_begin();
    rc = cli_metrics_open("", 0, &m);
    msg = capture_end();
    T_EQ_INT(rc, -1);
    T_ASSERT(strstr(msg, "empty"));

    /* A full disk: the first failed write says so, the later ones return -1 quietly. */
    if (access("/dev/full", W_OK) == 0) {
        T_EQ_INT(cli_metrics_open("/dev/full", 0, &m), 0);
        cJSON *r = cli_metrics_record("epoch");
        cJSON_AddNumberToObject(r, "epoch", 1);
        capture_begin();
        rc = cli_metrics_write(m, r);
        msg = capture_end();
        T_EQ_INT(rc, -1);
        if (!strstr(msg, "/dev/full") || !strstr(msg, "No space left")) T_FAIL_("message: %s", msg);
        capture_begin();
        rc = cli_metrics_write(m, cli_metrics_record("epoch"));
        msg = capture_end();
        T_EQ_INT(rc, -1);
        T_EQ_STR(msg, "");
        capture_begin();
        cli_metrics_close(m);
        msg = capture_end();
        T_EQ_STR(msg, ""); /* already reported */
    } else {
        printf("note: /dev/full is not writable here; the full-disk case is not checked\n");
    }
    cli_metrics_close(NULL);
    unlink(path);
    printf("metrics writer: ok\n");
    return 0;
}
