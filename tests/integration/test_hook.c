/*
 * vcpuplace-hook against what may sit at the other end of its socket: a configuration
 * the daemon refuses, a listener that is not root, a listener whose queue is full. The
 * real hook binary; the daemon's own loader for the comparison; fake listeners only
 * where the point is that they are not vcpuplaced.
 */
#include "harness.h"
#include "daemon/config.h"
#include "daemon/manager.h"

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int
hook(const char *name, const char *op, const char *subop, const char *xml, char **out,
     char **errout)
{
    const char *argv[] = {VP_HOOK, name, op, subop, "-", NULL};
    return run(argv, xml, out, errout);
}

/* Files vcpuplaced refuses, one mistake each, anywhere in the file. */
static const char *const refused[] = {
    "[daemon]\nhook_failure=closed \n",
    "[daemon]\nhook_failure=Closed\n",
    "[daemon]\nhook_failure=open\n[policy]\nsmt spread\n",
    "[daemon]\nhook_failure=open\n[rebalance]\nbogus=1\n",
    "[policy]\nsmt=sideways\n",
    "[rebalance]\ncool_wait=0.5\n",
    "[daemon]\nhost_cpus=0-x\n",
    "[deamon]\n",
    "[daemon]\nhook_timeout_ms=500ms\n",
};

/* The daemon and the hook read the file with one reader. A file the daemon refuses makes
 * the hook refuse nothing: vcpuplaced runs on its last good configuration, so the hook asks
 * it (here nobody listens: hook_failure=open, the default, lets the start go on) and says
 * what is wrong with the file, quoting the daemon's message (file, line and reason). */
START_TEST(test_refused_config)
{
    g_autofree char *text =
        g_strdup_printf("[daemon]\nsocket=%s/nobody-listens\n%s", tmpdir, refused[_i]);
    ck_assert(g_file_set_contents(confpath, text, -1, NULL));
    g_autoptr(GError) gerr = NULL;
    g_autoptr(vpConfig) cfg = vpConfigLoad(confpath, &gerr);
    ck_assert_msg(!cfg, "the daemon accepts: %s", text);
    ck_assert_msg(strstr(gerr->message, confpath), "%s", gerr->message);

    g_autofree char *xml = domainXML("web", 1, NULL, NULL);
    g_autofree char *out = NULL, *err = NULL;
    ck_assert_int_eq(hook("web", "prepare", "begin", xml, &out, &err), 0);
    ck_assert_msg(strstr(err, gerr->message) && strstr(err, "last good configuration") &&
                      strstr(err, "hook_failure=open"),
                  "daemon: %s\nhook: %s", gerr->message, err);
    g_clear_pointer(&err, g_free);
    g_clear_pointer(&out, g_free);

    /* A restore keeps its XML; a stop goes on. */
    ck_assert_int_eq(hook("web", "restore", "begin", xml, &out, &err), 0);
    ck_assert_str_eq(out, "");
    ck_assert_msg(strstr(err, "its XML goes on unchanged"), "%s", err);
    g_clear_pointer(&err, g_free);
    g_clear_pointer(&out, g_free);
    ck_assert_int_eq(hook("web", "release", "end", xml, &out, &err), 0);
}
END_TEST

/* What the hook takes from a file the daemon refuses: the [daemon] lines right on their
 * own. A domain outside domains= goes on without a word whatever hook_failure says; for a
 * managed one hook_failure decides when vcpuplaced cannot; report mode refuses nothing. */
