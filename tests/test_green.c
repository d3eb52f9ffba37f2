/*
 * Green contexts: the zero-copy gather's way to stay on a few SMs. Checked for real on a GPU:
 * a launch of many more blocks than SMs on a green context's stream records the SM of every
 * block (%smid) and must touch no more SMs than the context holds, while the same launch on
 * an ordinary stream spreads wider. Sizes are rounded up exactly as the device's reported
 * split rules say, a request larger than the GPU is refused (GD_ERR_RANGE, never clamped),
 * the gatherer's event hand-off between an ordinary stream and the green one orders the two
 * and shares cudaMalloc memory, and creating and destroying many leaks neither host nor GPU
 * memory. Argument errors are checked in every CUDA build; the rest needs a GPU whose driver
 * supports green contexts and is skipped (exit 77) otherwise, saying why.
 */
#include "feature/green.h"
#include "test.h"

static int skip(const char *why) {
    fprintf(stderr, "skipped: %s\n", why);
    return GD_TEST_SKIP;
}

/* What a default split should give for a request: at least the minimum, in aligned steps. */
static int expected_sms(int want, int min_sms, int alignment) {
    int n = want < min_sms ? min_sms : want;
    if (alignment > 0) n = (n + alignment - 1) / alignment * alignment;
    return n;
}

/* The confinement check: blocks on the green stream land on at most gd__green_sms SMs. */
static void check_confined(gd__green *g, int total_sms, int normal_distinct) {
    int distinct = 0, max_smid = -1;
    const int sms = gd__green_sms(g);
    T_OK(gd__green_probe_sms(gd__green_device(g), gd__green_stream(g), &distinct, &max_smid));
    fprintf(stderr, "  green context of %d SMs: blocks ran on %d distinct SMs (largest id %d)\n",
            sms, distinct, max_smid);
    T_ASSERT(distinct >= 1);
    if (distinct > sms)
        T_FAIL_("a launch on a green context of %d SMs ran on %d SMs (the driver allows more "
                "only under MPS with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, or on compute "
                "capability 9.x once a module with dynamic parallelism is loaded)",
                sms, distinct);
    if (sms < total_sms && normal_distinct <= sms)
        T_FAIL_("the same launch on an ordinary stream ran on only %d SMs, no more than the "
                "green context's %d: the probe cannot tell confinement apart",
                normal_distinct, sms);
}

static void check_handoff(gd__green *g) {
    long long wrong = -1;
    T_OK(gd__green_probe_handoff(g, &wrong));
    if (wrong != 0)
        T_FAIL_("event hand-off between an ordinary stream and a green one: %lld elements "
                "wrong (the streams were not ordered, or the green context did not see the "
                "primary context's memory)",
                wrong);
}

