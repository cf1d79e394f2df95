"""The sandbox contains code by OS isolation (issue 11 §1): every attack below really runs, and each
test checks both that the attack failed and that the lab is unharmed.

Most attacks first switch off the in-process audit hook (``DISARM``: find the hook with ``gc`` and empty
its closure), and prove it is off (``os.chdir``, which the hook refuses, then succeeds), so what stops
them is bubblewrap, not the hook.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lab.sandbox as sbmod
from lab import agentic
from lab.agentic import Action, code_agent_trace
from lab.rlvr import UnitTestVerifier
from lab.sandbox import Sandbox, SandboxUnavailable, bwrap_status


PROJECT = Path(__file__).resolve().parents[1]
BWRAP_OK, BWRAP_WHY = bwrap_status()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK and os.environ.get("CI") != "true",
                                 reason=f"bubblewrap unavailable here ({BWRAP_WHY}); ./lab.sh setup installs it as root")

DISARM = '''
import gc, os, sys
for _f in gc.get_objects():
    if type(_f).__name__ == "function" and _f.__name__ == "hook" and _f.__closure__:
        for _c in _f.__closure__:
            if isinstance(_c.cell_contents, set):
                _c.cell_contents.clear()
            elif callable(_c.cell_contents):
                _c.cell_contents = lambda p: True
os.chdir(os.getcwd())  # refused by the hook while it is on
print("GUARD-OFF", flush=True)
'''


def attack(code: str, **kw) -> "sbmod.SandboxResult":
    """Run ``code`` with the hook off; afterwards nothing started by the call may be alive."""
    kw.setdefault("timeout_s", 5)
    with Sandbox(**kw) as sb:
        r = sb.run_python(DISARM + code)
        root = str(sb.root)  # in the command line of bwrap and of every process in the sandbox
    assert "GUARD-OFF" in r.stdout, r.stderr  # the hook really was off: the OS layer did the containing
    for _ in range(20):  # SIGKILLed processes may take a moment to be reaped
        if not _alive_with(root):
            break
        time.sleep(0.05)
    assert _alive_with(root) == [], "a process from the sandbox outlived the call"
    return r


def outside_targets(tmp_path: Path) -> list[Path]:
    """Places the sandbox must not write: the project, the caller's temp dir, /root, /home."""
    tag = uuid.uuid4().hex[:8]
    return [PROJECT / f"escape-{tag}.txt", tmp_path / f"escape-{tag}.txt", Path(f"/root/escape-{tag}.txt"), Path(f"/home/escape-{tag}.txt")]


def assert_absent(paths):
    for p in paths:
        assert not p.exists(), f"the sandbox created {p}"


# ----------------------------------------------------------------------------- the attacks of issue 11 §1


@needs_bwrap
def test_disarmed_guard_cannot_write_outside_or_spawn_a_shell(tmp_path):
    targets = outside_targets(tmp_path)
    code = f"targets = {[str(t) for t in targets]!r}\n" + '''
import subprocess
for t in targets:
    try:
        open(t, "w").write("x"); print("WROTE", t)
    except OSError as e:
        print("no write", t, type(e).__name__)
for argv in (["/bin/sh", "-c", "touch " + targets[0]], ["sh", "-c", "id"]):
    try:
        subprocess.run(argv); print("SPAWNED", argv[0])
    except OSError as e:
        print("no shell", type(e).__name__)
print("system:", os.system("touch " + targets[1]))
'''
    r = attack(code)
    assert "WROTE" not in r.stdout and "SPAWNED" not in r.stdout, r.stdout
    assert r.stdout.count("no write") == 4 and "system: 32512" in r.stdout  # /bin/sh does not exist in there
    assert_absent(targets)


