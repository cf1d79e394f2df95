"""The run directory: where a run keeps its checkpoints, its ledger and its lock, without ever losing data.

Read top to bottom: run names → the marker and the lock (one writer per directory) → the hash-chained
ledger → checkpoints (written whole or not at all, verified on load, the last K kept) → ``final/`` →
strict loading → ``verify_run`` (what ``python -m lab.smallrun verify RUN_DIR`` prints).

Rules this module keeps:

- **Nothing the lab did not create is deleted or overwritten.** A run directory carries a marker file
  (``.lab-run``) the lab wrote when it created it; a non-empty directory without it is refused. Only
  names the lab writes (``checkpoints/step-NNNNNN`` with its manifest, ``.tmp-*`` / ``.final.*`` leftovers
  holding the lab's partial-write tag, ``final/``) are ever removed or replaced.
- **One writer per run directory**: an exclusive ``fcntl.flock`` on ``.lock``, held while the run lives.
  A second run on the same directory, from the CLI or the page, gets a clear error. The kernel drops the
  lock when the process ends, so a crash never leaves a stale lock.
- **Atomic writes.** Files and directories are written under a temporary name in the same directory,
  fsynced, then renamed. A crash leaves the previous version intact (or none), never a half-written one;
  a write that fails (a full disk) removes its own temporary files and says which checkpoint is still good.
- **Tamper-evident ledger.** Each record carries ``prev_sha256``, the SHA-256 of the previous line's bytes;
  an edited, deleted or reordered record breaks the chain and is reported (on resume and by ``verify``).
- **Verified checkpoints.** Each checkpoint holds ``manifest.json`` (SHA-256 of every file and of the
  weights); loading is strict (no missing or unexpected tensors) and the loaded weights' hash must equal the
  ledger's policy stamp for that step.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

MARKER = ".lab-run"
LOCK = ".lock"
LEDGER = "ledger.jsonl"
CHECKPOINTS = "checkpoints"
FINAL = "final"
MANIFEST = "manifest.json"
PARTIAL_TAG = ".lab-partial"  # written first into every temporary directory: marks it as the lab's own leftover
GENESIS = "0" * 64  # prev_sha256 of the first ledger record
CKPT_RE = re.compile(r"^step-(\d{6,})$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class RunDirError(ValueError):
    """A run directory cannot be used as asked (not a lab run, in use, tampered, ...). The message says why."""


class CheckpointWriteError(RuntimeError):
    """Writing a checkpoint failed (e.g. a full disk); the message names the checkpoint that is still good."""


# ----------------------------------------------------------------------------- names


def check_run_name(name: str) -> str:
    """A run name is a name, not a path: letters, digits, ``.``, ``_``, ``-``; no separator, no ``..``, not absolute."""
    if not isinstance(name, str):
        raise ValueError(f"run name must be a string; got {type(name).__name__}")
    n = name.strip()
    if not n:
        raise ValueError("run name must not be empty")
    if os.path.isabs(n) or "/" in n or "\\" in n or ".." in n or not NAME_RE.match(n):
        raise ValueError(f"run name must be a plain name (letters, digits, '.', '_', '-'; at most 100; no '/', no '..', "
                         f"not an absolute path); got {name!r}")
    return n


def run_path(runs_dir: str | Path, name: str) -> Path:
    """``runs_dir / name`` for a valid name, checked to resolve inside ``runs_dir`` (a symlink cannot lead out)."""
    n = check_run_name(name)
    root = Path(runs_dir).resolve()
    p = (root / n).resolve()
    if p.parent != root:
        raise ValueError(f"run name {name!r} resolves outside the runs directory {root} (a symlink?)")
    return Path(runs_dir) / n


# ----------------------------------------------------------------------------- atomic files


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: str | Path, text: str, fsync: bool = True) -> None:
    """Write ``text`` to a temporary file beside ``path``, fsync, rename over ``path``. A failure leaves no temporary file."""
    path = Path(path)
    tmp = path.with_name(f".tmp-{path.name}-{os.getpid()}-{threading.get_ident()}")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if fsync:
        _fsync_dir(path.parent)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ----------------------------------------------------------------------------- the run directory and its lock


def _is_lab_leftover(p: Path) -> bool:
    """A temporary directory of the lab's: it holds the partial-write tag (while being filled) or a lab manifest
    (once filled), or nothing yet. At every moment of a write one of the two exists."""
    return p.is_dir() and ((p / PARTIAL_TAG).exists() or read_manifest(p) is not None or not any(p.iterdir()))


class RunDir:
    """A run directory that the lab created (marker) and that this process alone writes (lock).

    ``RunDir.check(path, resume)`` says, without creating or locking anything, whether a run may start
    there; ``RunDir.open(path, resume)`` creates the directory (and its marker) if needed, takes the lock
    and removes only the lab's own leftovers of a crashed write. ``close()`` releases the lock.
    """

    def __init__(self, path: Path, lock_fd: int) -> None:
        self.path, self._lock_fd = path, lock_fd

    # -- checks that create nothing ------------------------------------------------------------------

    @staticmethod
    def is_lab_run(path: str | Path) -> bool:
        return (Path(path) / MARKER).is_file()

    @staticmethod
    def has_run(path: str | Path) -> bool:
        """A run already started here: a config and at least one complete checkpoint."""
        p = Path(path)
        return (p / "run_config.json").exists() and bool(complete_checkpoints(p))

    @staticmethod
    def check(path: str | Path, resume: bool) -> None:
        p = Path(path)
        if p.exists() and not p.is_dir():
            raise RunDirError(f"out: {p} exists and is not a directory")
        if resume:
            if not p.is_dir() or not (p / "run_config.json").exists():
                raise RunDirError(f"out: {p} holds no run to resume (no run_config.json)")
        if p.is_dir() and any(p.iterdir()) and not RunDir.is_lab_run(p):
            raise RunDirError(f"out: {p} is not empty and is not a lab run (no {MARKER} marker); the lab never writes into "
                              f"a directory it did not create: choose a new or empty directory")
        if not resume and p.is_dir() and RunDir.has_run(p):
            raise RunDirError(f"out: {p} already holds a run; pass resume=True (--resume) or choose another directory")
        holder = RunDir.lock_holder(p)
        if holder is not None:
            raise RunDirError(f"out: {p} is in use by another run ({holder}); wait for it to finish or stop it")

    @staticmethod
    def lock_holder(path: str | Path) -> Optional[str]:
        """Who holds the directory's lock (as recorded in the lock file), or None if nobody does."""
        lock = Path(path) / LOCK
        if not lock.exists():
            return None
        fd = os.open(lock, os.O_RDONLY)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                try:
                    return Path(lock).read_text().strip() or "another process"
                except OSError:
                    return "another process"
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    # -- open: create, mark, lock ---------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, resume: bool) -> "RunDir":
        p = Path(path)
        cls.check(p, resume)
        fresh = not p.exists()
        p.mkdir(parents=True, exist_ok=True)
        if fresh or not any(p.iterdir()):
            atomic_write_text(p / MARKER, json.dumps({"created_by": "post-training-lab small run", "time": time.time()}) + "\n")
        if not cls.is_lab_run(p):  # raced with someone else's files
            raise RunDirError(f"out: {p} is not empty and is not a lab run (no {MARKER} marker)")
        fd = os.open(p / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise RunDirError(f"out: {p} is in use by another run ({cls.lock_holder(p) or 'another process'}); "
                                  f"wait for it to finish or stop it") from None
            raise
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode())
            # re-check under the lock: another writer may have started a run between check() and here
            if not resume and cls.has_run(p):
                raise RunDirError(f"out: {p} already holds a run; pass resume=True (--resume) or choose another directory")
            rd = cls(p, fd)
            rd.remove_leftovers()
            return rd
        except BaseException:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            raise

    def close(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    @property
    def locked(self) -> bool:
        return self._lock_fd is not None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def remove_leftovers(self) -> list[Path]:
        """Delete temporary directories of a crashed write; only those carrying the lab's partial-write tag."""
        removed = []
        for parent in (self.path, self.path / CHECKPOINTS):
            if not parent.is_dir():
                continue
            for q in parent.iterdir():
                if q.name.startswith((".tmp-", ".final.")) and _is_lab_leftover(q):
                    shutil.rmtree(q)
                    removed.append(q)
        return removed


# ----------------------------------------------------------------------------- the hash-chained ledger


def _jsonable(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "tolist"):
        return o.tolist()
    return str(o)


class ChainLedger:
    """An append-only JSON-lines ledger in which each record carries ``prev_sha256``, the SHA-256 of the
    previous line's bytes (``GENESIS`` for the first). Appends are one ``write`` + fsync; a failed append is
    rolled back to the previous length, so the file never keeps half a line.

    The chain shows an edit, deletion or reorder of any record that has a successor; the last record has
    none, so the count and hash of the last line are also kept beside the ledger (``ledger.jsonl.head``).
    Without a secret key this catches edits made by hand, not a forger who recomputes every hash."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.head_path = self.path.with_name(self.path.name + ".head")
        self._head: Optional[str] = None  # hash of the last line, once known
        self._count: Optional[int] = None

    @staticmethod
    def line_hash(line: bytes) -> str:
        return hashlib.sha256(line).hexdigest()

    def _current_head(self) -> str:
        if self._head is not None:
            return self._head
        if not self.path.exists() or self.path.stat().st_size == 0:
            return GENESIS
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):
            raise RunDirError(f"ledger: {self.path}: the last line is truncated (a crash mid-write); refusing to append after it")
        self._count = data.count(b"\n")
        return self.line_hash(data[:-1].rsplit(b"\n", 1)[-1])

    def append(self, record: dict) -> str:
        """Append ``record`` with ``prev_sha256``; returns the new line's hash."""
        rec = {k: v for k, v in record.items() if k != "prev_sha256"}
        rec["prev_sha256"] = self._current_head()
        line = json.dumps(rec, sort_keys=True, default=_jsonable, allow_nan=True).encode()
        if b"\n" in line:
            raise ValueError("record must serialise to a single line")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            try:
                n = os.write(fd, line + b"\n")
                if n != len(line) + 1:
                    raise OSError(errno.EIO, f"short write ({n} of {len(line) + 1} bytes)")
                os.fsync(fd)
            except OSError:
                os.ftruncate(fd, size)  # roll back: the ledger keeps only whole records
                raise
        finally:
            os.close(fd)
        self._head = self.line_hash(line)
        self._count = (self._count or 0) + 1
        # not fsynced: after a crash the head may lag the ledger by a record, which verify accepts
        atomic_write_text(self.head_path, json.dumps({"records": self._count, "sha256": self._head}), fsync=False)
        return self._head

    def read(self) -> tuple[list[dict], bool]:
        """``(records, truncated_tail)``, as ``lab.agentic.Ledger.read``; does not check the chain (see ``verify``)."""
        if not self.path.exists():
            return [], False
        data = self.path.read_bytes()
        truncated = bool(data) and not data.endswith(b"\n")
        out = []
        for i, ln in enumerate(data.split(b"\n")[:-1], start=1):
            try:
                out.append(json.loads(ln))
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise RunDirError(f"ledger: {self.path}: line {i} is not valid JSON") from None
        return out, truncated

    def verify(self) -> tuple[list[dict], list[str]]:
        """``(records, problems)``: every broken link of the chain, named by line; an empty list means intact."""
        problems: list[str] = []
        records: list[dict] = []
        if not self.path.exists():
            return [], [f"{self.path}: missing"]
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        if data and not data.endswith(b"\n"):
            problems.append(f"line {len(lines)}: truncated (no newline; a crash mid-write)")
        prev = GENESIS
        for i, ln in enumerate(lines[:-1], start=1):
            try:
                rec = json.loads(ln)
            except (json.JSONDecodeError, UnicodeDecodeError):
                problems.append(f"line {i}: not valid JSON")
                prev = self.line_hash(ln)
                continue
            if not isinstance(rec, dict) or "prev_sha256" not in rec:
                problems.append(f"line {i}: has no prev_sha256 (not written by the lab's chained ledger)")
            elif rec["prev_sha256"] != prev:
                problems.append(f"line {i}: prev_sha256 does not match line {i - 1} (a record was edited, deleted or reordered)"
                                if i > 1 else "line 1: prev_sha256 is not the genesis value (records before it were deleted)")
            records.append(rec)
            prev = self.line_hash(ln)
        if not records and not problems:
            problems.append("no records")
        body = lines[:-1]
        try:
            head = json.loads(self.head_path.read_text())
            n, h = int(head["records"]), str(head["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            problems.append(f"{self.head_path.name}: missing or unreadable (the last record cannot be checked)")
            return records, problems
        if n > len(body):
            problems.append(f"{len(body)} records, but {n} were written (records at the end were deleted)")
        elif n >= 1 and self.line_hash(body[n - 1]) != h:
            problems.append(f"line {n}: differs from what was written (the last record at that time was edited)")
        return records, problems


# ----------------------------------------------------------------------------- checkpoints


def checkpoint_dirs(run: str | Path) -> list[Path]:
    """``checkpoints/step-NNNNNN`` directories, oldest first (complete or not)."""
    d = Path(run) / CHECKPOINTS
    if not d.is_dir():
        return []
    return sorted((p for p in d.iterdir() if p.is_dir() and CKPT_RE.match(p.name)), key=lambda p: int(CKPT_RE.match(p.name).group(1)))


def read_manifest(ckpt: Path) -> Optional[dict]:
    try:
        m = json.loads((ckpt / MANIFEST).read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return m if isinstance(m, dict) and isinstance(m.get("files"), dict) else None


def complete_checkpoints(run: str | Path) -> list[Path]:
    """Checkpoints that carry a manifest (written last): the lab finished writing them."""
    return [p for p in checkpoint_dirs(run) if read_manifest(p) is not None]


def check_files(ckpt: Path) -> list[str]:
    """Problems of a checkpoint directory against its manifest: missing, changed or unexpected files."""
    m = read_manifest(ckpt)
    if m is None:
        return [f"{ckpt}: no readable {MANIFEST} (an incomplete or foreign checkpoint)"]
    problems = []
    for name, digest in sorted(m["files"].items()):
        f = ckpt / name
        if not f.is_file():
            problems.append(f"{ckpt}: {name} is missing")
        elif sha256_file(f) != digest:
            problems.append(f"{ckpt}: {name} was changed (SHA-256 differs from the manifest)")
    extra = sorted(p.name for p in ckpt.iterdir() if p.name not in m["files"] and p.name != MANIFEST)
    if extra:
        problems.append(f"{ckpt}: unexpected files {extra}")
    return problems


def _free_bytes(d: Path) -> Optional[int]:
    try:
        st = os.statvfs(d)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def _fsync_tree(d: Path) -> None:
    for f in d.iterdir():
        if f.is_file():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    _fsync_dir(d)


def write_checkpoint(run: RunDir, step: int, write: Callable[[Path], None], weights_sha256: str,
                     on_written: Callable[[Path], None] = lambda p: None) -> Path:
    """Write checkpoint ``step`` whole or not at all.

    ``write(tmp)`` fills a temporary directory; the manifest (SHA-256 of every file and of the weights) is
    written last, everything is fsynced, ``on_written(final_path)`` runs (the engine appends the ledger
    record there), then one ``rename`` publishes it. If anything fails (a full disk), the temporary
    directory is removed and ``CheckpointWriteError`` names the newest checkpoint that is still intact.
    """
    assert run.locked, "write_checkpoint needs the run directory's lock"
    ckdir = run.path / CHECKPOINTS
    ckdir.mkdir(exist_ok=True)
    path = ckdir / f"step-{step:06d}"
    tmp = ckdir / f".tmp-{path.name}-{os.getpid()}"
    if tmp.exists() and _is_lab_leftover(tmp):
        shutil.rmtree(tmp)
    try:
        tmp.mkdir()
        (tmp / PARTIAL_TAG).write_text("partial checkpoint written by the lab\n")
        write(tmp)
        files = {f.name: sha256_file(f) for f in sorted(tmp.iterdir()) if f.is_file() and f.name != PARTIAL_TAG}
        (tmp / MANIFEST).write_text(json.dumps({"step": step, "files": files, "weights_sha256": weights_sha256}, indent=1, sort_keys=True))
        (tmp / PARTIAL_TAG).unlink()  # from here the manifest marks the directory as the lab's
        _fsync_tree(tmp)
        on_written(path)
        if path.exists():  # a checkpoint of the same step from an earlier attempt (the lab's own, manifest-verified)
            if read_manifest(path) is None:
                raise RunDirError(f"checkpoint: {path} exists and is not a complete lab checkpoint; refusing to replace it")
            old = ckdir / f".tmp-old-{path.name}-{os.getpid()}"
            os.rename(path, old)
            os.rename(tmp, path)
            shutil.rmtree(old)
        else:
            os.rename(tmp, path)
        _fsync_dir(ckdir)
    except Exception as exc:  # OSError, or a writer's own error type (torch.save raises RuntimeError on a full disk)
        free = _free_bytes(ckdir)  # measured before the cleanup gives the space back
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, RunDirError):
            raise
        good = [p for p in complete_checkpoints(run.path) if p != path]
        where = f"the previous checkpoint {good[-1]} is intact and resumable (--resume)" if good else "no earlier checkpoint exists"
        why = getattr(exc, "strerror", None) or (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if free is not None and free < 256 * 1024 and "No space" not in why:
            why = f"No space left on device: {free} bytes free; the writer said: {why}"
        raise CheckpointWriteError(f"checkpoint: could not write step {step} in {ckdir} ({why}); "
                                   f"{where}; no partial files were left") from exc
    return path


def prune_checkpoints(run: RunDir, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` complete checkpoints (only the lab's own, recognised by their manifest)."""
    if keep < 1:
        raise ValueError(f"keep must be >= 1; got {keep}")
    done = complete_checkpoints(run.path)
    gone = done[:-keep]
    for p in gone:
        shutil.rmtree(p)
    return gone


def publish_final(run: RunDir, ckpt: Path) -> Path:
    """Make ``final/`` a copy of ``ckpt``: built under a temporary name (hard links where possible, so a full
    disk costs nothing), fsynced, then renamed into place. A crash leaves the previous ``final/`` or none."""
    fin = run.path / FINAL
    tmp = run.path / f".final.tmp-{os.getpid()}"
    if fin.exists() and not (fin / MANIFEST).exists():
        raise RunDirError(f"final: {fin} exists and is not a lab checkpoint; refusing to replace it")
    try:
        tmp.mkdir()
        (tmp / PARTIAL_TAG).write_text("")
        for f in ckpt.iterdir():
            if f.name == PARTIAL_TAG:
                continue
            try:
                os.link(f, tmp / f.name)  # checkpoint files are never modified in place: sharing them is safe
            except OSError:
                shutil.copy2(f, tmp / f.name)
        (tmp / PARTIAL_TAG).unlink()  # the manifest, now present, marks the directory as the lab's
        _fsync_tree(tmp)
        if fin.exists():
            old = run.path / f".final.old-{os.getpid()}"
            os.rename(fin, old)  # a crash between these two renames leaves no final/ and the old one in a leftover
            os.rename(tmp, fin)
            shutil.rmtree(old)
        else:
            os.rename(tmp, fin)
        _fsync_dir(run.path)
    except OSError as exc:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        raise CheckpointWriteError(f"final: could not publish {ckpt.name} as {fin} ({exc.strerror or exc}); "
                                   f"the checkpoint {ckpt} is intact") from exc
    return fin


# ----------------------------------------------------------------------------- strict loading


def weights_sha256(model) -> str:
    from lab.replay import weights_hash

    return weights_hash(model)


def _tied_names(model) -> set[str]:
    """Parameter names that are tied to the input embeddings (saved once, under the embedding's name)."""
    out, inp = model.get_output_embeddings(), model.get_input_embeddings()
    if not getattr(model.config, "tie_word_embeddings", False) or out is None or inp is None or out.weight is not inp.weight:
        return set()
    return {f"{name}.weight" for name, mod in model.named_modules() if mod is out}


def load_state_strict(model, state: dict) -> None:
    """``load_state_dict`` that refuses missing or unexpected tensors; tied weights (GPT-2's ``lm_head``) are re-tied."""
    missing, unexpected = model.load_state_dict(state, strict=False)
    tied = _tied_names(model)
    bad_missing = [k for k in missing if k not in tied]
    if bad_missing or unexpected:
        raise RunDirError(f"checkpoint: the weights do not match the model: missing {bad_missing[:5]}"
                          f"{' …' if len(bad_missing) > 5 else ''}, unexpected {list(unexpected)[:5]}; refusing a partial load")
    if tied:
        model.tie_weights()


def load_pretrained_strict(path: str | Path):
    """A local causal-LM checkpoint and its tokenizer (``local_files_only``); refuses missing, unexpected or
    mismatched tensors, and, for a lab checkpoint, weights whose hash differs from its manifest."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"model: {path} is not a checkpoint directory")
    try:
        model, info = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, output_loading_info=True)
    except Exception as exc:  # no weights file, a broken config, a truncated file: one line, never an IndexError later
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RunDirError(f"model: cannot load {path} ({type(exc).__name__}: {first})") from None
    tied = _tied_names(model)
    missing = [k for k in info.get("missing_keys", []) if k not in tied]
    if missing or info.get("unexpected_keys") or info.get("mismatched_keys") or info.get("error_msgs"):
        raise RunDirError(f"model: {path}: the weights do not match the model config (missing {missing[:5]}, unexpected "
                          f"{list(info.get('unexpected_keys', []))[:5]}, mismatched {list(info.get('mismatched_keys', []))[:3]}); "
                          f"refusing a partial load")
    m = read_manifest(path)
    if m is not None and m.get("weights_sha256") and weights_sha256(model) != m["weights_sha256"]:
        raise RunDirError(f"model: {path}: the weights' SHA-256 differs from the checkpoint's manifest (changed after it was written)")
    try:
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except Exception as exc:
        raise RunDirError(f"model: cannot load the tokenizer of {path} ({type(exc).__name__})") from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok


# ----------------------------------------------------------------------------- verify a whole run


def verify_run(path: str | Path) -> tuple[list[str], list[str]]:
    """``(facts, problems)`` for a run directory: the ledger's chain, every checkpoint against its manifest and
    against the ledger's policy stamp, ``final/``, and the base stage's run (``base/``) if there is one."""
    p = Path(path)
    if not p.is_dir():
        return [], [f"{p}: not a directory"]
    if not RunDir.is_lab_run(p):
        return [], [f"{p}: not a lab run (no {MARKER} marker)"]
    facts, problems = [], []
    records, chain = ChainLedger(p / LEDGER).verify()
    problems += [f"{p / LEDGER}: {c}" for c in chain]
    facts.append(f"{p / LEDGER}: {len(records)} records" + ("" if chain else ", hash chain intact"))
    stamps: dict[int, str] = {}
    for r in records:
        if r.get("type") == "checkpoint":
            stamps[int(r["step"])] = r.get("weights_sha256")
    for ck in checkpoint_dirs(p):
        step = int(CKPT_RE.match(ck.name).group(1))
        probs = check_files(ck)
        m = read_manifest(ck)
        if m is not None and stamps.get(step) != m.get("weights_sha256"):
            probs.append(f"{ck}: weights SHA-256 in the manifest does not match the ledger's checkpoint record for step {step}"
                         if step in stamps else f"{ck}: the ledger has no checkpoint record for step {step}")
        if not probs:
            try:  # strict load: the weights themselves must hash to the stamp (a forged manifest is caught here)
                load_pretrained_strict(ck)
            except Exception as exc:
                probs.append(f"{ck}: {exc}")
        problems += probs
        if not probs:
            facts.append(f"{ck}: files match the manifest, the weights match the ledger's policy stamp")
    fin = p / FINAL
    if fin.exists():
        probs = check_files(fin)
        problems += probs
        if not probs:
            facts.append(f"{fin}: files match its manifest")
    if (p / "base").is_dir():
        f2, p2 = verify_run(p / "base")
        facts += f2
        problems += p2
    return facts, problems
