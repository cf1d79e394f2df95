"""A sandbox that contains code by operating-system isolation, and a test harness it cannot fool.

Reference: sandbox ftip-004S and its restrictions ftip-004T (a sandbox's semantics are part of the
trajectory law, so every evidence record states them); test evidence ftip-004A (the verifier's
decision comes from a record the candidate cannot write).

Isolation (``isolation="bwrap"``, the default) is bubblewrap (``bwrap``, Debian package ``bubblewrap``):

- new PID, network, IPC and UTS namespaces (plus a user namespace when the lab is not root); when the
  lab runs as root it instead drops the child to ``nobody`` (uid 65534) with no capabilities, because a
  root user namespace would still be uid 0 to the kernel (exempt from ``RLIMIT_NPROC``);
- a filesystem built from nothing: read-only binds of ``/usr/lib``, ``/usr/lib64``, ``/etc/ld.so.cache``
  and the Python installation itself, a fresh ``/proc`` and ``/dev``, a private tmpfs ``/tmp``, and the
  sandbox directory (a fresh temporary directory the lab makes) as the only writable bind. ``/root``,
  ``/home``, the project and the runs directory are not there; neither is a shell;
- an empty environment, ``--new-session``, ``--die-with-parent``; rlimits on address space, processes,
  file size, CPU time and core dumps;
- the whole process tree ends when the call ends: when the action's main process exits, the PID
  namespace's init exits and the kernel kills everything left in it; on timeout the lab kills bwrap.

Output is read incrementally; at most ``max_output_bytes`` per stream are kept (the rest is read and
discarded), so the caller's memory stays bounded whatever the child prints, and the timeout is
wall-clock over the whole tree. Where bwrap cannot run, :class:`Sandbox` refuses with
:class:`SandboxUnavailable` naming the package, unless the caller asks for ``isolation="process"``
(a plain subprocess: rlimits, a new session, a Python audit hook; every evidence record says so).

The old in-process audit hook (refusing sockets, subprocesses and writes outside the directory) stays
as an extra layer in both modes; the guarantees above do not rely on it.

Unit tests run under a harness (:meth:`Sandbox.run_tests`): the candidate module runs in its own
process and the tests see it only through a proxy that carries plain data (None, bool, int, float, str,
bytes, list, tuple, dict, set) rebuilt by the harness, so an object whose ``__eq__`` always says True
never reaches a test. After every test ran, the harness writes a result record (with a per-run random
nonce) to a pipe the candidate's process does not hold and cannot open (the harness is not dumpable).
Only that record decides; printing "1 passed" and calling ``os._exit(0)`` counts for nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

SANDBOX_VERSION = "lab-sandbox/2"
HARNESS_VERSION = "lab-test-harness/1"
ISOLATIONS = ("bwrap", "process")
NOBODY = 65534  # uid/gid the child runs as when the lab is root
_RECORD_LIMIT = 1 << 20  # bytes of harness record the lab accepts
_READ_LIMIT = 1 << 20  # bytes of a file in the sandbox directory the lab will read back


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create its namespaces here."""


# ----------------------------------------------------------------------------- code that runs in the child

# First lines of every child program: drop privileges (root only), set rlimits, enter the directory.
# Parameters arrive as JSON in argv[1]; nothing secret is in it.
_BOOT = r'''
import json, os, resource, sys
_cfg = json.loads(sys.argv[1])
if _cfg["drop_to"] is not None:
    os.setgroups([])
    os.setgid(_cfg["drop_to"])
    os.setuid(_cfg["drop_to"])  # from root: every capability is gone after this
for _name, _v in _cfg["rlimits"].items():
    resource.setrlimit(getattr(resource, _name), (_v, _v))
os.chdir(_cfg["root"])
'''

# The in-process audit hook: an extra layer that gives clear "denied" messages. Code can switch it off
# (e.g. by clearing these globals); the OS isolation does not depend on it.
_GUARD = r'''
def _install_guard(root):
    root = os.path.realpath(root)
    def inside(p):
        try:
            p = os.fsdecode(p)
        except Exception:
            return False
        return os.path.realpath(os.path.join(root, p)).startswith(root + os.sep)
    write_events = {"os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.symlink", "os.link", "os.chmod",
                    "os.chown", "os.truncate", "os.utime", "shutil.rmtree", "shutil.move", "shutil.copyfile"}
    deny = {"socket.connect", "socket.bind", "socket.sendto", "socket.getaddrinfo", "socket.gethostbyname",
            "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
            "pty.spawn", "ctypes.dlopen", "os.kill", "os.killpg", "os.chdir", "os.chroot"}
    def hook(event, args):
        if event in deny:
            raise PermissionError(f"sandbox: {event} is not allowed")
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int):
                return
            writing = (mode is not None and any(c in str(mode) for c in "wax+")) or (flags is not None and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
            if writing and not inside(path):
                raise PermissionError(f"sandbox: writing {path!r} outside the sandbox directory is not allowed")
        elif event in write_events:
            for p in args[:2]:
                if isinstance(p, (str, bytes, os.PathLike)) and not inside(p):
                    raise PermissionError(f"sandbox: {event} on {p!r} outside the sandbox directory is not allowed")
    sys.addaudithook(hook)
'''