@needs_bwrap
def test_posixsubprocess_fork_exec_is_contained(tmp_path):
    """``_posixsubprocess.fork_exec`` raises no audit event: with the hook still ON it starts a process."""
    target = tmp_path / "forked.txt"
    child = f"open('forked-proof.txt', 'w').write('ran'); open({str(target)!r}, 'w').write('x')"
    code = f'''
import _posixsubprocess, os, sys
r, w = os.pipe()
pid = _posixsubprocess.fork_exec([sys.executable, "-I", "-c", {child!r}], [os.fsencode(sys.executable)], True, (), None, None,
                                 -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None, -1, None, True)
os.close(w)
print("child exit", os.waitpid(pid, 0)[1])
'''
    with Sandbox(timeout_s=5) as sb:
        r = sb.run_python(code)
        proof = (sb.root / "forked-proof.txt").exists()
    assert proof, r.stdout + r.stderr  # the bypass really ran a process ...
    assert "child exit 256" in r.stdout  # ... whose write outside failed
    assert not target.exists()


@needs_bwrap
def test_dir_fd_and_rename_dst_dir_fd_are_contained(tmp_path):
    targets = outside_targets(tmp_path)
    code = f"dirs = {[str(t.parent) for t in targets] + ['/']!r}\n" + '''
open("a.txt", "w").write("a")
for d in dirs:
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        print("no dir", d, type(e).__name__); continue
    for how in ("open", "rename"):
        try:
            if how == "open":
                os.close(os.open("escape-dirfd.txt", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
            else:
                os.rename("a.txt", "escape-rename.txt", dst_dir_fd=fd)
            print("ESCAPED", how, d)
        except OSError as e:
            print("refused", how, d, type(e).__name__)
'''
    r = attack(code)
    assert "ESCAPED" not in r.stdout, r.stdout
    for t in targets:
        assert not (t.parent / "escape-dirfd.txt").exists() and not (t.parent / "escape-rename.txt").exists()


@needs_bwrap
def test_sqlite_and_mkfifo_outside_are_contained(tmp_path):
    targets = outside_targets(tmp_path)
    code = f"targets = {[str(t) for t in targets]!r}\n" + '''
import sqlite3
for t in targets:
    try:
        c = sqlite3.connect(t + ".db"); c.execute("create table x (a)"); c.commit(); print("DB", t)
    except Exception as e:
        print("no db", type(e).__name__)
    try:
        os.mkfifo(t + ".fifo"); print("FIFO", t)
    except OSError as e:
        print("no fifo", type(e).__name__)
'''
    r = attack(code)
    assert "DB " not in r.stdout and "FIFO" not in r.stdout, r.stdout
    assert_absent([Path(str(t) + ".db") for t in targets] + [Path(str(t) + ".fifo") for t in targets])


@needs_bwrap
def test_signals_cannot_reach_the_lab():
    """kill / pidfd_send_signal on the owning process (its pid passed in), and kill(-1)."""
    sentinel = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        code = f"owner, sentinel = {os.getpid()}, {sentinel.pid}\n" + '''
import signal
for pid in (owner, sentinel, os.getppid()):
    for how in ("kill", "pidfd"):
        try:
            if how == "kill":
                os.kill(pid, signal.SIGKILL)
            else:
                signal.pidfd_send_signal(os.pidfd_open(pid), signal.SIGKILL)
            print("SIGNALLED", how, pid)
        except OSError as e:
            print("refused", how, pid, type(e).__name__)
'''
        r = attack(code)
        assert sentinel.poll() is None  # the lab's other process lives
        assert f"SIGNALLED kill {os.getpid()}" not in r.stdout and f"SIGNALLED pidfd {os.getpid()}" not in r.stdout
        assert f"SIGNALLED kill {sentinel.pid}" not in r.stdout
        # kill(-1): every process this user may signal
        r2 = attack("import signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError as e:\n    print(type(e).__name__)\n")
        assert r2.status in ("killed", "ok", "error") and sentinel.poll() is None
    finally:
        sentinel.kill()
        sentinel.wait()


def _alive_with(marker: str) -> list[int]:
    pids = []
    for p in os.listdir("/proc"):
        if p.isdigit() and int(p) != os.getpid():
            try:
                if marker.encode() in Path(f"/proc/{p}/cmdline").read_bytes():
                    pids.append(int(p))
            except OSError:
                pass
    return pids