START_TEST(test_broken_config_salvaged)
{
    g_autofree char *text = g_strdup_printf(
        "[daemon]\nmode=enforce\nsocket=%s/nobody-listens\ndomains=web-*\nhook_failure=closed\n"
        "mystery=1\n[policy]\nsmt=sideways\n",
        tmpdir);
    ck_assert(g_file_set_contents(confpath, text, -1, NULL));
    g_autofree char *other = domainXML("other", 1, NULL, NULL);
    g_autofree char *web = domainXML("web-1", 1, NULL, NULL);
    g_autofree char *err = NULL;
    ck_assert_int_eq(hook("other", "prepare", "begin", other, NULL, &err), 0);
    ck_assert_str_eq(err, "");
    g_clear_pointer(&err, g_free);
    ck_assert_int_eq(hook("web-1", "prepare", "begin", web, NULL, &err), 1);
    ck_assert_msg(strstr(err, "mystery") && strstr(err, "hook_failure=closed"), "%s", err);
    g_clear_pointer(&err, g_free);

    g_autofree char *report = g_strdup_printf("%s[daemon]\nmode=report\n", text);
    ck_assert(g_file_set_contents(confpath, report, -1, NULL));
    ck_assert_int_eq(hook("web-1", "prepare", "begin", web, NULL, &err), 0);
    ck_assert_msg(strstr(err, "hook_failure=open"), "%s", err);
}
END_TEST

/* Operations the hook does not handle: nothing read, nothing said, even with a broken
 * file. */
START_TEST(test_ignored_ops_read_nothing)
{
    ck_assert(g_file_set_contents(confpath, "[daemon]\nhook_failure=closed \n", -1, NULL));
    g_autofree char *out = NULL, *err = NULL;
    ck_assert_int_eq(hook("web", "prepare", "end", "", &out, &err), 0);
    ck_assert_str_eq(err, "");
    g_clear_pointer(&err, g_free);
    g_clear_pointer(&out, g_free);
    ck_assert_int_eq(hook("web", "stopped", "begin", "", &out, &err), 0);
    ck_assert_str_eq(err, "");
}
END_TEST

static int
listenAt(const char *path, int backlog)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    if (backlog >= 0)
        ck_assert_int_eq(listen(fd, backlog), 0);
    return fd;
}

/* A listener that is not root, answering every connection with a reply that would make
 * libvirt run a different domain. The hook sends it nothing and takes nothing from it. */
START_TEST(test_peer_not_root)
{
    g_autofree char *path = g_build_filename(tmpdir, "impostor.sock", NULL);
    int fd = listenAt(path, -1);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        /* SO_PEERCRED reports who called listen(). */
        if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0 ||
            listen(fd, 8) < 0)
            _exit(2);
        static const char evil[] = "{\"ok\":true,\"xml\":\"<domain type='kvm'>evil</domain>\"}\n";
        for (int i = 0; i < 3; i++) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            if (poll(&p, 1, 10000) <= 0)
                _exit(3);
            int c = accept(fd, NULL, NULL);
            if (c < 0)
                _exit(4);
            /* The probe and the hook close without reading: no SIGPIPE. */
            (void)!send(c, evil, sizeof(evil) - 1, MSG_NOSIGNAL);
            close(c);
        }
        _exit(0);
    }
    close(fd);
    /* The child listens once it has dropped root; until then connect is refused. */
    for (int i = 0; i < 200; i++) {
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
        int rc = connect(probe, (struct sockaddr *)&sa, sizeof(sa));
        close(probe);
        if (rc == 0)
            break;
        g_usleep(10000);
    }

    g_autofree char *conf = g_strdup_printf(
        "[daemon]\nmode=enforce\nsocket=%s\nhook_failure=closed\nhook_timeout_ms=2000\n", path);
    ck_assert(g_file_set_contents(confpath, conf, -1, NULL));
    g_autofree char *xml = domainXML("web", 1, NULL, NULL);
    g_autofree char *out = NULL, *err = NULL;
    ck_assert_int_eq(hook("web", "restore", "begin", xml, &out, &err), 0);
    ck_assert_str_eq(out, "");
    ck_assert_msg(strstr(err, "served by uid 65534") && strstr(err, "not root"), "%s", err);
    g_clear_pointer(&err, g_free);
    g_clear_pointer(&out, g_free);
    ck_assert_int_eq(hook("web", "prepare", "begin", xml, &out, &err), 1);
    ck_assert_msg(strstr(err, "refusing to start web") && strstr(err, "not root") &&
                      strstr(err, "hook_failure=closed"),
                  "%s", err);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
}
END_TEST

typedef struct {
    int fd;
    int delay_ms;
    int answered;
} Late;