int main(void) {
    gd__green *g = (gd__green *)&g;

    if (!gd_has_cuda()) {
        T_FAILS(gd__green_create(0, 8, 0, &g), GD_ERR_NO_DEVICE, "without CUDA");
        T_ASSERT(g == NULL);
        gd__green_destroy(NULL);
        t_check_no_leaks();
        return skip("graphdirect was built without CUDA");
    }

    /* Arguments are checked before anything touches a GPU. */
    T_FAILS(gd__green_create(0, 0, 0, &g), GD_ERR_INVALID_ARG, "at least 1");
    T_ASSERT(g == NULL);
    T_FAILS(gd__green_create(0, -3, 0, &g), GD_ERR_INVALID_ARG, "-3");
    T_FAILS(gd__green_create(0, 8, 0x10, &g), GD_ERR_INVALID_ARG, "0x10");
    T_FAILS(gd__green_create(0, 8, 0, NULL), GD_ERR_INVALID_ARG, "NULL");
    gd__green_destroy(NULL);

    if (gd_device_count() == 0) {
        T_FAILS(gd__green_create(0, 8, 0, &g), GD_ERR_NO_DEVICE, "none is visible");
        T_ASSERT(g == NULL);
        t_check_no_leaks();
        return skip("no GPU is visible");
    }
    T_FAILS(gd__green_create(gd_device_count(), 8, 0, &g), GD_ERR_RANGE, "does not exist");

    gd_device_info info;
    T_OK(gd_device_info_get(0, &info));
    const int total = info.multiprocessors;
    fprintf(stderr, "GPU 0: %s, compute capability %d.%d, %d SMs\n", info.name, info.major,
            info.minor, total);

    gd_status st = gd__green_create(0, 8, 0, &g);
    if (st == GD_ERR_UNSUPPORTED) {
        char why[1200];
        snprintf(why, sizeof why, "green contexts are unsupported here: %s", gd_last_error());
        T_ASSERT(g == NULL);
        t_check_no_leaks();
        return skip(why);
    }
    T_OK(st);
    int min_sms = 0, alignment = 0;
    gd__green_split_rules(g, &min_sms, &alignment);
    fprintf(stderr, "default split: groups of at least %d SMs in steps of %d (as reported)\n",
            min_sms, alignment);
    if (info.major == 9 && (min_sms != 8 || alignment != 8))
        fprintf(stderr, "note: the driver documentation's guideline for compute capability 9.x "
                        "is at least 8 SMs in steps of 8\n");
    T_ASSERT(min_sms >= 0 && alignment >= 0);
    gd__green_destroy(g);
    g = NULL;

    /* The same launch on the primary context's default stream, for comparison. */
    int normal_distinct = 0, normal_max = -1;
    T_OK(gd__green_probe_sms(0, NULL, &normal_distinct, &normal_max));
    fprintf(stderr, "ordinary stream: blocks ran on %d distinct SMs (largest id %d)\n",
            normal_distinct, normal_max);
    T_ASSERT(normal_distinct >= 1 && normal_distinct <= total);

    /* Several sizes, each rounded up by the reported rules; confined, and the hand-off works. */
    const int requests[] = {1, 8, 16, 20, total / 8, total / 2};
    for (size_t i = 0; i < sizeof requests / sizeof requests[0]; i++) {
        const int want = requests[i];
        if (want < 1 || want > total) continue;
        T_OK(gd__green_create(0, want, 0, &g));
        const int sms = gd__green_sms(g);
        fprintf(stderr, "asked for %d SMs, got %d\n", want, sms);
        T_EQ_INT(gd__green_device(g), 0);
        T_ASSERT(gd__green_stream(g) != NULL);
        T_ASSERT(sms >= want && sms <= total);
        if (alignment > 0) {
            T_EQ_INT(sms % alignment, 0);
            T_EQ_INT(sms, expected_sms(want, min_sms, alignment));
        }
        check_confined(g, total, normal_distinct);
        check_handoff(g);
        gd__green_destroy(g);
        g = NULL;
    }

    /* More SMs than the GPU has is refused, not clamped; all of them may or may not split. */
    T_FAILS(gd__green_create(0, total + 1, 0, &g), GD_ERR_RANGE, "ask for fewer");
    T_ASSERT(g == NULL);
    st = gd__green_create(0, total, 0, &g);
    if (st == GD_OK) {
        fprintf(stderr, "a green context of all %d SMs: got %d\n", total, gd__green_sms(g));
        T_EQ_INT(gd__green_sms(g), total);
        gd__green_destroy(g);
        g = NULL;
    } else {
        fprintf(stderr, "a green context of all %d SMs: %s\n", total, gd_last_error());
        T_EQ_INT(st, GD_ERR_RANGE);
        T_ASSERT(g == NULL);
    }

    /* The fine split: finer rounding, still confined. */
    int fine_ok = 0;
    st = gd__green_create(0, 1, GD__GREEN_FINE, &g);
    if (st == GD_ERR_UNSUPPORTED || st == GD_ERR_RANGE) {
        fprintf(stderr, "fine split unavailable: %s\n", gd_last_error());
        T_ASSERT(g == NULL);
    } else {
        T_OK(st);
        fine_ok = 1;
        fprintf(stderr, "fine split: asked for 1 SM, got %d\n", gd__green_sms(g));
        T_ASSERT(gd__green_sms(g) >= 1);
        check_confined(g, total, normal_distinct);
        gd__green_destroy(g);
        g = NULL;
        if (total >= 10) {
            T_OK(gd__green_create(0, 10, GD__GREEN_FINE, &g));
            fprintf(stderr, "fine split: asked for 10 SMs, got %d\n", gd__green_sms(g));
            T_ASSERT(gd__green_sms(g) >= 10 && gd__green_sms(g) <= total);
            check_confined(g, total, normal_distinct);
            check_handoff(g);
            gd__green_destroy(g);
            g = NULL;
        }
    }

    /* Two at once (as two gatherers would hold), each usable. */
    if (total >= 16) {
        gd__green *g2 = NULL;
        T_OK(gd__green_create(0, 8, 0, &g));
        T_OK(gd__green_create(0, 8, 0, &g2));
        T_ASSERT(gd__green_stream(g) != gd__green_stream(g2));
        check_confined(g, total, normal_distinct);
        check_confined(g2, total, normal_distinct);
        check_handoff(g2);
        gd__green_destroy(g2);
        gd__green_destroy(g);
        g = NULL;
    }

    /*
     * Create and destroy many times: no host blocks and no GPU memory left behind. The first
     * cycles may leave one-time reservations (the driver keeps some memory per device once
     * green contexts were used: 256 MiB on the H100), so the loss is measured over a second
     * round of 64 after a warm-up round.
     */
    gd_device_info before, after;
    for (int round = 0; round < 2; round++) {
        T_OK(gd_device_info_get(0, &before));
        for (int i = 0; i < 64; i++) {
            T_OK(gd__green_create(0, 8 + 8 * (i % 2), fine_ok && i % 4 == 3 ? GD__GREEN_FINE : 0u,
                                  &g));
            if (i % 16 == 0) check_handoff(g);
            gd__green_destroy(g);
            g = NULL;
        }
        T_OK(gd_device_info_get(0, &after));
        const long long lost = (long long)(before.free_memory - after.free_memory);
        fprintf(stderr, "GPU memory after %s 64 create/destroy: %lld bytes less free\n",
                round ? "another" : "the first", lost);
        if (round == 1 && lost > (64ll << 20))
            T_FAIL_("64 green contexts created and destroyed left %lld MiB of GPU memory in use",
                    lost >> 20);
    }
    t_check_no_leaks();
    fprintf(stderr, "ok\n");
    return 0;
}