@needs_bwrap
def test_the_liveness_check_sees_a_running_sandbox():
    """Positive control for ``_alive_with(root)``: while a call runs, its processes are found."""
    with Sandbox(timeout_s=5) as sb:
        root, seen = str(sb.root), []
        th = threading.Thread(target=lambda: sb.run_python(DISARM + "import time\nif os.fork() == 0:\n    os.setsid()\ntime.sleep(1.5)\n"))
        th.start()
        for _ in range(40):
            time.sleep(0.05)
            seen = _alive_with(root)
            if len(seen) >= 4:  # bwrap, its init, the action, the forked child
                break
        th.join()
    assert len(seen) >= 4, seen


@needs_bwrap
def test_setsid_daemons_and_children_do_not_outlive_the_call():
    mark = f"lab-daemon-{uuid.uuid4().hex}"
    code = f"MARK = {mark!r}\n" + '''
import subprocess, time
for i in range(3):  # a double-forked setsid daemon, a plain child, a new-session child
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)  # " + MARK])
        os._exit(0)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)  # " + MARK])
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)  # " + MARK], start_new_session=True)
time.sleep(0.5)
print("spawned")
'''
    r = attack(code)
    assert "spawned" in r.stdout and r.status == "ok"
    time.sleep(0.3)
    assert _alive_with(mark) == []


@needs_bwrap
def test_daemon_holding_stdout_does_not_stretch_the_timeout():
    daemon = '''
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import time
        while True:
            time.sleep(1)
    os._exit(0)
'''
    t0 = time.perf_counter()
    r = attack(daemon + "print('main exits')\n", timeout_s=3)
    assert r.status == "ok" and time.perf_counter() - t0 < 2.5  # main exits: the namespace ends at once
    t0 = time.perf_counter()
    r = attack(daemon + "while True:\n    pass\n", timeout_s=3)
    took = time.perf_counter() - t0
    assert r.status == "timeout" and 2.9 < took < 4.5, took


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@needs_bwrap
@pytest.mark.parametrize("program,timeout", [("import sys\nsys.stdout.write('x' * 100_000_000)\n", 20),
                                             ("import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n", 3)])
def test_a_flood_of_output_keeps_the_callers_memory_bounded(program, timeout):
    peak, stop = [_rss_mb()], threading.Event()

    def sample():
        while not stop.is_set():
            peak.append(_rss_mb())
            time.sleep(0.005)

    before = _rss_mb()
    th = threading.Thread(target=sample)
    th.start()
    try:
        with Sandbox(timeout_s=timeout, memory_mb=512, max_output_bytes=20_000) as sb:
            r = sb.run_python(program)
    finally:
        stop.set()
        th.join()
    assert max(peak) - before < 20, (before, max(peak))
    assert len(r.stdout) == 20_000 and r.evidence["output_truncated"]
    assert r.output_bytes >= (100_000_000 if timeout == 20 else 1_000_000)
    assert r.status == ("ok" if timeout == 20 else "timeout")


@needs_bwrap
def test_nothing_is_left_in_the_shared_tmp():
    name = f"lab-escape-{uuid.uuid4().hex}"
    r = attack(f"import tempfile\nopen('/tmp/{name}', 'w').write('x')\nos.mkdir('/tmp/{name}.d')\n"
               f"print('private tmp holds', sorted(x for x in os.listdir('/tmp') if x.startswith('lab-escape')))\n")
    assert f"private tmp holds ['{name}', '{name}.d']" in r.stdout  # the write worked, in a private tmpfs
    assert not Path(f"/tmp/{name}").exists() and not Path(f"/tmp/{name}.d").exists()
    sb = Sandbox()
    root = sb.reset()
    sb.run_python("open('left.txt', 'w').write('x')\nimport os\nos.mkdir('d')\nos.chmod('d', 0)\n")
    sb.close()
    assert not root.exists()