# A plain action: run a script from the directory as __main__.
_RUN = r'''
_install_guard(_cfg["root"])
sys.path.insert(0, _cfg["root"])  # -I drops the script directory; the episode's own files must import
_file = _cfg["file"]
with open(_file) as _f:
    _src = _f.read()
sys.argv = [_file, *_cfg["args"]]
exec(compile(_src, _file, "exec"), {"__name__": "__main__", "__file__": _file})
'''

# Plain-data wire format between the harness and the candidate's process: length-prefixed JSON with
# explicit type tags, decoded strictly into fresh built-in objects (exact types, bounded depth).
_WIRE = r'''
_WIRE_LIMIT = 16 << 20

def _enc(x, depth=0):
    if depth > 64:
        raise ValueError("value nests deeper than 64 levels")
    t = type(x)
    if x is None:
        return ["N"]
    if t is bool:
        return ["b", x]
    if t is int:
        return ["i", str(x)]
    if t is float:
        return ["f", float.hex(x)]
    if t is str:
        return ["s", x]
    if t is bytes:
        return ["y", x.hex()]
    if t in (list, tuple, set, frozenset):
        return [{list: "l", tuple: "t", set: "S", frozenset: "F"}[t], [_enc(v, depth + 1) for v in x]]
    if t is dict:
        return ["d", [[_enc(k, depth + 1), _enc(v, depth + 1)] for k, v in x.items()]]
    raise TypeError(f"a value of type {t.__name__} cannot cross the sandbox boundary "
                    "(only None, bool, int, float, str, bytes, list, tuple, dict, set, frozenset)")

def _dec(v, depth=0):
    if depth > 64 or type(v) is not list or not v or type(v[0]) is not str:
        raise ValueError("malformed value on the wire")
    tag = v[0]
    if tag == "N" and len(v) == 1:
        return None
    if len(v) != 2:
        raise ValueError("malformed value on the wire")
    p = v[1]
    try:
        if tag == "b" and type(p) is bool:
            return bool(p)
        if tag == "i" and type(p) is str and len(p) <= 4000:
            return int(p)
        if tag == "f" and type(p) is str:
            return float.fromhex(p)
        if tag == "s" and type(p) is str:
            return str(p)
        if tag == "y" and type(p) is str:
            return bytes.fromhex(p)
    except (ValueError, OverflowError):
        raise ValueError("malformed value on the wire") from None
    try:
        if tag in ("l", "t", "S", "F") and type(p) is list:
            items = [_dec(x, depth + 1) for x in p]
            return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
        if tag == "d" and type(p) is list:
            out = {}
            for kv in p:
                if type(kv) is not list or len(kv) != 2:
                    raise ValueError("malformed value on the wire")
                out[_dec(kv[0], depth + 1)] = _dec(kv[1], depth + 1)
            return out
    except TypeError:  # an unhashable key or set member
        raise ValueError("malformed value on the wire: unhashable key or member") from None
    raise ValueError("malformed value on the wire")

def _send(fd, obj):
    data = json.dumps(obj).encode()
    data = len(data).to_bytes(8, "big") + data
    while data:
        data = data[os.write(fd, data):]

def _recv_exact(fd, n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, min(n - len(buf), 1 << 16))
        if not chunk:
            return None
        buf += chunk
    return buf

def _recv(fd):
    head = _recv_exact(fd, 8)
    if head is None:
        return None
    n = int.from_bytes(head, "big")
    if n > _WIRE_LIMIT:
        raise ValueError(f"message of {n} bytes exceeds {_WIRE_LIMIT}")
    body = _recv_exact(fd, n)
    if body is None:
        return None
    return json.loads(body)
'''

# The candidate's process: import the module, then answer calls until the harness closes the pipe.
_SERVER = r'''
_install_guard(_cfg["root"])
sys.path.insert(0, _cfg["root"])
_req, _rep = _cfg["fds"]
def _serve():
    import importlib
    try:
        mod = importlib.import_module(_cfg["module"])
    except BaseException as e:
        _send(_rep, {"ok": False, "error": type(e).__name__, "message": str(e)[:2000]})
        return
    names = {}
    for k, v in list(vars(mod).items()):
        if k.startswith("_"):
            continue
        if callable(v):
            names[k] = ["callable"]
        else:
            try:
                names[k] = ["value", _enc(v)]
            except (TypeError, ValueError, RecursionError):
                pass  # modules and other objects stay in the candidate's process
    _send(_rep, {"ok": True, "names": names})
    while True:
        req = _recv(_req)
        if req is None:
            return
        try:
            fn = getattr(mod, req["name"])
            value = fn(*_dec(req["args"]), **_dec(req["kwargs"]))
            reply = {"ok": True, "value": _enc(value)}
        except BaseException as e:
            reply = {"ok": False, "error": type(e).__name__, "message": str(e)[:2000]}
        _send(_rep, reply)
_serve()
'''

