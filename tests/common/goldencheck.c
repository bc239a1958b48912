#include "goldencheck.h"

#include <stdlib.h>
#include <string.h>

void
vpGoldenCheck(const char *name, const char *path, JsonNode *node)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *text = NULL;
    g_autofree char *got = NULL;
    g_autofree char *want = NULL;

    json_generator_set_pretty(gen, TRUE);
    json_generator_set_root(gen, node);
    text = json_generator_to_data(gen, NULL);
    got = g_strconcat(text, "\n", NULL);
    if (g_getenv("VP_REGENERATE")) {
        ck_assert_msg(g_file_set_contents(path, got, -1, &error), "%s: %s", path,
                      error ? error->message : "");
        return;
    }
    ck_assert_msg(g_file_get_contents(path, &want, NULL, &error), "%s: %s", name,
                  error ? error->message : "");
    ck_assert_msg(strcmp(got, want) == 0, "%s: the result differs from %s:\n%s", name, path, got);
}

static gint
compareNames(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

GPtrArray *
vpGoldenCases(const char *dir, gboolean (*keep)(const char *name))
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GDir) d = g_dir_open(dir, 0, &error);
    GPtrArray *cases = g_ptr_array_new_with_free_func(g_free);
    const char *entry;

    if (!d)
        g_error("%s", error->message);
    while ((entry = g_dir_read_name(d))) {
        if (!keep || keep(entry))
            g_ptr_array_add(cases, g_strdup(entry));
    }
    g_ptr_array_sort(cases, compareNames);
    return cases;
}

int
vpGoldenRun(const char *suite, const TTest *test, const GPtrArray *cases, int timeout_s)
{
    Suite *s = suite_create(suite);
    TCase *tc = tcase_create("cases");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, timeout_s);
    tcase_add_loop_test(tc, test, 0, cases->len);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