@needs_bwrap
def test_parent_environment_is_unreadable(monkeypatch):
    secret = f"lab-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("LAB_TEST_SECRET", secret)
    code = f"owner = {os.getpid()}\n" + '''
seen = []
for pid in [owner, os.getppid(), 1] + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    try:
        seen.append(open(f"/proc/{pid}/environ", "rb").read().decode("latin-1"))
    except OSError as e:
        print("no environ", pid, type(e).__name__)
print("ENV", seen, dict(os.environ))
print("pids visible", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
'''
    r = attack(code)
    assert secret not in r.stdout and "ENV" in r.stdout
    assert f"no environ {os.getpid()}" in r.stdout  # the owner is not even in this PID namespace
    assert max(json.loads(r.stdout.split("pids visible")[1].strip())) < 10


@needs_bwrap
def test_no_tcp_or_udp_to_localhost():
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.5)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(1)
    tcp.settimeout(0.5)
    try:
        code = f"up, tp = {udp.getsockname()[1]}, {tcp.getsockname()[1]}\n" + '''
import socket
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"hello", ("127.0.0.1", up)); print("UDP SENT")
except OSError as e:
    print("udp refused", type(e).__name__)
try:
    socket.create_connection(("127.0.0.1", tp), timeout=2); print("TCP CONNECTED")
except OSError as e:
    print("tcp refused", type(e).__name__)
try:
    socket.getaddrinfo("example.com", 80); print("DNS")
except OSError as e:
    print("dns refused", type(e).__name__)
'''
        r = attack(code)
        # a datagram may leave into the sandbox's own loopback (nobody listens there); none reaches the host
        assert "TCP CONNECTED" not in r.stdout and "DNS\n" not in r.stdout and "tcp refused" in r.stdout, r.stdout
        with pytest.raises(socket.timeout):
            udp.recvfrom(100)
        with pytest.raises(socket.timeout):
            tcp.accept()
    finally:
        udp.close()
        tcp.close()


@needs_bwrap
def test_root_project_and_home_are_unreadable():
    host_root = sorted(x for x in os.listdir("/root") if x != ".pyenv")
    probe = next((f"/root/{x}" for x in host_root if os.path.isfile(f"/root/{x}")), None)
    code = f"paths = {[str(PROJECT / 'README.md'), str(PROJECT), '/home', '/work', probe]!r}\n" + '''
for p in paths:
    if p is None:
        continue
    try:
        print("READ", p, os.listdir(p) if os.path.isdir(p) else open(p).read()[:50])
    except OSError as e:
        print("refused", p, type(e).__name__)
import json
print("ROOT LISTING", json.dumps(os.listdir("/root")))
'''
    r = attack(code)
    assert "\nREAD " not in r.stdout and r.stdout.count("refused") >= 4, r.stdout
    listing = json.loads(r.stdout.split("ROOT LISTING")[1])
    assert set(listing) <= {".pyenv"}  # only the path to the Python installation is there


@needs_bwrap
def test_process_count_is_limited():
    code = '''
import time
n = 0
for i in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    n += 1
print("forked", n)
'''
    r = attack(code, max_processes=16, timeout_s=5)
    assert int(r.stdout.split("forked")[1]) < 16


# ----------------------------------------------------------------------------- verifier spoofing