# The harness: trusted test code in one process, the candidate in another; the record is written last.
_HARNESS = r'''
def _harness():
    import builtins, subprocess, traceback, types
    with os.fdopen(_cfg["cfg_fd"], "rb") as f:
        job = json.loads(f.read())
    rec_fd = _cfg["record_fd"]
    try:  # not dumpable: a same-uid process can neither ptrace us nor open /proc/<pid>/fd/<record_fd>
        import ctypes
        dumpable = ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0  # PR_SET_DUMPABLE = 4
    except Exception:
        dumpable = True
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    server_cfg = dict(_cfg, drop_to=None, fds=[req_r, rep_w], module=job["module"])
    server = subprocess.Popen([sys.executable, "-I", "-B", "-c", job["server_program"], json.dumps(server_cfg)],
                              pass_fds=(req_r, rep_w), stdin=subprocess.DEVNULL)  # close_fds: the record pipe stays here
    os.close(req_r)
    os.close(rep_w)
    _install_guard(_cfg["root"])

    def rpc(msg):
        if msg is not None:
            try:
                _send(req_w, msg)
            except OSError:
                raise RuntimeError("the solution process has ended") from None
        try:
            reply = _recv(rep_r)
        except ValueError as e:
            raise RuntimeError(f"the solution process sent a malformed reply: {e}") from None
        if reply is None:
            raise RuntimeError("the solution process ended before it replied")
        if type(reply) is not dict or type(reply.get("ok")) is not bool:
            raise RuntimeError("the solution process sent a malformed reply")
        if not reply["ok"]:
            name, message = str(reply.get("error")), str(reply.get("message"))[:2000]
            etype = getattr(builtins, name, None)
            if isinstance(etype, type) and issubclass(etype, Exception):
                raise etype(message)
            raise RuntimeError(f"{name}: {message}")
        return reply

    def remote(name):
        def call(*args, **kwargs):
            reply = rpc({"op": "call", "name": name, "args": _enc(list(args)), "kwargs": _enc(dict(kwargs))})
            try:
                return _dec(reply.get("value"))
            except (ValueError, TypeError, RecursionError) as e:
                raise RuntimeError(f"the solution returned a malformed value: {e}") from None
        call.__name__ = call.__qualname__ = name
        return call

    module = job["module"]
    try:
        loaded = rpc(None)
        mod = types.ModuleType(module)
        for k, v in dict(loaded.get("names") or {}).items():
            if type(k) is str and type(v) is list and v[:1] == ["callable"]:
                setattr(mod, k, remote(k))
            elif type(k) is str and type(v) is list and len(v) == 2 and v[0] == "value":
                setattr(mod, k, _dec(v[1]))
        sys.modules[module] = mod
    except BaseException as e:
        print(f"harness: module {module!r} could not be loaded: {type(e).__name__}: {e}", file=sys.stderr)
        sys.modules[module] = None  # the tests' import then fails

    filename = job["filename"]
    results = []

    def run(name, fn):
        try:
            fn()
        except SystemExit as e:
            if e.code in (0, None):
                results.append({"name": name, "outcome": "passed"})
                return True
            results.append({"name": name, "outcome": "failed", "error": f"SystemExit({e.code!r})"})
            return False
        except BaseException as e:
            results.append({"name": name, "outcome": "failed", "error": f"{type(e).__name__}: {e}"[:2000]})
            print(f"FAILED {name}: {type(e).__name__}: {e}", file=sys.stderr)
            traceback.print_exc()
            return False
        results.append({"name": name, "outcome": "passed"})
        return True

    ns = {"__name__": "__main__", "__file__": filename}
    code = compile(job["tests"], filename, "exec")
    top = len(results)
    if run(filename, lambda: exec(code, ns)):
        funcs = [(k, v) for k, v in ns.items() if k.startswith("test") and isinstance(v, types.FunctionType)
                 and v.__code__.co_filename == filename]
        if funcs:  # pytest-style file: the functions are the tests, the module body is set-up
            del results[top]
            for k, v in funcs:
                run(k, v)
    sys.stdout.flush()
    sys.stderr.flush()
    passed = sum(r["outcome"] == "passed" for r in results)
    failed = len(results) - passed
    record = {"harness": job["harness"], "nonce": job["nonce"], "complete": True, "tests": results,
              "passed": passed, "failed": failed, "harness_dumpable": dumpable}
    data = json.dumps(record).encode()
    while data:
        data = data[os.write(rec_fd, data):]
    os.close(rec_fd)
    os.close(req_w)  # the candidate's process sees EOF and exits; the namespace ends it otherwise
    return 0 if failed == 0 and passed > 0 else 1
sys.exit(_harness())
'''


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class SandboxResult:
    """What one executed action returns: observation, evidence record and cost [ftip-004S].

    ``status``: ``"ok"`` (exit 0; for a test run: the harness record says every test passed),
    ``"error"`` (non-zero exit, or tests failed / no valid record), ``"timeout"`` (killed at the
    wall-clock limit), ``"memory"`` (hit the memory limit), ``"killed"`` (ended by a signal),
    ``"denied"`` (a sandbox rule refused an operation), ``"malformed"`` (the action never ran).
    """

    status: str
    exit_code: int | None
    stdout: str
    stderr: str
    seconds: float
    output_bytes: int
    evidence: dict

    @property
    def observation(self) -> str:
        """The text appended to the agent's context."""
        if self.status == "malformed":
            return f"malformed action: {self.stderr}"
        head = f"[{self.status}, exit {self.exit_code}]"
        out = (self.stdout + ("\n" + self.stderr if self.stderr else "")).strip()
        return f"{head}\n{out}" if out else head

    @property
    def cost(self) -> tuple[float, float]:
        """Cost increment (seconds, bytes of output)."""
        return (self.seconds, float(self.output_bytes))


