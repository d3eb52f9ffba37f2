/*
 * `graphdirect stripe`: rewrite a dataset's feature table as one file in each of several
 * directories (disks), striped in units, for the SSD tier to read side by side
 * (gd_dataset_stripe, docs/formats.md "Striped features").
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define MAX_TARGETS 64

static void help(void) {
    printf("usage: graphdirect stripe DATASET --to DIR[,DIR...] [options]\n\n"
           "Rewrite DATASET's feature table as one .npy file in each DIR (give one directory\n"
           "a disk): unit u of the table goes to the (u mod N)-th file, so random rows spread\n"
           "evenly over the disks, which the SSD tier (features larger than --host-mem-budget)\n"
           "reads side by side. DATASET's meta.json then names the manifest features.stripes\n"
           "instead of features.npy, which is removed; every mode trains on it as before.\n"
           "The files are written and flushed before the switch: a failure or Ctrl-C leaves\n"
           "DATASET as it was. A striped dataset can be striped again (other disks, one\n"
           "DIR: back to one file).\n\n"
           "  --to DIR[,DIR...]    the directories, one a disk (required; up to %d)\n"
           "  --unit SIZE          bytes of a unit, e.g. 64M (default 64M; whole rows on 4 KiB)\n"
           "  -h, --help           this text\n",
           MAX_TARGETS);
}

int cmd_stripe(int argc, char **argv) {
    static const struct option long_opts[] = {{"to", required_argument, 0, 't'},
                                              {"unit", required_argument, 0, 'u'},
                                              {"help", no_argument, 0, 'h'},
                                              {0, 0, 0, 0}};
    gd_stripe_options opts = GD_STRIPE_OPTIONS_INIT;
    char list[8192] = "";
    const char *targets[MAX_TARGETS];
    int n = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (strlen(optarg) >= sizeof list)
                return cli_usage_error("stripe", "--to is longer than %zu characters",
                                       sizeof list - 1);
            snprintf(list, sizeof list, "%s", optarg);
            break;
        case 'u': {
            int64_t v = 0;
            if (cli_parse_i64(optarg, &v) || v <= 0)
                return cli_usage_error("stripe", "--unit '%s' is not a size such as 64M", optarg);
            opts.unit_bytes = v;
            break;
        }
        case 'h':
            help();
            return 0;
        default:
            return cli_usage_error("stripe", "unknown option");
        }
    }
    if (optind != argc - 1) return cli_usage_error("stripe", "expected exactly one DATASET");
    if (!list[0]) return cli_usage_error("stripe", "--to DIR[,DIR...] is required");
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (n == MAX_TARGETS)
            return cli_usage_error("stripe", "--to lists more than %d directories", MAX_TARGETS);
        targets[n++] = p;
    }
    if (n == 0) return cli_usage_error("stripe", "--to lists no directory");
    cli_progress prog;
    cli_progress_init(&prog);
    opts.progress = cli_progress_cb;
    opts.progress_user = &prog;
    const double t0 = cli_now();
    gd_status st = gd_dataset_stripe(argv[optind], targets, n, &opts);
    cli_progress_end(&prog);
    if (st != GD_OK) return cli_fail("stripe", st);
    printf("striped the features of %s over %d file%s (%.2f s): see %s/features.stripes\n",
           argv[optind], n, n == 1 ? "" : "s", cli_now() - t0, argv[optind]);
    return 0;
}