SQUARE_TESTS = "from solution import f\ngot = f(3)\nassert type(got) is int and got == 9, f'expected 9, got {got!r}'\nprint('1 passed')\n"
SPOOFS = {
    "print-and-exit": "print('1 passed')\nimport os, sys\nsys.stdout.flush()\nos._exit(0)\n",
    "eq-always-true": "class Yes(int):\n    def __eq__(self, o):\n        return True\n    __hash__ = int.__hash__\n"
                      "class Any:\n    def __eq__(self, o):\n        return True\ndef f(x):\n    return Any()\n",
    "int-subclass": "class Yes(int):\n    def __eq__(self, o):\n        return True\ndef f(x):\n    return Yes(4)\n",
    "exit-in-call": "import os\ndef f(x):\n    print('1 passed', flush=True)\n    os._exit(0)\n",
    "kill-the-harness": "import os, signal\ndef f(x):\n    os.kill(os.getppid(), signal.SIGKILL)\n",
    "forge-record": "import os\ndef f(x):\n    for fd in range(3, 64):\n        try:\n            os.write(fd, b'{\"complete\": true, \"passed\": 1, \"failed\": 0}')\n        except OSError:\n            pass\n"
                    "    forged = b'{\"complete\": true, \"passed\": 1, \"failed\": 0, \"tests\": []}'\n"
                    "    for p in os.listdir('/proc'):\n        for n in range(3, 32):\n            try:\n"
                    "                fd = os.open(f'/proc/{p}/fd/{n}', os.O_WRONLY)\n                os.write(fd, forged)\n                print('FORGED into', p, n)\n"
                    "            except OSError:\n                pass\n"
                    "    os.kill(os.getppid(), 9)\n    return 4\n",
    "read-the-tests": "import os\ndef f(x):\n    return 9 if os.path.exists('test_solution.py') else 4\n",
}


@needs_bwrap
@pytest.mark.parametrize("name", sorted(SPOOFS))
def test_verifier_spoofs_score_zero(name):
    v = UnitTestVerifier(Sandbox(timeout_s=5))
    e = v.verify("square", DISARM + SPOOFS[name], tests=SQUARE_TESTS)  # the hook is off in the candidate's process too
    assert e.decision == 0, (name, e.output)
    assert e.output["tests"]["verified"] is False


@needs_bwrap
def test_verifier_still_rewards_a_correct_solution():
    v = UnitTestVerifier(Sandbox(timeout_s=5))
    e = v.verify("square", "def f(x):\n    print('computing')\n    return x * x\n", tests=SQUARE_TESTS)
    assert e.decision == 1 and e.output["tests"]["passed"] == 1 and e.output["tests"]["record"] == "valid"
    assert "computing" in e.output["log"] and e.output["sandbox"]["isolation"] == "bwrap"
    assert e.output["tests"]["harness_dumpable"] is False  # same-uid processes cannot reach its record pipe


@needs_bwrap
def test_harness_counts_test_functions_and_carries_plain_data():
    tests = '''
import solution
from solution import f, g, K
def test_values():
    assert type(f(3)) is int and f(3) == 9
def test_types():
    assert g() == (1, 2.5, "s", b"b", None, True, [1], {"a": {1, 2}}, frozenset({3}))
    assert type(g()[0]) is int and type(g()[-1]) is frozenset
def test_errors():
    try:
        f("x")
    except TypeError as e:
        assert "can't multiply" in str(e) or "unsupported" in str(e) or "str" in str(e)
    else:
        raise AssertionError("no TypeError")
def test_constant():
    assert K == {"k": [1, 2]}
def test_fails():
    assert f(2) == 5
'''
    sol = ("K = {'k': [1, 2]}\ndef f(x):\n    return x * x if isinstance(x, int) else x - x\n"
           "def g():\n    return (1, 2.5, 's', b'b', None, True, [1], {'a': {1, 2}}, frozenset({3}))\n")
    with Sandbox(timeout_s=5) as sb:
        sb.reset({"solution.py": sol})
        r = sb.run_tests(tests)
    t = r.evidence["tests"]
    assert t["record"] == "valid" and t["passed"] == 4 and t["failed"] == 1 and not sbmod.tests_verified(r)
    assert [x["name"] for x in t["results"] if x["outcome"] == "failed"] == ["test_fails"]
    assert r.status == "error" and r.exit_code == 1