def tests_verified(result: SandboxResult) -> bool:
    """True exactly when a harness record, written after every test ran and carrying this run's nonce,
    says at least one test ran and none failed (:meth:`Sandbox.run_tests`). Never reads stdout."""
    t = result.evidence.get("tests") if isinstance(result.evidence, dict) else None
    return result.status == "ok" and isinstance(t, dict) and t.get("verified") is True


# ----------------------------------------------------------------------------- bubblewrap


def _python() -> tuple[str, list[str]]:
    """The real interpreter (a venv's python is a symlink) and what it needs, bound read-only: its own
    installation prefix (e.g. ~/.pyenv/versions/3.11.7), or for a system Python (prefix /usr or
    /usr/local) only the executable and the standard library, not the whole of /usr."""
    import sysconfig

    exe = os.path.realpath(sys.executable)
    prefix = os.path.realpath(sys.base_prefix)
    if prefix in ("/", "/usr", "/usr/local"):
        paths = sysconfig.get_paths(vars={"base": prefix, "platbase": prefix, "installed_base": prefix})
        needs = [exe, *sorted({os.path.realpath(paths["stdlib"]), os.path.realpath(paths["platstdlib"])})]
    else:
        needs = [prefix] + ([] if exe.startswith(prefix + os.sep) else [exe])
    return exe, needs