/* Accepts after a while, answering each connection ok: a daemon busy for delay_ms. */
static gpointer
lateAcceptor(gpointer data)
{
    Late *l = data;
    g_usleep(l->delay_ms * 1000);
    static const char ok[] = "{\"ok\":true}\n";
    for (;;) {
        struct pollfd p = {.fd = l->fd, .events = POLLIN};
        if (poll(&p, 1, 3000) <= 0)
            return NULL;
        int c = accept(l->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        char buf[65536];
        /* The hook's request, if this is the hook; the fillers send nothing. */
        struct pollfd in = {.fd = c, .events = POLLIN};
        if (poll(&in, 1, 200) > 0 && read(c, buf, sizeof(buf)) > 0) {
            ck_assert_int_eq(write(c, ok, sizeof(ok) - 1), sizeof(ok) - 1);
            l->answered++;
        }
        close(c);
    }
}

/* A listen queue full for 300 ms: connect says EAGAIN; the hook tries again until its
 * deadline and is answered, instead of starting the domain unplaced. */
START_TEST(test_full_backlog_waited_out)
{
    g_autofree char *path = g_build_filename(tmpdir, "busy.sock", NULL);
    int fd = listenAt(path, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
    int fillers[8], n = 0;
    for (; n < 8; n++) {
        fillers[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (connect(fillers[n], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            ck_assert_int_eq(errno, EAGAIN);
            close(fillers[n]);
            break;
        }
    }
    ck_assert_msg(n < 8, "the queue never filled");

    g_autofree char *conf = g_strdup_printf(
        "[daemon]\nmode=enforce\nsocket=%s\nhook_failure=closed\nhook_timeout_ms=3000\n", path);
    ck_assert(g_file_set_contents(confpath, conf, -1, NULL));
    Late late = {.fd = fd, .delay_ms = 300};
    GThread *t = g_thread_new("late", lateAcceptor, &late);
    g_autofree char *xml = domainXML("web", 1, NULL, NULL);
    g_autofree char *err = NULL;
    ck_assert_int_eq(hook("web", "prepare", "begin", xml, NULL, &err), 0);
    ck_assert_str_eq(err, "");
    for (int i = 0; i < n; i++)
        close(fillers[i]);
    g_thread_join(t);
    ck_assert_int_eq(late.answered, 1);
    close(fd);
}
END_TEST

/* Replies that are not replies: refused as such, never a crash, never taken for ok. */
START_TEST(test_hostile_replies)
{
    static const struct {
        const char *reply;
        const char *says;
    } cases[] = {
        {"{\"ok\":true,\"ok\":true}\n", "duplicate"},
        {"{\"ok\":\"yes\"}\n", "boolean member 'ok'"},
        {"[true]\n", "boolean member 'ok'"},
        {"{\"ok\":true} {\"ok\":true}\n", "end of file expected"},
        {"{\"ok\":false,\"error\":\"a\\u0000b\",\"refused\":true}\n", "\\u0000"},
        {"{\"ok\":true,\"n\":123456789012345678901234567890}\n", "too big"},
        {NULL, "maximum parsing depth"},
    };
    g_autofree char *path = g_build_filename(tmpdir, "hostile.sock", NULL);
    int fd = listenAt(path, 8);
    g_autofree char *conf = g_strdup_printf(
        "[daemon]\nmode=enforce\nsocket=%s\nhook_failure=closed\nhook_timeout_ms=3000\n", path);
    ck_assert(g_file_set_contents(confpath, conf, -1, NULL));
    g_autofree char *xml = domainXML("web", 1, NULL, NULL);
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *deep = NULL;
        const char *reply = cases[i].reply;
        if (!reply) {
            /* 100,000 levels: a parser without a bound would overflow its stack. */
            deep = g_malloc(200002);
            memset(deep, '[', 100000);
            memset(deep + 100000, ']', 100000);
            deep[200000] = '\n';
            deep[200001] = '\0';
            reply = deep;
        }
        pid_t child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
            int c = accept(fd, NULL, NULL);
            char buf[65536];
            if (c < 0 || read(c, buf, sizeof(buf)) <= 0 ||
                write(c, reply, strlen(reply)) != (ssize_t)strlen(reply))
                _exit(2);
            _exit(0);
        }
        g_autofree char *err = NULL;
        ck_assert_int_eq(hook("web", "prepare", "begin", xml, NULL, &err), 1);
        ck_assert_msg(strstr(err, "bad reply from vcpuplaced") && strstr(err, cases[i].says) &&
                          strstr(err, "hook_failure=closed"),
                      "%s: %s", reply, err);
        int status = 0;
        waitpid(child, &status, 0);
        ck_assert_int_eq(WEXITSTATUS(status), 0);
    }
    close(fd);
}
END_TEST

/* A domain XML with size bytes of padding in a metadata element of the tenant's own. */
static char *
padded(const char *name, gsize size)
{
    g_autofree char *pad = g_malloc(size + 1);
    memset(pad, 'A', size);
    pad[size] = '\0';
    return g_strdup_printf("<domain type='test'><name>%s</name><memory>65536</memory>"
                           "<vcpu>2</vcpu><os><type>hvm</type></os><metadata>"
                           "<pad:pad xmlns:pad='urn:tenant'>%s</pad:pad></metadata></domain>",
                           name, pad);
}

/* Metadata is the tenant's to write: padding it must neither start the domain unplaced
 * (over everyone's CPUs) nor pass for the daemon being away. Up to the 4 MiB the daemon
 * parses it is placed; beyond, a start vcpuplace manages is refused naming the size, and
 * one it does not manage goes on untouched. */
START_TEST(test_padded_metadata)
{
    writeConfig("test:///" VP_TOPDIR "/xml/testnode-2s24c2t.xml",
                "synthetic:pack:2 [numa] l3:1 core:24 pu:2", "domains=pad-*\n");
    g_autoptr(vpDaemon) d = startDaemon();
    vpManager *m = vpDaemonManager(d);

    g_autofree char *xml = padded("pad-a", 3 * 1024 * 1024);
    g_autofree char *out = NULL, *err = NULL;
    ck_assert_int_eq(hook("pad-a", "prepare", "begin", xml, &out, &err), 0);
    ck_assert_msg(vpManagerRecord(m, "pad-a"), "not reserved: %s", err);
    ck_assert_str_eq(vpDomStateName(vpManagerRecord(m, "pad-a")->state), "reserved");
    g_clear_pointer(&err, g_free);
    g_clear_pointer(&out, g_free);

    g_autofree char *huge = padded("pad-b", 5 * 1024 * 1024);
    g_autofree char *says =
        g_strdup_printf("refusing to start pad-b: its domain XML of %zu bytes exceeds the "
                        "4194304 bytes vcpuplace reads",
                        strlen(huge));
    ck_assert_int_eq(hook("pad-b", "prepare", "begin", huge, &out, &err), 1);
    ck_assert_msg(strstr(err, says), "%s", err);
    ck_assert_ptr_null(vpManagerRecord(m, "pad-b"));
    g_clear_pointer(&err, g_free);
    g_clear_pointer(&out, g_free);

    /* A restore never fails on it: the XML goes on as it is. */
    ck_assert_int_eq(hook("pad-b", "restore", "begin", huge, &out, &err), 0);
    ck_assert_str_eq(out, "");
    ck_assert_msg(strstr(err, "its XML goes on unchanged"), "%s", err);
    g_clear_pointer(&err, g_free);
    g_clear_pointer(&out, g_free);

    g_autofree char *other = padded("other", 5 * 1024 * 1024);
    ck_assert_int_eq(hook("other", "prepare", "begin", other, &out, &err), 0);
    ck_assert_str_eq(err, "");
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("hook");
    TCase *tc = tcase_create("integration");
    tcase_add_checked_fixture(tc, setupTmp, teardownTmp);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_refused_config, 0, G_N_ELEMENTS(refused));
    tcase_add_test(tc, test_broken_config_salvaged);
    tcase_add_test(tc, test_ignored_ops_read_nothing);
    tcase_add_test(tc, test_peer_not_root);
    tcase_add_test(tc, test_full_backlog_waited_out);
    tcase_add_test(tc, test_hostile_replies);
    tcase_add_test(tc, test_padded_metadata);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