@needs_bwrap
def test_code_agent_trace_uses_the_harness():
    t = code_agent_trace()
    runs = [s.result for s in t.steps if s.action.tool == "run_tests"]
    assert [sbmod.tests_verified(x) for x in runs] == [False, True] and [agentic.tests_passed(x) for x in runs] == [False, True]
    assert t.success
    with Sandbox(timeout_s=5) as sb:  # an agent that prints success and exits does not pass
        sb.execute(Action("write", "test_solution.py\nfrom solution import add_squares\nassert add_squares(0, 3) == 9\nprint('1 passed')\n"))
        sb.execute(Action("write", "solution.py\nprint('1 passed')\nimport os, sys\nsys.stdout.flush()\nos._exit(0)\n"))
        r = sb.execute(Action("run_tests", "test_solution.py"))
    assert "1 passed" in r.stdout and not agentic.tests_passed(r) and not sbmod.tests_verified(r)


@needs_bwrap
def test_lab_never_follows_links_or_blocks_on_fifos_the_code_left(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    with Sandbox(timeout_s=5) as sb:
        r = sb.run_python(DISARM + f"os.symlink({str(secret)!r}, 'test_solution.py')\nos.mkfifo('fifo.py')\n")
        assert r.status == "ok"
        res = sb.execute(Action("run_tests", "test_solution.py"))
        assert res.status == "error" and "do not read" not in res.stderr
        assert sb.execute(Action("run_tests", "fifo.py")).status == "error"  # returns, does not hang
        assert sb.execute(Action("write", "fifo.py\nx = 1")).status == "denied"
    assert secret.read_text() == "do not read"


# ----------------------------------------------------------------------------- declared modes and bad input


def test_bad_arguments_name_themselves():
    for kw, name in [({"timeout_s": 0}, "timeout_s"), ({"timeout_s": float("inf")}, "timeout_s"), ({"timeout_s": True}, "timeout_s"),
                     ({"memory_mb": 10}, "memory_mb"), ({"memory_mb": 100.5}, "memory_mb"), ({"max_output_bytes": 0}, "max_output_bytes"),
                     ({"isolation": "docker"}, "isolation"), ({"cpu_s": 0}, "cpu_s"), ({"max_processes": 1}, "max_processes"),
                     ({"max_file_mb": "big"}, "max_file_mb")]:
        with pytest.raises(ValueError, match=name):
            Sandbox(**kw)
    with Sandbox(isolation="process") as sb:
        with pytest.raises(ValueError, match="module"):
            sb.run_tests("pass", module="not-a-name")
        with pytest.raises(ValueError, match="tests"):
            sb.run_tests(b"pass")
        with pytest.raises(ValueError, match="source"):
            sb.run_python(None)
        with pytest.raises(PermissionError):
            sb._path("../x")


def test_without_bwrap_the_sandbox_refuses_and_names_the_package(monkeypatch):
    """bwrap's absence is simulated by the probe's cached answer; the weaker mode must be asked for."""
    monkeypatch.setitem(sbmod._PROBE, os.geteuid(), (False, "the bwrap command is not installed"))
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        Sandbox()
    with Sandbox(isolation="process", timeout_s=2) as sb:
        r = sb.run_python("print('hi')")
        assert r.status == "ok" and r.stdout == "hi\n"
        assert r.evidence["sandbox"]["isolation"] == "process" and "bypassable" in r.evidence["sandbox"]["writes"]
        assert sb.run_python("while True: pass").status == "timeout"
        sb.reset({"solution.py": "def f(x):\n    return x * x\n"})
        assert sbmod.tests_verified(sb.run_tests(SQUARE_TESTS))


@needs_bwrap
@pytest.mark.parametrize("n", [0, 1, 19_999, 20_000, 20_001, 65_536, 65_537])
def test_output_cap_at_its_edges(n):
    with Sandbox(timeout_s=5, max_output_bytes=20_000) as sb:
        r = sb.run_python(f"import sys\nsys.stdout.write('z' * {n})\n")
    assert r.status == "ok" and len(r.stdout) == min(n, 20_000) and r.output_bytes == n
    assert r.evidence["output_truncated"] == (n > 20_000)


@needs_bwrap
def test_evidence_declares_the_isolation():
    with Sandbox(timeout_s=5) as sb:
        d = sb.describe()
        r = sb.run_python("print(1)")
    assert r.evidence["sandbox"] == d and d["isolation"] == "bwrap" and {"pid", "net", "ipc", "uts"} <= set(d["namespaces"])
    assert d["writes"] == "sandbox-directory-only" and d["version"] == sbmod.SANDBOX_VERSION
    if os.geteuid() == 0:
        assert d["user"].startswith("nobody")


# ----------------------------------------------------------------------------- the wire format (pure, no sandbox)

_WIRE_NS: dict = {"json": json, "os": os}
exec(sbmod._WIRE, _WIRE_NS)
_enc, _dec = _WIRE_NS["_enc"], _WIRE_NS["_dec"]

plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | st.binary(),
    lambda kids: st.lists(kids, max_size=4) | st.lists(kids, max_size=4).map(tuple)
    | st.dictionaries(st.text(max_size=5) | st.integers(), kids, max_size=4)
    | st.frozensets(st.integers() | st.text(max_size=3), max_size=4),
    max_leaves=20,
)


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float):
        return a.hex() == b.hex()
    return a == b


