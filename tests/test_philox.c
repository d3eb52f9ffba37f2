/*
 * Philox4x32-10: the published known-answer vectors (Random123's kat_vectors), and on a GPU the
 * same numbers from the CUDA side for fresh random seeds and counters.
 */
#include "core/cuda.h"
#include "core/philox.h"
#include "test.h"

static void kat(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1,
                uint32_t e0, uint32_t e1, uint32_t e2, uint32_t e3) {
    gd_philox_ctr c = {{c0, c1, c2, c3}};
    gd_philox_key k = {{k0, k1}};
    gd_philox_ctr r = gd_philox4x32_10(c, k);
    T_EQ_U64(r.v[0], e0);
    T_EQ_U64(r.v[1], e1);
    T_EQ_U64(r.v[2], e2);
    T_EQ_U64(r.v[3], e3);
}

int main(void) {
    kat(0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
    kat(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
        0x41c83b0e, 0xa20bc7c6, 0x6d5451fd);
    kat(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
        0x94fdcceb, 0x5001e420, 0x24126ea1);

    /* The convenience wrapper maps the seed to the key, low word first. */
    gd_philox_ctr w = gd_philox(0x299f31d0a4093822ull, 0x243f6a88, 0x85a308d3, 0x13198a2e,
                                0x03707344);
    T_EQ_U64(w.v[0], 0xd16cfe09);

    /* Helpers: uniforms in range, bounded integers below n. */
    uint64_t state = t_seed();
    for (int i = 0; i < 100000; i++) {
        uint32_t x = (uint32_t)t_rand(&state), y = (uint32_t)t_rand(&state);
        float u = gd_philox_uniform(x);
        T_ASSERT(u >= 0.0f && u < 1.0f);
        double d = gd_philox_uniform_double(x, y);
        T_ASSERT(d >= 0.0 && d < 1.0);
        uint64_t n = 1 + t_rand(&state) % (i % 2 ? 1000 : (1ull << 40));
        T_ASSERT(gd_philox_below(x, y, n) < n);
    }
    T_EQ_U64(gd_philox_below(0xffffffffu, 0xffffffffu, 10), 9);

#ifdef GD_WITH_CUDA
    if (gd_device_count() == 0) {
        fprintf(stderr, "CPU checks passed; no GPU, so the CPU == GPU check is skipped\n");
        return GD_TEST_SKIP;
    }
    const int64_t n = 1 << 16;
    uint64_t seed = t_rand(&state);
    uint32_t c = (uint32_t)t_rand(&state), d = (uint32_t)t_rand(&state);
    uint32_t *gpu = malloc((size_t)n * 16);
    T_ASSERT(gpu);
    T_OK(gd__cuda_philox_fill(0, seed, c, d, n, gpu));
    for (int64_t i = 0; i < n; i++) {
        gd_philox_ctr r = gd_philox(seed, (uint32_t)i, (uint32_t)(i >> 32), c, d);
        for (int k = 0; k < 4; k++) T_EQ_U64(gpu[4 * i + k], r.v[k]);
    }
    free(gpu);
    printf("CPU == GPU for %lld Philox blocks\n", (long long)n);
#else
    fprintf(stderr, "built without CUDA: the CPU == GPU check is skipped\n");
#endif
    return 0;
}
