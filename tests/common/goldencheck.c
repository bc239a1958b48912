#include "goldencheck.h"

#include <check.h>
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

gint
vpGoldenCompareNames(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}