@settings(max_examples=300, deadline=None)
@given(plain)
def test_wire_roundtrip_keeps_values_and_exact_types(x):
    assert _same(_dec(json.loads(json.dumps(_enc(x)))), x)


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda k: st.lists(k, max_size=3) | st.dictionaries(st.text(max_size=3), k, max_size=3), max_leaves=10))
def test_wire_decoder_accepts_only_its_format(junk):
    """Whatever a hostile process sends decodes to plain built-ins or raises ValueError, nothing else."""
    try:
        v = _dec(junk)
    except ValueError:
        return
    assert _same(_dec(json.loads(json.dumps(_enc(v)))), v)


def test_wire_edges():
    for x in [float("nan"), float("inf"), -0.0, 5e-324, 2**4000, -(2**64), True, 1, b"", "", (), frozenset()]:
        y = _dec(json.loads(json.dumps(_enc(x))))
        assert type(y) is type(x) and (y != y if x != x else repr(y) == repr(x))
    deep = []
    for _ in range(64):
        deep = [deep]
    assert _dec(_enc(deep)) == deep
    with pytest.raises(ValueError, match="64"):
        _enc([deep])
    with pytest.raises(TypeError, match="cannot cross"):
        _enc(object())

    class Sneaky(int):
        pass

    with pytest.raises(TypeError, match="Sneaky"):
        _enc(Sneaky(3))
    for junk in (["i", "1" * 5000], ["i", "x"], ["f", "0x1p99999"], ["y", "z"], ["b", 1], ["x", 1], [], "s",
                 ["d", [[["s", "a"]]]], ["d", [[["l", []], ["N"]]]], ["S", [["l", []]]], ["N", 1]):
        with pytest.raises(ValueError):
            _dec(junk)


