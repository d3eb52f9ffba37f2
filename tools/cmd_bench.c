/*
 * `graphdirect bench`: the benchmark drivers (bench/), one subcommand each. Every benchmark
 * measures its ceiling in the same run and reports ratios to it; docs/bench.md explains the
 * columns. The drivers time GPU work with the CUDA runtime, which is why the tool links the
 * static library rather than the shared one.
 */
#include "bench.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} benches[] = {
    {"gather", bench_gather,
     "feature gather modes vs pinned DMA: row widths, ids per call, SM budget, GPU cache"},
    {"sample", bench_sample,
     "neighbour sampling edges/s: UVA vs GPU-resident graph vs CPU sampler on every core"},
    {"epoch", bench_epoch,
     "one training epoch per mode: all-gpu, zero-copy, cpu-centric (and cpu), side by side"},
    {"loader", bench_loader,
     "the public minibatch loader iterated from C (reference for the Python binding)"},
    {"step", bench_step,
     "one training step of the GNN on the CUDA nn backend (vs PyG: bench/pyg_step.py)"},
    {"scale", bench_scale,
     "data-parallel training on N GPUs vs 1 GPU, with DMA, peer and all-reduce ceilings"},
    {"disk", bench_disk,
     "raw random reads of a disk (the SSD tier's ceiling): IOPS and GB/s per queue depth"},
    {"dyncache", bench_dyncache,
     "the SSD tier's dynamic cache: hit rate per eviction policy and window depth"},
    {"ssd", bench_ssd,
     "the SSD tier's fetch path on a GPU: rows from disk vs the disk's raw random reads"},
    {"startup", bench_startup,
     "time to the first trained minibatch per mode, with the registration rate per thread"},
};
#define NUM_BENCHES ((int)(sizeof benches / sizeof benches[0]))

static void help(FILE *out) {
    fprintf(out, "usage: graphdirect bench <benchmark> [options]   (graphdirect bench "
                 "<benchmark> --help)\n\n"
                 "Benchmarks measure their ceiling in the same run and report ratios to it\n"
                 "(docs/bench.md). Results print as a table; --json FILE keeps every number.\n\n"
                 "benchmarks:\n");
    for (int i = 0; i < NUM_BENCHES; i++)
        fprintf(out, "  %-10s %s\n", benches[i].name, benches[i].summary);
    fprintf(out, "\nexamples:\n"
                 "  graphdirect bench gather --quick            # seconds; a smoke test\n"
                 "  graphdirect bench gather --json gather.json # the full run on a GPU\n");
}

int cmd_bench(int argc, char **argv) {
    if (argc < 2) {
        help(stderr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        help(stdout);
        return 0;
    }
    for (int i = 0; i < NUM_BENCHES; i++)
        if (!strcmp(argv[1], benches[i].name)) return benches[i].run(argc - 1, argv + 1);
    fprintf(stderr, "graphdirect bench: unknown benchmark '%s'\n\n", argv[1]);
    help(stderr);
    return CLI_EXIT_USAGE;
}
