/*
 * libFuzzer target for the .npz reader (src/io/npz.c): the input is a whole archive. Every
 * member named *.npy is streamed through a sink that only checks the offsets it is given. It
 * must never crash, read out of bounds, loop or leak, whatever the central directory, the zip64
 * records, the local headers, the deflate streams or the .npy headers claim.
 */
#include "io/npz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static gd_status sink(void *user, const void *p, size_t n, uint64_t offset) {
    uint64_t *next = user;
    if (offset != *next || (n && !p)) __builtin_trap(); /* chunks arrive in order */
    *next += n;
    return GD_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64] = "/tmp/fuzz-npz-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return 0;
    const int ok = write(fd, data, size) == (ssize_t)size;
    close(fd);
    gd__npz *z = NULL;
    if (ok && gd__npz_open(path, &z) == GD_OK) {
        for (int i = 0; i < gd__npz_count(z); i++) {
            char name[300];
            const char *m = gd__npz_member(z, i);
            const size_t len = strlen(m);
            if (len < 4 || len >= sizeof name || strcmp(m + len - 4, ".npy") != 0) continue;
            memcpy(name, m, len - 4);
            name[len - 4] = '\0';
            gd_npy_info info;
            uint64_t next = 0;
            memset(&info, 0, sizeof info);
            if (gd__npz_read(z, name, &info, sink, &next) == GD_OK &&
                (int64_t)next != info.data_bytes)
                __builtin_trap(); /* success means every data byte, once */
        }
        gd__npz_close(z);
    }
    unlink(path);
    return 0;
}
