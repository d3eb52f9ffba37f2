/*
 * Every GD_* parameter of the registry is documented in docs/params.md, and the page documents
 * no parameter the registry lacks.
 */
#include "core/internal.h"
#include "test.h"

int main(void) {
    char *doc = NULL;
    size_t len = 0;
    T_OK(gd__file_read_all(GD_SOURCE_DIR "/docs/params.md", 1 << 20, &doc, &len));
    int documented = 0;
    for (int i = 0; i < gd_param_count(); i++) {
        const char *name, *def, *help;
        T_OK(gd_param_describe(i, &name, &def, &help));
        char cell[128];
        snprintf(cell, sizeof cell, "| `%s` | `%s` |", name, def);
        if (!strstr(doc, cell)) T_FAIL_("docs/params.md has no row starting \"%s\"", cell);
    }
    for (const char *p = doc; (p = strstr(p, "| `GD_")) != NULL; p++) documented++;
    T_EQ_INT(documented, gd_param_count());
    gd_free(doc);
    t_check_no_leaks();
    return 0;
}
