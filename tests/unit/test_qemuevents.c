/*
 * VCPU_THREAD_CREATED's data as libvirt hands it over (JSON text from QEMU): what the
 * patched QEMU sends is read, libvirt's vCPU id taken from the QOM path of a hot-plugged
 * vCPU, and anything else is refused with the member named.
 */
#include "libvirt/qemuevents.h"
#include "core/model/error.h"
#include "checkmain.h"

#include <check.h>

static char *
refusal(const char *details)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(vpVcpuThreadEvent) ev = vpVcpuThreadEventParse(details, &error);

    ck_assert_ptr_null(ev);
    ck_assert(g_error_matches(error, VP_ERROR, VP_ERROR_INVALID));
    return g_strdup(error->message);
}

START_TEST(test_as_qemu_sends_it)
{
    g_autoptr(GError) error = NULL;
    /* seen on this host through virsh qemu-monitor-event after setvcpus 2 --live */
    g_autoptr(vpVcpuThreadEvent) ev = vpVcpuThreadEventParse(
        "{\"thread-id\":25503,\"qom-path\":\"/machine/peripheral/vcpu1\",\"cpu-index\":1}", &error);

    ck_assert_msg(ev, "%s", error ? error->message : "");
    ck_assert_int_eq(ev->thread_id, 25503);
    ck_assert_int_eq(ev->cpu_index, 1);
    ck_assert_int_eq(ev->vcpu, 1);
    ck_assert_str_eq(ev->qom_path, "/machine/peripheral/vcpu1");
}
END_TEST

/* libvirt's vCPU id is its device alias; QEMU's cpu index may differ from it. */
START_TEST(test_vcpu_id_from_qom_path)
{
    g_autoptr(vpVcpuThreadEvent) hot = vpVcpuThreadEventParse(
        "{\"cpu-index\":2,\"qom-path\":\"/machine/peripheral/vcpu5\",\"thread-id\":7}", NULL);
    g_autoptr(vpVcpuThreadEvent) boot = vpVcpuThreadEventParse(
        "{\"cpu-index\":3,\"qom-path\":\"/machine/unattached/device[3]\",\"thread-id\":8}", NULL);
    g_autoptr(vpVcpuThreadEvent) odd = vpVcpuThreadEventParse(
        "{\"cpu-index\":4,\"qom-path\":\"/machine/peripheral/vcpux\",\"thread-id\":9}", NULL);

    ck_assert_int_eq(hot->vcpu, 5);
    ck_assert_int_eq(boot->vcpu, 3);
    ck_assert_int_eq(odd->vcpu, 4);
}
END_TEST

START_TEST(test_refusals_name_the_member)
{
    g_autofree char *none = refusal(NULL);
    g_autofree char *text = refusal("cpu 1");
    g_autofree char *array = refusal("[1]");
    g_autofree char *missing = refusal("{\"cpu-index\":1,\"qom-path\":\"/x\"}");
    g_autofree char *type = refusal("{\"cpu-index\":\"1\",\"qom-path\":\"/x\",\"thread-id\":2}");
    g_autofree char *zero = refusal("{\"cpu-index\":1,\"qom-path\":\"/x\",\"thread-id\":0}");
    g_autofree char *huge = refusal("{\"cpu-index\":99999,\"qom-path\":\"/x\",\"thread-id\":2}");
    g_autofree char *path = refusal("{\"cpu-index\":1,\"qom-path\":3,\"thread-id\":2}");

    ck_assert_str_eq(none, "VCPU_THREAD_CREATED: no data");
    ck_assert(g_str_has_prefix(text, "VCPU_THREAD_CREATED: data is not JSON: "));
    ck_assert_str_eq(array, "VCPU_THREAD_CREATED: data is not a JSON object");
    ck_assert_str_eq(missing, "VCPU_THREAD_CREATED: member 'thread-id' is missing, not a number");
    ck_assert_str_eq(type, "VCPU_THREAD_CREATED: member 'cpu-index' is of another type, not a "
                           "number");
    ck_assert_str_eq(zero, "VCPU_THREAD_CREATED: member 'thread-id' = 0 is not within "
                           "1..2147483647");
    ck_assert_str_eq(huge, "VCPU_THREAD_CREATED: member 'cpu-index' = 99999 is not within "
                           "0..16383");
    ck_assert_str_eq(path, "VCPU_THREAD_CREATED: member 'qom-path' is not a string");
}
END_TEST

Suite *
vpTestSuite(void)
{
    Suite *s = suite_create("qemuevents");
    TCase *tc = tcase_create("parse");

    tcase_add_test(tc, test_as_qemu_sends_it);
    tcase_add_test(tc, test_vcpu_id_from_qom_path);
    tcase_add_test(tc, test_refusals_name_the_member);
    suite_add_tcase(s, tc);
    return s;
}