def test_agentic_page_without_bwrap_shows_the_message_not_a_traceback(monkeypatch):
    """The page's two sandbox buttons on a machine without bwrap (simulated by the probe's cached answer)."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setitem(sbmod._PROBE, os.geteuid(), (False, "the bwrap command is not installed"))
    at = AppTest.from_file(str(PROJECT / "pages" / "agentic.py"), default_timeout=60).run()
    for key in ("ag_run_trace", "ag_run_rounds"):
        at.button(key=key).click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert any("bubblewrap" in e.value for e in at.error)
    assert len(at.dataframe) == 0 or all("round" not in str(d.value.columns) for d in at.dataframe)


SYSTEM_PY = "/usr/bin/python3"


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(SYSTEM_PY) or not os.path.exists("/usr/bin/setpriv"),
                    reason="needs root, setpriv and a system python3 to act as an unprivileged lab")
def test_unprivileged_lab_uses_a_user_namespace():
    """The lab run by an ordinary user (here nobody, with the system Python; lab.sandbox is stdlib-only):
    bwrap makes a user namespace, RLIMIT_NPROC counts, and the attacks are contained the same way."""
    import tempfile

    shared = tempfile.mkdtemp(prefix="lab-unpriv-")
    os.chmod(shared, 0o777)
    mark = uuid.uuid4().hex
    target = os.path.join(shared, "escape.txt")
    attack_code = DISARM + f'''
try:
    open({target!r}, "w").write("x"); print("WROTE")
except OSError as e:
    print("no write", type(e).__name__)
n = 0
for i in range(100):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.setsid()
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)  # {mark}"])
    n += 1
print("forked", n)
'''
    driver = f'''
import json, sys
sys.path.insert(0, {str(PROJECT)!r})
from lab.sandbox import Sandbox
with Sandbox(timeout_s=5, max_processes=8) as sb:
    r = sb.run_python({attack_code!r})
    sb._write("solution.py", "def f(x):\\n    return x * x\\n")
    t = sb.run_tests("from solution import f\\nassert type(f(3)) is int and f(3) == 9\\n")
    print(json.dumps({{"user": sb.describe()["user"], "status": r.status, "out": r.stdout, "verified": t.evidence["tests"]["verified"]}}))
'''
    try:
        p = subprocess.run(["/usr/bin/setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", SYSTEM_PY, "-I", "-c", driver],
                           env={"PATH": "/usr/bin:/bin", "HOME": shared}, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        res = json.loads(p.stdout.strip().splitlines()[-1])
        assert res["user"] == "uid 65534 in a user namespace" and res["verified"] is True
        assert "GUARD-OFF" in res["out"] and "WROTE" not in res["out"] and int(res["out"].split("forked")[1]) < 32  # 8 + the uid's other tasks (other sandboxes run as nobody too)
        time.sleep(0.3)
        assert _alive_with(mark) == [] and not os.path.exists(target)
    finally:
        import shutil

        shutil.rmtree(shared, ignore_errors=True)


def _result(status, tests=None):
    ev = {"sandbox": {}, "status": status}
    if tests is not None:
        ev["tests"] = tests
    return sbmod.SandboxResult(status, 0 if status == "ok" else 1, "3 passed", "", 0.1, 8, ev)


def test_tests_verified_reads_only_the_record():
    assert sbmod.tests_verified(_result("ok", {"verified": True}))
    for r in (_result("ok"), _result("ok", {"verified": False}), _result("ok", {"verified": 1}), _result("error", {"verified": True}),
              _result("timeout", {"verified": True}), _result("ok", "verified")):
        assert not sbmod.tests_verified(r)  # stdout says "3 passed" in every one of them


@needs_bwrap
@settings(max_examples=12, deadline=None)
@given(st.binary(max_size=3000), st.integers(1, 2000))
def test_stdout_bytes_arrive_exactly_up_to_the_cap(data, cap):
    with Sandbox(timeout_s=10, max_output_bytes=cap) as sb:
        sb._write("payload.bin", data.hex())
        r = sb.run_python("import sys\nsys.stdout.buffer.write(bytes.fromhex(open('payload.bin').read()))\n")
    assert r.status == "ok" and r.output_bytes == len(data)
    assert r.stdout == data[:cap].decode("utf-8", "replace")


@needs_bwrap
@pytest.mark.parametrize("timeout", [0.001, 0.05])
def test_tiny_timeouts_end_at_once(timeout):
    t0 = time.perf_counter()
    with Sandbox(timeout_s=timeout) as sb:
        r = sb.run_python("import time\ntime.sleep(10)\n")
    assert r.status == "timeout" and time.perf_counter() - t0 < 2.0


@needs_bwrap
@pytest.mark.parametrize("memory_mb", [64, 80, 128])
def test_small_memory_limits_fail_cleanly(memory_mb):
    """Near the interpreter's own needs: the action either runs or reports ``memory``/``error``, never hangs."""
    with Sandbox(timeout_s=5, memory_mb=memory_mb) as sb:
        r = sb.run_python("print('hi')\nx = bytearray(40 << 20)\nprint(len(x))\n")
    assert r.status in ("ok", "memory", "error", "killed") and r.seconds < 5
    if r.status == "ok":
        assert r.stdout == f"hi\n{40 << 20}\n"
