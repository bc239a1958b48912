/* The bounds every outside JSON text gets before json-glib sees it (core/codec/jsonparse.h). */
#include "core/codec/jsonparse.h"
#include "proto/proto.h"

#include "checkmain.h"

#include <check.h>
#include <string.h>

static const struct {
    const char *text;
    gssize len;        /* -1: NUL-terminated */
    const char *error; /* NULL: parses */
} cases[] = {
    {"{\"a\":[1,2,{\"b\":null}]}", -1, NULL},
    {"  {\"a\":true}\n", -1, NULL},
    {"[1] [2]", -1, "at byte 4: more after its JSON value"},
    {"{} x", -1, "at byte 3: more after its JSON value"},
    {"{\"pu\":18446744073709551617}", -1, "integer 18446744073709551617 is outside 64 bits"},
    {"{\"pu\":-9223372036854775809}", -1, "integer -9223372036854775809 is outside 64 bits"},
    {"{\"pu\":9223372036854775807}", -1, NULL},
    {"{\"pu\":-9223372036854775808}", -1, NULL},
    {"{\"x\":1e999}", -1, "number 1e999 is not finite"},
    {"{\"x\":1.5e3}", -1, NULL},
    {"{\"name\":\"run-a\\u0000x\"}", -1, "\\u0000 (NUL) in a string"},
    {"{\"name\":\"run-a\\\\u0000x\"}", -1, NULL}, /* an escaped backslash, then text */
    {"{\"name\":\"a\0b\"}", 14, "at byte 10: NUL byte"},
    {"{\"op\":\"release\",\"name\":\"a\",\"name\":\"b\"}", -1, "member 'name' given twice"},
    {"{\"a\":{\"x\":1,\"y\":2,\"x\":3}}", -1, "member 'x' given twice"},
    {"[{\"x\":1},{\"x\":1}]", -1, NULL},
    {"{\"name\":\"\\ud800\"}", -1, "at byte 9: lone UTF-16 surrogate \\ud800 in a string"},
    {"{\"name\":\"\\udc00x\"}", -1, "lone UTF-16 surrogate \\udc00"},
    {"{\"name\":\"\\uD83D\\u0041\"}", -1, "lone UTF-16 surrogate \\uD83D"},
    {"{\"name\":\"\\uD83D\\uDE00\"}", -1, NULL},
    {"{\"name\":\"\\\\ud800\"}", -1, NULL}, /* an escaped backslash, then text */
    {"{\"name\":\"open", -1, "string without its closing quote"},
    {"]", -1, "closing bracket without its opening one"},
    {"garbage", -1, ""},
    {"", -1, "empty text"},
};

START_TEST(test_cases)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) node = vpJsonParse(cases[_i].text, cases[_i].len, &err);

    if (!cases[_i].error) {
        ck_assert_msg(node, "%s: %s", cases[_i].text, err ? err->message : "");
        return;
    }
    ck_assert_msg(!node, "%s parsed", cases[_i].text);
    ck_assert(g_error_matches(err, VP_JSON_ERROR, VP_JSON_ERROR_INVALID));
    ck_assert_msg(strstr(err->message, cases[_i].error), "%s: %s", cases[_i].text, err->message);
}
END_TEST

/* 100,000 '[' (a tenth of the socket's message limit) once overflowed the stack. */
START_TEST(test_depth)
{
    g_autofree char *deep = g_strnfill(100000, '[');
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonNode) node = vpJsonParse(deep, -1, &err);

    ck_assert_ptr_null(node);
    ck_assert_str_eq(err->message, "at byte 32: nested deeper than 32 levels");

    g_autoptr(GString) ok = g_string_new(NULL);
    for (int i = 0; i < VP_JSON_MAX_DEPTH; i++)
        g_string_append_c(ok, '[');
    for (int i = 0; i < VP_JSON_MAX_DEPTH; i++)
        g_string_append_c(ok, ']');
    g_autoptr(JsonNode) fits = vpJsonParse(ok->str, ok->len, NULL);
    ck_assert_ptr_nonnull(fits);
}
END_TEST

/* The socket codec: "run-a\u0000x" once named run-a, so a release freed a running domain. */
START_TEST(test_proto_nul_name)
{
    const char *line = "{\"op\":\"release\",\"name\":\"run-a\\u0000x\"}";
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonObject) obj = vpProtoDecodeObject(line, strlen(line), &err);

    ck_assert_ptr_null(obj);
    ck_assert(g_error_matches(err, VP_CLIENT_ERROR, VP_CLIENT_ERROR_PROTOCOL));
    ck_assert_msg(strstr(err->message, "invalid JSON: at byte 29: \\u0000 (NUL) in a string"), "%s",
                  err->message);
}
END_TEST

/* A request naming its domain twice: one reader might act on the first name, another on
 * the last; the socket answers neither. */
START_TEST(test_proto_name_twice)
{
    const char *line = "{\"op\":\"release\",\"name\":\"a\",\"name\":\"b\"}";
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonObject) obj = vpProtoDecodeObject(line, strlen(line), &err);

    ck_assert_ptr_null(obj);
    ck_assert_msg(strstr(err->message, "invalid JSON: member 'name' given twice"), "%s",
                  err->message);
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("jsonparse");
    TCase *tc = tcase_create("bounds");

    tcase_add_loop_test(tc, test_cases, 0, G_N_ELEMENTS(cases));
    tcase_add_test(tc, test_depth);
    tcase_add_test(tc, test_proto_nul_name);
    tcase_add_test(tc, test_proto_name_twice);
    suite_add_tcase(s, tc);
    return s;
}
