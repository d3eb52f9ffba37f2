/*
 * Every GD_* parameter of the registry is documented in docs/params.md, and the page documents
 * no parameter the registry lacks. A value given with gd_param_set counts as given for the
 * defaults that depend on whether the user chose a value (regression: the trainer read
 * GD_GATHER_SMS with getenv, so gd_param_set had no effect on it).
 */
#include "core/internal.h"
#include "test.h"

/*
 * Regression, "GD_GATHER_SMS read with getenv": the zero-copy trainer picks a 10 % SM budget
 * for the gather unless the user gave one; it asked getenv, which does not see gd_param_set.
 * It now asks gd__param_given, which sees both routes.
 */
static void regress_gather_sms_param_set_ignored(void) {
    const char *name = "GD_GATHER_SMS";
    if (getenv(name)) unsetenv(name);
    T_EQ_INT(gd__param_given(name), 0);
    T_OK(gd_param_set(name, "25%"));
    T_EQ_INT(gd__param_given(name), 1);
    const char *v;
    T_OK(gd_param_get(name, &v));
    T_EQ_STR(v, "25%");
    T_OK(gd_param_set(name, NULL));
    T_EQ_INT(gd__param_given(name), 0);
    T_ASSERT(setenv(name, "12", 1) == 0);
    T_EQ_INT(gd__param_given(name), 1);
    T_ASSERT(setenv(name, "", 1) == 0); /* empty = the default, as gd_param_get reads it */
    T_EQ_INT(gd__param_given(name), 0);
    unsetenv(name);
    T_EQ_INT(gd__param_given("GD_NO_SUCH_PARAMETER"), 0);
}

int main(void) {
    regress_gather_sms_param_set_ignored();
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
