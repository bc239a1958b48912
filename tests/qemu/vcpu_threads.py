#!/usr/bin/env python3
"""vCPU threads of the patched QEMU (qemu-patches/) and of stock Debian QEMU, checked on the
real binaries from /proc and QMP.

Usage: vcpu_threads.py NAME...   (a test class below, or Class.test_method; exit 77 when
       every test was skipped)

Environment: VP_QEMU the patched binary (scripts/build-qemu prints it), VP_STOCK_QEMU the
stock one (default /usr/bin/qemu-system-x86_64), VP_QEMU_CACHE_DIR the build's cache folder.

Each vCPU thread's affinity is read before the guest runs (QEMU starts with -S), and the
main thread runs on other CPUs than the thread contexts, so a thread that was moved only
after it was created, or not at all, shows the main thread's affinity instead.
"""

import ctypes
import errno
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qmp import Qemu, Qmp, QmpError, cpus_allowed, run_qemu_expect_failure, thread_name  # noqa: E402

CPU_MODEL = "qemu64"
CPU_TYPE = f"{CPU_MODEL}-x86_64-cpu"
EVENT = "VCPU_THREAD_CREATED"


def cpu_list(cpus):
    """Linux list form of a CPU set, as /proc shows it: {0, 1, 2, 5} -> '0-2,5'."""
    out, run = [], []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def host_cpu_sets(testcase):
    """(main, vcpu0, hotplug) CPU sets, pairwise different; skips below two usable CPUs."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        testcase.skipTest(f"needs two usable host CPUs, this process may use {allowed}")
    a, b = allowed[0], allowed[1]
    return {a}, {b}, {a, b}


def patched_qemu():
    path = os.environ.get("VP_QEMU")
    if not path:
        raise unittest.SkipTest("VP_QEMU not set (scripts/build-qemu prints the binary)")
    return path


def stock_qemu():
    path = os.environ.get("VP_STOCK_QEMU", "/usr/bin/qemu-system-x86_64")
    if not os.access(path, os.X_OK):
        raise unittest.SkipTest(f"stock QEMU {path} not installed")
    return path


def hotplug_slot(qemu):
    """Properties of the first CPU slot that query-hotpluggable-cpus lists as empty."""
    for slot in qemu.cmd("query-hotpluggable-cpus"):
        if "qom-path" not in slot:
            return slot["type"], slot["props"]
    raise AssertionError("no free CPU slot; -smp maxcpus must leave one")


# PR_SCHED_CORE from <linux/prctl.h>
PR_SCHED_CORE = 62
PR_SCHED_CORE_GET = 0
PR_SCHED_CORE_SCOPE_THREAD = 0
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                       ctypes.c_ulong]


def core_cookie(tid):
    """(cookie, 0) of a thread, or (None, errno) when the kernel refuses PR_SCHED_CORE."""
    cookie = ctypes.c_ulong(0)
    if libc.prctl(PR_SCHED_CORE, PR_SCHED_CORE_GET, tid, PR_SCHED_CORE_SCOPE_THREAD,
                  ctypes.addressof(cookie)):
        return None, ctypes.get_errno()
    return cookie.value, 0


class PlacementFlow:
    """Boot vCPU 0 through one thread context, hot-plug vCPU 1 through another."""

    accel = None  # -accel argument
    shared_thread = False  # round-robin TCG: one thread runs every vCPU
    thread_suffix = None

    def start(self, binary, extra):
        return Qemu([binary], ["-machine", "pc", "-accel", self.accel, "-cpu", CPU_MODEL,
                               "-smp", "1,maxcpus=2", "-name", "vm,debug-threads=on"] + extra,
                    main_cpus=self.main)

    def setUp(self):
        self.main, self.tc0, self.tc1 = host_cpu_sets(self)

    def test_vcpus_born_in_their_context(self):
        args = ["-object", f"thread-context,id=tc0,cpu-affinity={cpu_list(self.tc0)}",
                "-object", f"thread-context,id=tc1,cpu-affinity={cpu_list(self.tc1)}",
                "-global", f"{CPU_TYPE}.thread-context=tc0"]
        with self.start(patched_qemu(), args) as q:
            pid = q.proc.pid
            self.assertEqual(cpus_allowed(pid), cpu_list(self.main),
                             "main thread must keep the launcher's affinity")
            tid0, _ = q.vcpu_threads()[0]
            self.assertIn(self.thread_suffix, thread_name(tid0))
            self.assertEqual(cpus_allowed(tid0), cpu_list(self.tc0),
                             f"boot vCPU thread {tid0} not born with tc0's affinity")

            ctype, props = hotplug_slot(q)
            if self.shared_thread:
                self.check_other_context_refused(q, ctype, props)
                context = "tc0"
            else:
                context = "tc1"
            q.cmd("device_add", driver=ctype, id="cpu1", **{"thread-context": context}, **props)
            threads = q.vcpu_threads()
            self.assertIn(1, threads, "hot-plugged vCPU missing from query-cpus-fast")
            tid1, path1 = threads[1]
            self.assertEqual(path1, "/machine/peripheral/cpu1")

            # Sent before device_add's reply, so it is already in q.events.
            events = q.events_named(EVENT)
            self.assertEqual(len(events), 1, f"expected one {EVENT} for the hot-plugged vCPU, "
                             f"got {events}")
            self.assertEqual(events[0]["data"], {"cpu-index": 1, "qom-path": path1,
                                                 "type": ctype, "thread-id": tid1})

            if self.shared_thread:
                self.assertEqual(tid1, tid0, "round-robin TCG runs all vCPUs on one thread")
                self.assertEqual(cpus_allowed(tid1), cpu_list(self.tc0))
            else:
                self.assertNotEqual(tid1, tid0)
                self.assertEqual(cpus_allowed(tid1), cpu_list(self.tc1),
                                 f"hot-plugged vCPU thread {tid1} not born with tc1's affinity")

            q.cmd("cont")
            self.assertEqual(q.cmd("query-status")["status"], "running")
            self.assertEqual(cpus_allowed(tid0), cpu_list(self.tc0))

    def check_other_context_refused(self, q, ctype, props):
        """Round-robin TCG: a CPU with another context than the first's is refused, and
        leaves neither a CPU nor an event behind."""
        with self.assertRaisesRegex(
                QmpError, "thread-context 'tc1' cannot apply: round-robin TCG runs all vCPUs "
                "in one thread, created through the first vCPU's thread-context 'tc0'"):
            q.cmd("device_add", driver=ctype, id="cpu1", **{"thread-context": "tc1"}, **props)
        self.assertEqual(sorted(q.vcpu_threads()), [0], "the refused CPU must not exist")
        self.assertEqual(q.events_named(EVENT), [])

    def test_global_applies_to_device_add(self):
        """-global sets the default of every CPU of the type, hot-plugged ones included."""
        args = ["-object", f"thread-context,id=tc0,cpu-affinity={cpu_list(self.tc0)}",
                "-global", f"{CPU_TYPE}.thread-context=tc0"]
        with self.start(patched_qemu(), args) as q:
            ctype, props = hotplug_slot(q)
            q.cmd("device_add", driver=ctype, id="cpu1", **props)
            self.assertEqual(q.qom_get("/machine/peripheral/cpu1", "thread-context"),
                             "/objects/tc0")
            tid1, _ = q.vcpu_threads()[1]
            self.assertEqual(cpus_allowed(tid1), cpu_list(self.tc0),
                             f"vCPU thread {tid1} added without thread-context did not take "
                             "the -global one")
            self.assertNotEqual(cpus_allowed(tid1), cpu_list(self.main))

    def test_without_thread_context_vcpus_inherit_main(self):
        """The patched binary without the new properties behaves as before (plus the event)."""
        with self.start(patched_qemu(), []) as q:
            self.check_inherit_and_pin(q, expect_event=True)

    def test_stock_qemu(self):
        """Stock Debian QEMU: same flow, no event; external pinning in the -S window works."""
        with self.start(stock_qemu(), []) as q:
            self.check_inherit_and_pin(q, expect_event=False)

    def check_inherit_and_pin(self, q, expect_event):
        tid0, _ = q.vcpu_threads()[0]
        self.assertEqual(cpus_allowed(tid0), cpu_list(self.main))
        ctype, props = hotplug_slot(q)
        q.cmd("device_add", driver=ctype, id="cpu1", **props)
        tid1, path1 = q.vcpu_threads()[1]
        self.assertEqual(cpus_allowed(tid1), cpu_list(self.main))
        events = q.events_named(EVENT)
        if expect_event:
            self.assertEqual([e["data"] for e in events],
                             [{"cpu-index": 1, "qom-path": path1, "type": ctype,
                               "thread-id": tid1}])
        else:
            self.assertEqual(events, [])
        # What vcpuplace (through libvirt) does to a running QEMU: move the thread.
        os.sched_setaffinity(tid1, self.tc0)
        self.assertEqual(cpus_allowed(tid1), cpu_list(self.tc0))
        q.cmd("cont")
        self.assertEqual(q.cmd("query-status")["status"], "running")


class Mttcg(PlacementFlow, unittest.TestCase):
    accel = "tcg,thread=multi"
    thread_suffix = "/TCG"


class RoundRobinTcg(PlacementFlow, unittest.TestCase):
    accel = "tcg,thread=single"
    shared_thread = True
    thread_suffix = "ALL CPUs/TCG"


class Kvm(PlacementFlow, unittest.TestCase):
    accel = "kvm"
    thread_suffix = "/KVM"

    def setUp(self):
        super().setUp()
        if not os.access("/dev/kvm", os.R_OK | os.W_OK):
            self.skipTest("/dev/kvm not usable")
        # Whether this host's KVM creates vCPUs at all is asked of stock QEMU, so that a
        # patched binary failing with KVM fails the test instead of skipping it.
        try:
            Qemu([stock_qemu()], ["-machine", "pc", "-accel", "kvm", "-cpu", CPU_MODEL]).close()
        except QmpError as e:
            self.skipTest(f"stock QEMU cannot start a KVM guest here: {e}")


class Dummy(unittest.TestCase):
    """The dummy accelerator (qtest) creates its vCPU thread through the helper too."""

    def test_vcpu_born_in_context(self):
        main, tc0, _ = host_cpu_sets(self)
        args = ["-machine", "pc", "-accel", "qtest", "-cpu", CPU_MODEL,
                "-name", "vm,debug-threads=on",
                "-object", f"thread-context,id=tc0,cpu-affinity={cpu_list(tc0)}",
                "-global", f"{CPU_TYPE}.thread-context=tc0"]
        with Qemu([patched_qemu()], args, main_cpus=main) as q:
            tid0, _ = q.vcpu_threads()[0]
            self.assertIn("/DUMMY", thread_name(tid0))
            self.assertEqual(cpus_allowed(tid0), cpu_list(tc0))


class CoreSched(unittest.TestCase):
    """core-sched: cookies where the kernel has core scheduling, a clear error where not."""

    def test_core_sched_outcome_matches_kernel(self):
        _, err = core_cookie(0)
        args = ["-machine", "pc", "-accel", "tcg", "-cpu", CPU_MODEL, "-smp", "2",
                "-object", "thread-context,id=tc0,core-sched=on",
                "-object", "thread-context,id=tc1,core-sched-from=tc0",
                "-global", f"{CPU_TYPE}.thread-context=tc0"]
        if err in (errno.EINVAL, errno.ENODEV):
            expected = {errno.EINVAL: "Core scheduling not supported by this kernel",
                        errno.ENODEV: "Core scheduling not available: the host has no SMT"}[err]
            status, stderr = run_qemu_expect_failure([patched_qemu()], args)
            self.assertNotEqual(status, 0)
            self.assertIn(expected, stderr)
            return
        self.assertEqual(err, 0, f"PR_SCHED_CORE_GET failed: {os.strerror(err)}")
        with Qemu([patched_qemu()], args) as q:
            pid = q.proc.pid
            cookies = {i: core_cookie(tid)[0] for i, (tid, _) in q.vcpu_threads().items()}
            self.assertNotEqual(cookies[0], 0, "vCPU thread has no cookie")
            self.assertEqual(cookies[0], cookies[1])
            self.assertNotEqual(core_cookie(pid)[0], cookies[0],
                                "the cookie must stay with the context's threads")
            tc1 = q.cmd("qom-get", path="/objects/tc1", property="thread-id")
            self.assertEqual(core_cookie(tc1)[0], cookies[0], "core-sched-from did not share")

    def test_core_sched_from_needs_cookie(self):
        status, stderr = run_qemu_expect_failure(
            [patched_qemu()], ["-machine", "none", "-object", "thread-context,id=tc0",
                               "-object", "thread-context,id=tc1,core-sched-from=tc0"])
        self.assertNotEqual(status, 0)
        self.assertIn("Thread context 'tc0' has no core scheduling cookie", stderr)

    def test_core_sched_and_from_exclusive(self):
        status, stderr = run_qemu_expect_failure(
            [patched_qemu()],
            ["-machine", "none", "-object", "thread-context,id=tc0",
             "-object", "thread-context,id=tc1,core-sched=on,core-sched-from=tc0"])
        self.assertNotEqual(status, 0)
        self.assertIn("'core-sched' and 'core-sched-from' are mutually exclusive", stderr)

    def test_core_sched_fixed_after_creation(self):
        with Qemu([patched_qemu()], ["-machine", "none", "-object", "thread-context,id=tc0"]) as q:
            with self.assertRaisesRegex(QmpError, "can only be set at creation"):
                q.cmd("qom-set", path="/objects/tc0", property="core-sched", value=True)


class Daemonize(unittest.TestCase):
    """-daemonize: a context from -object would lose its thread in the fork and QEMU would
    hang; patch 6 refuses it. A context added by object-add after the fork works."""

    def qemu_args(self, sock):
        return ["-daemonize", "-display", "none", "-S", "-nodefaults", "-m", "64",
                "-machine", "pc", "-accel", "tcg", "-cpu", CPU_MODEL, "-smp", "1,maxcpus=2",
                "-name", "vm,debug-threads=on", "-qmp", f"unix:{sock},server=on,wait=off"]

    def test_command_line_context_refused(self):
        with tempfile.TemporaryDirectory(prefix="vp-qemu-") as tmp:
            # Without the fix this hangs: the timeout makes that a failure, not a stuck test.
            proc = subprocess.run(
                [patched_qemu()] + self.qemu_args(os.path.join(tmp, "qmp.sock")) +
                ["-object", "thread-context,id=tc0", "-global", f"{CPU_TYPE}.thread-context=tc0"],
                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=Qmp.TIMEOUT)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("-object thread-context (id 'tc0') cannot be used with -daemonize: its "
                      "thread would not survive the fork", proc.stderr)

    def test_object_add_after_fork_works(self):
        main, tc0, _ = host_cpu_sets(self)
        with tempfile.TemporaryDirectory(prefix="vp-qemu-") as tmp:
            sock, pidfile = os.path.join(tmp, "qmp.sock"), os.path.join(tmp, "qemu.pid")
            # The parent returns once the daemon is up.
            subprocess.run([patched_qemu()] + self.qemu_args(sock) + ["-pidfile", pidfile],
                           stdin=subprocess.DEVNULL, capture_output=True, check=True,
                           timeout=Qmp.TIMEOUT, preexec_fn=lambda: os.sched_setaffinity(0, main))
            with open(pidfile) as f:
                pid = int(f.read())
            try:
                with Qmp(sock, alive=lambda: running(pid)) as q:
                    q.cmd("object-add", **{"qom-type": "thread-context", "id": "tc0",
                                           "cpu-affinity": sorted(tc0)})
                    ctype, props = hotplug_slot(q)
                    q.cmd("device_add", driver=ctype, id="cpu1", **{"thread-context": "tc0"},
                          **props)
                    (event,) = q.events_named(EVENT)
                    tid1 = event["data"]["thread-id"]
                    self.assertEqual(cpus_allowed(tid1), cpu_list(tc0))
                    self.assertEqual(cpus_allowed(pid), cpu_list(main))
                    try:
                        q.cmd("quit")
                    except QmpError:
                        pass  # the connection may close before the reply
            finally:
                wait_gone(pid)


def running(pid):
    """Whether a process exists and has not exited (a zombie has: nobody may reap it here)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid):
    """Waits for a process that is not this one's child to exit; kills it after the timeout."""
    deadline = time.monotonic() + Qmp.TIMEOUT
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if running(pid):
        os.kill(pid, 9)


