"""A QEMU process started for a test, with a QMP client over a Unix socket (stdlib only)."""

import json
import os
import socket
import subprocess
import tempfile
import time


class QmpError(Exception):
    pass


class Qmp:
    """A QMP client on a Unix socket; events are kept in the order they arrived."""

    # Bounds a hang (QEMU not starting, a reply never coming), not a measurement.
    TIMEOUT = 60

    def __init__(self, sock_path, alive=lambda: True):
        """alive: False once the QEMU behind the socket is known to have exited."""
        self.sock_path = sock_path
        self.alive = alive
        self.events = []
        self.sock = self._connect()
        self.file = self.sock.makefile("rwb")
        greeting = self._read()
        if "QMP" not in greeting:
            raise QmpError(f"no QMP greeting: {greeting}")
        self.cmd("qmp_capabilities")

    def _connect(self):
        deadline = time.monotonic() + self.TIMEOUT
        while True:
            if not self.alive():
                raise QmpError(self.exit_reason())
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(self.TIMEOUT)
                s.connect(self.sock_path)
                return s
            except (FileNotFoundError, ConnectionRefusedError):
                s.close()
                if time.monotonic() > deadline:
                    raise QmpError("QMP socket did not appear")
                time.sleep(0.05)

    def _read(self):
        line = self.file.readline()
        if not line:
            raise QmpError("QMP connection closed")
        return json.loads(line)

    def cmd(self, name, **args):
        """Run a command; events that arrive before its reply are appended to self.events."""
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.file.write(json.dumps(msg).encode() + b"\n")
        self.file.flush()
        while True:
            reply = self._read()
            if "event" in reply:
                self.events.append(reply)
            elif "error" in reply:
                raise QmpError(f"{name}: {reply['error']['desc']}")
            else:
                return reply["return"]

    def events_named(self, name):
        return [e for e in self.events if e["event"] == name]

    def exit_reason(self):
        return "QEMU exited"

    def qom_get(self, path, prop):
        return self.cmd("qom-get", path=path, property=prop)

    def vcpu_threads(self):
        """cpu-index -> (thread id, qom-path), from query-cpus-fast."""
        return {c["cpu-index"]: (c["thread-id"], c["qom-path"])
                for c in self.cmd("query-cpus-fast")}

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Qemu(Qmp):
    """QEMU started with -S and a QMP socket."""

    def __init__(self, prefix, args, main_cpus=None):
        """prefix: the QEMU binary, or a launcher command line ending in '--'."""
        self.dir = tempfile.TemporaryDirectory(prefix="vp-qemu-")
        sock_path = os.path.join(self.dir.name, "qmp.sock")
        cmd = prefix + ["-S", "-nodefaults", "-nographic", "-m", "64",
                        "-qmp", f"unix:{sock_path},server=on,wait=off"] + args
        self.cmdline = cmd
        preexec = (lambda: os.sched_setaffinity(0, main_cpus)) if main_cpus else None
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, preexec_fn=preexec)
        super().__init__(sock_path, alive=lambda: self.proc.poll() is None)

    def exit_reason(self):
        err = self.proc.stderr.read().decode(errors="replace")
        return f"QEMU exited with {self.proc.returncode}: {err.strip()}"

    def close(self):
        if self.proc.poll() is None:
            try:
                self.cmd("quit")
            except (QmpError, OSError):
                pass
            try:
                self.proc.wait(self.TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        super().close()
        self.proc.stdout.close()
        self.proc.stderr.close()
        self.dir.cleanup()


def run_qemu_expect_failure(prefix, args):
    """Start QEMU that must refuse its command line; returns (exit status, stderr)."""
    proc = subprocess.run(prefix + ["-S", "-nodefaults", "-nographic", "-m", "64"] + args,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=Qmp.TIMEOUT)
    return proc.returncode, proc.stderr


def cpus_allowed(tid):
    """A thread's affinity as the kernel reports it, e.g. '0-1'."""
    with open(f"/proc/{tid}/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    raise AssertionError(f"no Cpus_allowed_list for thread {tid}")


def thread_name(tid):
    with open(f"/proc/{tid}/comm") as f:
        return f.read().strip()