def _bwrap_argv(root: str, privileged: bool, tmp_mb: int = 64) -> list[str]:
    """The bwrap command line for one call: namespaces, a filesystem built from nothing, one writable dir."""
    exe, needs = _python()
    a = [shutil.which("bwrap") or "/usr/bin/bwrap"]
    if privileged:  # root: no user namespace (it would still be uid 0); the child drops to nobody itself
        a += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
              "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        a += ["--unshare-all", "--unshare-user", "--disable-userns"]
    a += ["--die-with-parent", "--new-session", "--hostname", "sandbox",
          "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", root,
          "--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONHASHSEED", "0",
          "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(tmp_mb << 20), "--tmpfs", "/tmp"]
    made = {"/", "/proc", "/dev", "/tmp"}

    def parents(dest: str) -> list[str]:
        out = []
        p = Path(dest).parent
        chain = [q for q in [p, *p.parents] if str(q) not in made]
        for q in reversed(chain):  # bwrap would make missing parents 0700; nobody must traverse them
            out += ["--perms", "0755", "--dir", str(q)]
            made.add(str(q))
        return out

    binds = ["/usr/lib", "/usr/lib64", "/etc/ld.so.cache"]
    for src in binds:
        if os.path.exists(src) and not os.path.islink(src):
            a += parents(src) + ["--ro-bind", src, src]
    for link in ("/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(link):
            a += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            a += ["--ro-bind", link, link]
    for src in needs:
        if not any(src == b or src.startswith(b + os.sep) for b in binds if os.path.exists(b)):
            a += parents(src) + ["--ro-bind", src, src]
    a += parents(root) + ["--bind", root, root, "--chdir", root]
    return a


_PROBE: dict[int, tuple[bool, str]] = {}
_PROBE_LOCK = threading.Lock()


def bwrap_status() -> tuple[bool, str]:
    """(usable, why): whether bwrap runs here with the namespaces this sandbox uses (probed once)."""
    uid = os.geteuid()
    with _PROBE_LOCK:
        if uid in _PROBE:
            return _PROBE[uid]
        if shutil.which("bwrap") is None and not os.path.exists("/usr/bin/bwrap"):
            _PROBE[uid] = (False, "the bwrap command is not installed")
            return _PROBE[uid]
        d = tempfile.mkdtemp(prefix="lab-sandbox-probe-")
        try:
            if uid == 0:
                os.chown(d, NOBODY, NOBODY)
            # the real start-up path: drop to nobody (as root), then import from the bound installation
            cfg = {"drop_to": NOBODY if uid == 0 else None, "rlimits": {}, "root": d}
            cmd = _bwrap_argv(d, uid == 0) + ["--", _python()[0], "-I", "-B", "-c", _BOOT + "import encodings, threading; os.listdir('.')", json.dumps(cfg)]
            r = subprocess.run(cmd, env={}, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
            ok = r.returncode == 0
            why = "bwrap works" if ok else f"bwrap failed (exit {r.returncode}): {r.stderr.decode('utf-8', 'replace').strip()[:500]}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            ok, why = False, f"bwrap could not start: {exc}"
        finally:
            shutil.rmtree(d, ignore_errors=True)
        _PROBE[uid] = (ok, why)
        return ok, why


def _own_task_count(uid: int) -> int:
    """Threads and processes the kernel counts against ``RLIMIT_NPROC`` for ``uid`` (approximate)."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status") as f:
                s = f.read()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in s.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            n += int(fields.get("Threads", "1").strip() or 1)
    return n


# ----------------------------------------------------------------------------- the sandbox


def _check_number(x, name: str, low: float, integer: bool = False):
    if isinstance(x, bool) or not isinstance(x, (int, float)) or (integer and not float(x).is_integer()):
        raise ValueError(f"{name} must be a{'n integer' if integer else ' number'}; got {x!r}")
    if not math.isfinite(float(x)) or x < low:
        raise ValueError(f"{name} must be finite and >= {low}; got {x!r}")
    return int(x) if integer else float(x)


class Sandbox:
    """A real, restricted executor for Python actions [ftip-004S, ftip-004T].

    ``reset()`` makes a fresh temporary directory (the episode's state, outside the project);
    ``execute(action)`` runs one action there as its own process tree under every restriction below,
    all recorded in each evidence record (:meth:`describe`).

    Parameters (declared, with defaults):

    - ``timeout_s`` (5.0): wall-clock limit over the whole process tree;
    - ``memory_mb`` (512): ``RLIMIT_AS`` per process (>= 64; a bomb gets ``MemoryError`` or is killed);
    - ``max_output_bytes`` (20 000): bytes kept per stream; the rest is read and discarded;
    - ``isolation`` (``"bwrap"``): ``"bwrap"`` (namespaces, see the module docstring) or ``"process"``
      (a plain subprocess with rlimits and the audit hook only, for machines without bubblewrap; weaker,
      and every record says so). ``"bwrap"`` where bwrap cannot run raises :class:`SandboxUnavailable`;
    - ``cpu_s`` (None = ``ceil(timeout_s) + 1``): ``RLIMIT_CPU`` seconds;
    - ``max_processes`` (64): ``RLIMIT_NPROC`` for the child's uid (not enforced by the kernel for root,
      which is why the root lab runs children as ``nobody``);
    - ``max_file_mb`` (16): ``RLIMIT_FSIZE``.

    Tools: ``write`` (argument ``PATH\\nCONTENT``: write a file inside the directory), ``python``
    (argument: a script), ``run_tests`` (argument: a test file in the directory, default
    ``test_solution.py``; run under the harness, see :meth:`run_tests`), ``finish`` (no execution).
    """

    def __init__(self, timeout_s: float = 5.0, memory_mb: int = 512, max_output_bytes: int = 20_000, isolation: str = "bwrap",
                 cpu_s: int | None = None, max_processes: int = 64, max_file_mb: int = 16) -> None:
        self.timeout_s = _check_number(timeout_s, "timeout_s", 1e-3)
        self.memory_mb = _check_number(memory_mb, "memory_mb", 64, integer=True)
        self.max_output_bytes = _check_number(max_output_bytes, "max_output_bytes", 1, integer=True)
        self.cpu_s = math.ceil(self.timeout_s) + 1 if cpu_s is None else _check_number(cpu_s, "cpu_s", 1, integer=True)
        self.max_processes = _check_number(max_processes, "max_processes", 4, integer=True)
        self.max_file_mb = _check_number(max_file_mb, "max_file_mb", 1, integer=True)
        if isolation not in ISOLATIONS:
            raise ValueError(f"isolation must be one of {ISOLATIONS}; got {isolation!r}")
        if isolation == "bwrap":
            ok, why = bwrap_status()
            if not ok:
                raise SandboxUnavailable(
                    f"the sandbox needs bubblewrap: install the Debian package `bubblewrap` (apt-get install bubblewrap; "
                    f"./lab.sh setup does it as root), or pass isolation='process' to accept a weaker sandbox ({why})")
        self.isolation = isolation
        self.privileged = os.geteuid() == 0
        self.root: Path | None = None

    # --- what the records say

    def describe(self) -> dict:
        """The sandbox's semantics, copied into every evidence record (ftip-004T)."""
        bw = self.isolation == "bwrap"
        return {
            "version": SANDBOX_VERSION,
            "isolation": self.isolation,
            "namespaces": (["pid", "net", "ipc", "uts"] + ([] if self.privileged else ["user"])) if bw else [],
            "user": (f"nobody ({NOBODY}), no capabilities" if self.privileged else f"uid {os.geteuid()} in a user namespace") if bw
                    else f"the lab's uid {os.geteuid()}",
            "filesystem": "read-only /usr/lib and the Python installation; private /tmp; sandbox directory writable" if bw
                          else "the whole filesystem (audit hook refuses writes outside the directory; bypassable)",
            "timeout_s": self.timeout_s,
            "memory_mb": self.memory_mb,
            "cpu_s": self.cpu_s,
            "max_processes": self.max_processes,
            "max_file_mb": self.max_file_mb,
            "max_output_bytes": self.max_output_bytes,
            "network": "its own loopback only (new network namespace) + audit hook" if bw else "audit hook only (bypassable)",
            "writes": "sandbox-directory-only" if bw else "sandbox-directory-only (audit hook; bypassable)",
            "process_tree": "ends with the call (PID namespace)" if bw else "process group killed (a new session escapes)",
            "python": sys.version.split()[0],
        }

    # --- the episode directory

    def reset(self, files: dict[str, str] | None = None) -> Path:
        """Start an episode in a fresh temporary directory, optionally with initial files."""
        self.close()
        self.root = Path(tempfile.mkdtemp(prefix="lab-sandbox-"))
        if self.privileged and self.isolation == "bwrap":
            os.chown(self.root, NOBODY, NOBODY)
        for name, content in (files or {}).items():
            self._write(name, content)
        return self.root

    def close(self) -> None:
        if self.root is not None:
            root, self.root = self.root, None
            for d, dirs, _ in os.walk(root):  # code may have left directories without permissions
                for x in dirs:
                    try:
                        if stat.S_ISDIR(os.lstat(os.path.join(d, x)).st_mode):
                            os.chmod(os.path.join(d, x), 0o700)
                    except OSError:
                        pass
            shutil.rmtree(root, ignore_errors=True)

    def __enter__(self) -> "Sandbox":
        if self.root is None:
            self.reset()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _path(self, name: str) -> Path:
        if self.root is None:
            raise ValueError("sandbox has no directory: call reset() first")
        p = (self.root / name).resolve()
        if not str(p).startswith(str(self.root.resolve()) + os.sep):
            raise PermissionError(f"sandbox: path {name!r} leaves the sandbox directory")
        return p

    def _write(self, name: str, content: str) -> None:
        """Write a file the lab puts into the directory; never follows a link, never blocks on a FIFO."""
        p = self._path(name)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise PermissionError(f"sandbox: {name!r} is not a regular file")
            os.ftruncate(fd, 0)
            data = content.encode()
            while data:
                data = data[os.write(fd, data):]
            if self.privileged and self.isolation == "bwrap":
                os.fchown(fd, NOBODY, NOBODY)
        finally:
            os.close(fd)

    def _read(self, name: str) -> str:
        """Read back a file the code may have replaced (by a link, a FIFO, a huge file): refuse those."""
        p = self._path(name)
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise PermissionError(f"sandbox: {name!r} is not a regular file")
            if st.st_size > _READ_LIMIT:
                raise PermissionError(f"sandbox: {name!r} is larger than {_READ_LIMIT} bytes")
            return os.read(fd, _READ_LIMIT + 1)[:_READ_LIMIT].decode("utf-8", "replace")
        finally:
            os.close(fd)

    # --- running a child

    def _rlimits(self) -> dict[str, int]:
        nproc = self.max_processes
        if not self.privileged:  # RLIMIT_NPROC counts every task of the uid, not only this tree
            nproc += _own_task_count(os.geteuid())
        return {"RLIMIT_AS": self.memory_mb * 1024 * 1024, "RLIMIT_FSIZE": self.max_file_mb * 1024 * 1024,
                "RLIMIT_CPU": self.cpu_s, "RLIMIT_CORE": 0, "RLIMIT_NPROC": nproc}

    def _spawn(self, program: str, cfg: dict, feed: bytes | None = None, want_record: bool = False) -> dict:
        """Run one child program; read its output and record incrementally; stop it all at the deadline."""
        assert self.root is not None
        root = str(self.root)
        bw = self.isolation == "bwrap"
        pass_fds, close_after = [], []
        feed_w = rec_r = None
        if feed is not None:
            feed_r, feed_w = os.pipe()
            cfg["cfg_fd"] = feed_r
            pass_fds.append(feed_r)
            close_after.append(feed_r)
        if want_record:
            rec_r, rec_w = os.pipe()
            cfg["record_fd"] = rec_w
            pass_fds.append(rec_w)
            close_after.append(rec_w)
        cfg.update(root=root, drop_to=NOBODY if (bw and self.privileged) else None, rlimits=self._rlimits())
        argv = [_python()[0], "-I", "-B", "-c", program, json.dumps(cfg)]
        if bw:
            argv = _bwrap_argv(root, self.privileged) + ["--", *argv]
            env: dict[str, str] = {}  # bwrap's own environment is readable as /proc/1/environ inside
        else:
            env = {"PATH": "/usr/bin:/bin", "HOME": root, "PYTHONHASHSEED": "0", "LANG": "C.UTF-8"}
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(argv, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, pass_fds=pass_fds, start_new_session=True)
        except BaseException:
            for fd in (feed_w, rec_r):
                if fd is not None:
                    os.close(fd)
            raise
        finally:
            for fd in close_after:  # the child's ends: only the child holds them now
                os.close(fd)
        feeder = None
        if feed_w is not None:
            def _feed(fd=feed_w, data=feed):
                try:
                    while data:
                        data = data[os.write(fd, data):]
                except OSError:
                    pass
                finally:
                    os.close(fd)
            feeder = threading.Thread(target=_feed, daemon=True)
            feeder.start()
        out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
        kept = {out_fd: bytearray(), err_fd: bytearray()}
        record = bytearray()
        record_overflow = False
        total = 0
        open_fds = set(kept) | ({rec_r} if rec_r is not None else set())
        deadline = start + self.timeout_s
        timed_out = False
        exited_at = None
        while open_fds:
            now = time.perf_counter()
            if now >= deadline:  # still running, or something still holds its output open
                timed_out = True
                break
            if proc.poll() is not None:
                exited_at = exited_at or now
                if now - exited_at > 0.5:  # only possible without a PID namespace: a leftover holds a pipe
                    break
            ready, _, _ = select.select(list(open_fds), [], [], min(0.05, deadline - now))
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    open_fds.discard(fd)
                elif fd == rec_r:
                    if len(record) + len(chunk) > _RECORD_LIMIT:
                        record_overflow = True
                    else:
                        record += chunk
                else:
                    total += len(chunk)
                    room = self.max_output_bytes - len(kept[fd])
                    if room > 0:
                        kept[fd] += chunk[:room]
        if timed_out:
            deadline_hit = True
        else:
            deadline_hit = False
            try:  # the main process is done; give it the rest of the deadline to be reaped
                proc.wait(timeout=max(0.0, deadline - time.perf_counter()))
            except subprocess.TimeoutExpired:
                deadline_hit = True
        try:  # bwrap's death takes the namespace with it (--die-with-parent); without bwrap, the group
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        seconds = time.perf_counter() - start
        for f in (proc.stdout, proc.stderr):
            f.close()
        if rec_r is not None:
            os.close(rec_r)
        if feeder is not None:
            feeder.join(timeout=1)
        code = proc.returncode
        if bw and code is not None and code > 128 and not deadline_hit:  # bwrap reports a signal as 128 + n
            code = -(code - 128)
        return {"code": code, "timed_out": deadline_hit, "out": bytes(kept[out_fd]), "err": bytes(kept[err_fd]),
                "total": total, "seconds": seconds, "record": None if record_overflow else bytes(record)}

    def _status(self, r: dict, stderr: str) -> str:
        if r["timed_out"]:
            return "timeout"
        if "MemoryError" in stderr:
            return "memory"
        if r["code"] is not None and r["code"] < 0:
            return "killed"
        if "PermissionError: sandbox:" in stderr:
            return "denied"
        return "ok" if r["code"] == 0 else "error"

    def run_python(self, source: str, filename: str = "action.py", args: Sequence[str] = ()) -> SandboxResult:
        """Run ``source`` as a script in the sandbox directory under every restriction."""
        if not isinstance(source, str):
            raise ValueError(f"source must be a str; got {type(source).__name__}")
        if self.root is None:
            self.reset()
        self._write(filename, source)
        r = self._spawn(_BOOT + _GUARD + _RUN, {"file": filename, "args": [str(a) for a in args]})
        stdout, stderr = r["out"].decode("utf-8", "replace"), r["err"].decode("utf-8", "replace")
        status = self._status(r, stderr)
        evidence = {
            "sandbox": self.describe(),
            "command": f"{self.isolation}: python {filename}",
            "source_sha256": hashlib.sha256(source.encode()).hexdigest(),
            "exit_code": r["code"],
            "status": status,
            "stdout": stdout,
            "stderr_tail": stderr[-2000:],
            "output_truncated": r["total"] > len(r["out"]) + len(r["err"]),
        }
        return SandboxResult(status, r["code"], stdout, stderr, r["seconds"], r["total"], evidence)

    def run_tests(self, tests: str, filename: str = "test_solution.py", module: str = "solution") -> SandboxResult:
        """Run trusted ``tests`` against ``module`` (a file ``<module>.py`` in the directory) under the harness.

        The tests run in the harness's process and reach the candidate only through a proxy module whose
        functions call into the candidate's own process and return plain data (see the module docstring).
        Tests are a script (passes when it runs to its end) or define ``test_*`` functions (each one a test).
        ``tests`` is sent over a pipe, so the candidate cannot read it from the directory. The status is
        ``"ok"`` exactly when the harness record (right nonce, written after every test ran) says at least one
        test ran and none failed; the record is in ``evidence["tests"]``.
        """
        if not isinstance(tests, str):
            raise ValueError(f"tests must be a str; got {type(tests).__name__}")
        if not isinstance(module, str) or not module.isidentifier():
            raise ValueError(f"module must be a Python identifier; got {module!r}")
        if self.root is None:
            self.reset()
        nonce = secrets.token_hex(16)
        job = {"nonce": nonce, "tests": tests, "filename": filename, "module": module, "harness": HARNESS_VERSION,
               "server_program": _BOOT + _GUARD + _WIRE + _SERVER}
        r = self._spawn(_BOOT + _GUARD + _WIRE + _HARNESS, {}, feed=json.dumps(job).encode(), want_record=True)
        stdout, stderr = r["out"].decode("utf-8", "replace"), r["err"].decode("utf-8", "replace")
        record, why = None, "no record: the harness did not finish"
        if r["record"]:
            try:
                record = json.loads(r["record"])
                why = "valid"
            except ValueError:
                why = "malformed record"
        if r["record"] is None:
            why = "record too large"
        ok_record = (isinstance(record, dict) and record.get("nonce") == nonce and record.get("complete") is True
                     and isinstance(record.get("passed"), int) and isinstance(record.get("failed"), int))
        if record is not None and not ok_record:
            why = "record with a wrong nonce or fields"
        verified = bool(ok_record and record["failed"] == 0 and record["passed"] > 0 and r["code"] == 0 and not r["timed_out"])
        status = self._status(r, stderr)
        if status in ("ok", "denied"):
            status = "ok" if verified else "error"
        summary = {"verified": verified, "record": why, "harness": HARNESS_VERSION,
                   "passed": record.get("passed") if ok_record else None, "failed": record.get("failed") if ok_record else None,
                   "results": record.get("tests") if ok_record else None,
                   "harness_dumpable": record.get("harness_dumpable") if ok_record else None}
        evidence = {
            "sandbox": self.describe(),
            "command": f"{self.isolation}: harness {filename} against {module}.py",
            "tests_sha256": hashlib.sha256(tests.encode()).hexdigest(),
            "exit_code": r["code"],
            "status": status,
            "tests": summary,
            "stdout": stdout,
            "stderr_tail": stderr[-2000:],
            "output_truncated": r["total"] > len(r["out"]) + len(r["err"]),
        }
        return SandboxResult(status, r["code"], stdout, stderr, r["seconds"], r["total"], evidence)

    def execute(self, action) -> SandboxResult:
        """Execute one decoded action; a ``Malformed`` result is reported, never run."""
        from lab.agentic import Malformed  # the action types live with the serializer

        if isinstance(action, Malformed):
            return SandboxResult("malformed", None, "", action.reason, 0.0, 0, {"sandbox": self.describe(), "status": "malformed"})
        if self.root is None:
            self.reset()
        if action.tool == "write":
            path, _, content = action.argument.partition("\n")
            try:
                self._write(path.strip(), content)
            except (PermissionError, OSError) as exc:
                return SandboxResult("denied", None, "", str(exc), 0.0, 0, {"sandbox": self.describe(), "status": "denied"})
            msg = f"wrote {path.strip()} ({len(content)} characters)"
            return SandboxResult("ok", 0, msg, "", 0.0, len(msg), {"sandbox": self.describe(), "status": "ok", "wrote": path.strip(),
                                                                    "content_sha256": hashlib.sha256(content.encode()).hexdigest()})
        if action.tool == "python":
            return self.run_python(action.argument)
        if action.tool == "run_tests":
            target = action.argument.strip() or "test_solution.py"
            try:
                source = self._read(target)
            except (OSError, PermissionError) as exc:
                return SandboxResult("error", None, "", f"cannot read {target}: {exc}", 0.0, 0, {"sandbox": self.describe(), "status": "error"})
            return self.run_tests(source, filename=target)
        if action.tool == "finish":
            return SandboxResult("ok", 0, action.argument, "", 0.0, len(action.argument), {"sandbox": self.describe(), "status": "finish"})
        raise ValueError(f"action.tool {action.tool!r} has no executor in this sandbox")