class Launch(unittest.TestCase):
    """scripts/qemu-launch: a plan in, QEMU's threads placed as the plan says."""

    def setUp(self):
        self.pu1, self.pu0, self.emulator = host_cpu_sets(self)
        self.launcher = os.path.join(os.environ["VP_TOPDIR"], "scripts", "qemu-launch")
        self.tmp = tempfile.TemporaryDirectory(prefix="vp-launch-")
        self.plan = os.path.join(self.tmp.name, "plan.json")
        (a,), (b,) = self.pu1, self.pu0
        # The fields `vcpuplace plan --json` prints that the launcher reads.
        with open(self.plan, "w") as f:
            json.dump({"domain": "vm", "policy": {"coresched": "vm"},
                       "vcpus": [{"vcpu": 0, "cpu": b}, {"vcpu": 1, "cpu": a}],
                       "emulator": cpu_list(self.emulator)}, f)

    def tearDown(self):
        self.tmp.cleanup()

    def launch(self, qemu, extra=()):
        prefix = [self.launcher, "--plan", self.plan, "--qemu", qemu, "--maxcpus", "3",
                  *extra, "--"]
        return Qemu(prefix, ["-machine", "pc", "-accel", "tcg"])

    def check_plan_applied(self, q):
        threads = q.vcpu_threads()
        self.assertEqual(sorted(threads), [0, 1], "the plan's two vCPUs boot")
        self.assertEqual(cpus_allowed(threads[0][0]), cpu_list(self.pu0))
        self.assertEqual(cpus_allowed(threads[1][0]), cpu_list(self.pu1))
        return threads

    def test_patched_vcpus_born_placed(self):
        with self.launch(patched_qemu()) as q:
            # exec'd: the launcher's pid is QEMU's main thread, on the emulator CPUs
            self.assertEqual(cpus_allowed(q.proc.pid), cpu_list(self.emulator))
            self.check_plan_applied(q)
            self.assertEqual(q.cmd("qom-get", path="/objects/vp-vcpu0",
                                   property="cpu-affinity"), sorted(self.pu0))
            # the printed hot-plug command for slot 2: socket 0, core 2 (1 x 3 x 1 topology)
            q.cmd("device_add", driver=CPU_TYPE, id="vp-vcpu2", **{"socket-id": 0,
                  "core-id": 2, "thread-id": 0, "thread-context": "vp-vcpu2"})
            (event,) = q.events_named(EVENT)
            self.assertEqual(event["data"]["cpu-index"], 2)
            self.assertEqual(cpus_allowed(event["data"]["thread-id"]), cpu_list(self.emulator),
                             "a slot without a PU keeps the emulator CPUs")

    def test_stock_vcpus_pinned_while_paused(self):
        with self.launch(stock_qemu()) as q:
            # QEMU (the launcher's child) is up before the launcher has pinned its threads
            for line in q.proc.stderr:
                if b"vCPU threads placed" in line:
                    break
            else:
                self.fail("the launcher exited without placing the vCPU threads")
            threads = self.check_plan_applied(q)
            self.assertEqual(q.cmd("query-status")["status"], "prelaunch",
                             "the launcher must not resume a guest started with -S")
            q.cmd("cont")
            self.assertEqual(cpus_allowed(threads[0][0]), cpu_list(self.pu0))

    def test_daemonize_refused(self):
        status, stderr = run_qemu_expect_failure(
            [self.launcher, "--plan", self.plan, "--qemu", patched_qemu(), "--"], ["-daemonize"])
        self.assertEqual(status, 1)
        self.assertIn("QEMU hangs when it forks after creating thread contexts", stderr)

    def test_cookie_follows_kernel(self):
        out = subprocess.run([self.launcher, "--plan", self.plan, "--qemu", patched_qemu(),
                              "--dry-run", "--"], capture_output=True, text=True, check=True)
        _, err = core_cookie(0)
        if err == 0:
            self.assertIn("core-sched=on", out.stdout)
            self.assertIn("core-sched-from=vp-vcpu0", out.stdout)
        else:
            self.assertNotIn("core-sched", out.stdout)
            self.assertIn("plan asks coresched=vm, no cookie:", out.stderr)

    def test_vcpuplace_plan(self):
        """End to end: `vcpuplace plan --json` for a domain on this host, then QEMU."""
        cli = os.path.join(os.environ.get("VP_BUILDDIR", ""), "plugin", "cli", "vcpuplace")
        if not os.access(cli, os.X_OK):
            self.skipTest(f"{cli} not built")
        domain = os.path.join(self.tmp.name, "domain.xml")
        with open(domain, "w") as f:
            f.write("<domain type='qemu'><name>vm</name><memory unit='MiB'>64</memory>"
                    "<vcpu placement='static'>2</vcpu><os><type arch='x86_64'>hvm</type></os>"
                    "</domain>")
        plan = subprocess.run([cli, "plan", "--json", domain], capture_output=True, text=True)
        if plan.returncode == 2:
            self.skipTest(f"vcpuplace refuses a 2-vCPU guest on this host: {plan.stderr}")
        self.assertEqual(plan.returncode, 0, plan.stderr)
        expected = json.loads(plan.stdout)
        prefix = [self.launcher, "--domain", domain, "--vcpuplace", cli, "--qemu",
                  patched_qemu(), "--"]
        with Qemu(prefix, ["-machine", "pc", "-accel", "tcg"]) as q:
            threads = q.vcpu_threads()
            for v in expected["vcpus"]:
                if v["cpu"] is not None:
                    self.assertEqual(cpus_allowed(threads[v["vcpu"]][0]), str(v["cpu"]))
            if expected["emulator"]:
                self.assertEqual(cpus_allowed(q.proc.pid),
                                 cpu_list(parse_list(expected["emulator"])))


def parse_list(text):
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


class Series(unittest.TestCase):
    """The series as built: every patch passes QEMU's checkpatch.pl."""

    def test_checkpatch_clean(self):
        folder = os.environ.get("VP_QEMU_CACHE_DIR")
        if not folder:
            self.skipTest("VP_QEMU_CACHE_DIR not set")
        with open(os.path.join(folder, "checkpatch.log")) as f:
            log = f.read()
        with open(os.path.join(os.environ["VP_TOPDIR"], "qemu-patches", "series")) as f:
            patches = [p.strip() for p in f if p.strip() and not p.startswith("#")]
        totals = [line for line in log.splitlines() if line.startswith("total:")]
        self.assertEqual(len(totals), len(patches), log)
        for line in totals:
            self.assertRegex(line, r"^total: 0 errors, 0 warnings,", log)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: vcpu_threads.py NAME...  (a class, or Class.test_method)")
    suite = unittest.defaultTestLoader.loadTestsFromNames(sys.argv[1:], sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun and len(result.skipped) == result.testsRun:
        sys.exit(77)


if __name__ == "__main__":
    main()
