"""The run store never loses, mixes or silently corrupts data (issue 11 §2), and the app's doors (§3).

Each fault found by trying the small-run store as a hostile user would is a test that ends in a clear
error with nothing lost. Runs here are a few steps of the tiny GPT-2, so the whole file stays fast.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from lab.smallrun import RunConfig, SmallRun
from lab.smallrun import rundir
from lab.smallrun.__main__ import main as cli
from lab.smallrun.data import DataFileError, validate_jsonl
from lab.smallrun.rundir import ChainLedger, CheckpointWriteError, RunDir, RunDirError, check_run_name, run_path, verify_run

ROOT = Path(__file__).resolve().parent.parent


def tiny(**kw) -> RunConfig:
    base = dict(algorithm="sft", steps=4, batch_size=4, eval_every=100, eval_size=4, save_every=2, model_size="tiny", seed=0)
    base.update(kw)
    return RunConfig(**base)


def tree(p: Path) -> dict:
    """Every file under ``p`` with its bytes: equal trees mean nothing was created, changed or deleted."""
    return {str(f.relative_to(p)): f.read_bytes() for f in sorted(p.rglob("*")) if f.is_file() and f.name != rundir.LOCK} if p.exists() else {}


def weights(run: SmallRun) -> dict:
    return {k: v.detach().clone() for k, v in run.model.state_dict().items()}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """One finished tiny run (4 steps, checkpoints at 2 and 4), copied by tests that tamper with it."""
    out = tmp_path_factory.mktemp("store") / "done"
    SmallRun(tiny(), out).run()
    return out


def copy_run(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".lock"))
    return dst


# ----------------------------------------------------------------------------- never touch what the lab did not create


def test_refuses_nonempty_directory_that_is_not_a_lab_run(tmp_path):
    """Reproduced: --out on a user's directory deleted its final/ and checkpoints/step-N contents."""
    user = tmp_path / "mine"
    (user / "final").mkdir(parents=True)
    (user / "final" / "thesis.tex").write_text("years of work")
    (user / "checkpoints" / "step-000004").mkdir(parents=True)
    (user / "checkpoints" / "step-000004" / "model.safetensors").write_bytes(b"my own weights")
    (user / "run_config.json").write_text("{}")
    before = tree(user)
    with pytest.raises(RunDirError, match=r"not a lab run .*marker"):
        SmallRun(tiny(), user)
    with pytest.raises(RunDirError, match="not a lab run"):
        SmallRun(tiny(), user, resume=True)
    assert tree(user) == before
    # from the CLI: one line, exit 2, nothing changed
    assert cli(["sft", "--out", str(user), "--steps", "2", "--model-size", "tiny"]) == 2
    assert tree(user) == before


def test_empty_directory_and_new_directory_are_fine(tmp_path):
    (tmp_path / "empty").mkdir()
    SmallRun(tiny(steps=2), tmp_path / "empty").run()
    assert (tmp_path / "empty" / rundir.MARKER).exists() and (tmp_path / "empty" / "final" / "model.safetensors").exists()


def test_existing_run_is_refused_without_resume_and_nothing_changes(finished, tmp_path):
    run = copy_run(finished, tmp_path / "r")
    before = tree(run)
    with pytest.raises(RunDirError, match="already holds a run"):
        SmallRun(tiny(), run)
    assert tree(run) == before


# ----------------------------------------------------------------------------- one writer per directory


def test_second_writer_gets_a_clear_error_and_ledger_is_not_interleaved(tmp_path):
    """Reproduced: two runs on the same --out both succeeded and interleaved one ledger."""
    out = tmp_path / "shared"
    first = SmallRun(tiny(steps=2), out)  # holds the lock from construction until run() returns
    with pytest.raises(RunDirError, match="in use by another run"):
        SmallRun(tiny(steps=2), out)
    # another process (the CLI) is refused as well, with exit code 2 and one line
    r = subprocess.run([sys.executable, "-m", "lab.smallrun", "sft", "--out", str(out), "--steps", "2", "--model-size", "tiny"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2 and "in use by another run" in r.stderr, r.stderr[-500:]
    assert len(r.stderr.strip().splitlines()) == 1
    first.run()
    recs, problems = ChainLedger(out / "ledger.jsonl").verify()
    assert not problems and [r["type"] for r in recs].count("config") == 1
    assert RunDir.lock_holder(out) is None  # released when the run returned


# ----------------------------------------------------------------------------- tamper-evident ledger and verify


def test_untampered_run_verifies(finished):
    facts, problems = verify_run(finished)
    assert problems == [] and any("hash chain intact" in f for f in facts)
    assert cli(["verify", str(finished)]) == 0


@pytest.mark.parametrize("tamper", ["edit", "delete", "reorder"])
def test_tampered_ledger_is_reported_on_resume_and_by_verify(finished, tmp_path, tamper, capsys):
    run = copy_run(finished, tmp_path / "t")
    f = run / "ledger.jsonl"
    lines = f.read_text().splitlines(keepends=True)
    i = next(k for k, ln in enumerate(lines) if json.loads(ln)["type"] == "step")
    if tamper == "edit":
        rec = json.loads(lines[i])
        rec["loss"] = 0.001  # a nicer loss
        lines[i] = json.dumps(rec, sort_keys=True) + "\n"
    elif tamper == "delete":
        del lines[i]
    else:
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    f.write_text("".join(lines))
    before = tree(run)
    with pytest.raises(RunDirError, match="hash chain"):
        SmallRun(RunConfig(), run, resume=True)
    assert tree(run) == before  # refused before anything was appended
    capsys.readouterr()
    assert cli(["verify", str(run)]) == 1
    assert "prev_sha256 does not match" in capsys.readouterr().out


def test_chain_ledger_refuses_to_append_after_a_truncated_line(tmp_path):
    led = ChainLedger(tmp_path / "l.jsonl")
    led.append({"type": "a", "text": "two\nlines"})  # escaped by JSON: still one line
    with open(tmp_path / "l.jsonl", "ab") as f:
        f.write(b'{"type": "b", "half')  # a crash mid-write
    with pytest.raises(RunDirError, match="truncated"):
        ChainLedger(tmp_path / "l.jsonl").append({"type": "c"})
    recs, problems = ChainLedger(tmp_path / "l.jsonl").verify()
    assert [r["type"] for r in recs] == ["a"] and "truncated" in problems[0]


# ----------------------------------------------------------------------------- checkpoints: verified, strict, kept K


def test_checkpoint_with_a_tensor_removed_is_refused(finished, tmp_path):
    """Reproduced: a checkpoint with a tensor removed resumed (non-strict load)."""
    from safetensors.torch import load_file, save_file

    run = copy_run(finished, tmp_path / "t")
    ck = rundir.complete_checkpoints(run)[-1]
    sd = load_file(ck / "model.safetensors")
    sd.pop(sorted(sd)[-1])
    save_file(sd, ck / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(RunDirError, match="model.safetensors was changed"):
        SmallRun(RunConfig(), run, resume=True)
    # an attacker who also rewrites the manifest meets the strict load
    m = json.loads((ck / "manifest.json").read_text())
    m["files"]["model.safetensors"] = rundir.sha256_file(ck / "model.safetensors")
    (ck / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(RunDirError, match="missing"):
        SmallRun(RunConfig(), run, resume=True)


def test_changed_weights_are_refused_against_the_ledger_stamp(finished, tmp_path):
    from safetensors.torch import load_file, save_file

    run = copy_run(finished, tmp_path / "t")
    ck = rundir.complete_checkpoints(run)[-1]
    sd = load_file(ck / "model.safetensors")
    k = sorted(sd)[0]
    sd[k] = sd[k] + 0.01
    save_file(sd, ck / "model.safetensors", metadata={"format": "pt"})
    m = json.loads((ck / "manifest.json").read_text())
    m["files"]["model.safetensors"] = rundir.sha256_file(ck / "model.safetensors")
    (ck / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(RunDirError, match="policy stamp"):
        SmallRun(RunConfig(), run, resume=True)
    _, problems = verify_run(run)
    assert any("weights' SHA-256 differs" in p for p in problems), problems


def test_keeps_the_last_k_checkpoints_and_final(tmp_path):
    """Reproduced: every checkpoint was kept (150 steps = 209 MB)."""
    out = tmp_path / "k"
    SmallRun(tiny(steps=10, save_every=1, keep=2), out).run()
    assert [p.name for p in rundir.checkpoint_dirs(out)] == ["step-000009", "step-000010"]
    assert (out / "final" / "model.safetensors").exists()
    assert not [p for p in out.rglob(".tmp-*")]
    assert verify_run(out)[1] == []


def test_leftovers_of_a_crash_are_cleaned_and_user_files_stay(finished, tmp_path):
    """A crash mid-write leaves the previous final/ intact (or none); a broken leftover never crashes later."""
    run = copy_run(finished, tmp_path / "t")
    partial = run / "checkpoints" / ".tmp-step-000006-999"
    partial.mkdir()
    (partial / rundir.PARTIAL_TAG).write_text("")
    (partial / "model.safetensors").write_bytes(b"half")
    crashed_final = run / ".final.tmp-999"
    crashed_final.mkdir()
    (crashed_final / rundir.PARTIAL_TAG).write_text("")
    note = run / "checkpoints" / ".tmp-notes-of-mine"  # not the lab's: no tag, no manifest
    note.mkdir()
    (note / "x.txt").write_text("keep me")
    SmallRun(RunConfig(), run, resume=True).run()  # resumes at the last step: nothing to train, final republished
    assert not partial.exists() and not crashed_final.exists()
    assert (note / "x.txt").read_text() == "keep me"
    assert verify_run(run)[1] == []


def test_broken_final_as_a_starting_model_is_a_clear_error(finished, tmp_path):
    """A directory with a config but no weights (a broken copy) gives one line, not an IndexError."""
    broken = tmp_path / "broken"
    broken.mkdir()
    shutil.copy(finished / "final" / "config.json", broken / "config.json")
    with pytest.raises(ValueError, match="model"):
        SmallRun(tiny(algorithm="grpo", model=str(broken), batch_size=2, group_size=2), tmp_path / "g")
    assert not (tmp_path / "g").exists()


def test_final_is_replaced_atomically(finished, tmp_path):
    run = copy_run(finished, tmp_path / "t")
    rd = RunDir.open(run, resume=True)
    try:
        old_final = tree(run / "final")
        ck = rundir.complete_checkpoints(run)[0]
        rundir.publish_final(rd, ck)
        assert tree(run / "final") == tree(ck) and tree(run / "final") != old_final
        assert not list(run.glob(".final.*"))
    finally:
        rd.close()


def _can_mount_tmpfs(d: Path) -> bool:
    if os.geteuid() != 0:
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(d)], capture_output=True)
    if r.returncode:
        return False
    subprocess.run(["umount", str(d)], check=True)
    return True


def test_full_disk_keeps_the_previous_checkpoint_usable(tmp_path):
    """Reproduced: a full disk left .tmp files and an unresumable run. Now: a clear error naming the intact
    checkpoint, no stray temporary files, and the run resumes once there is space."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if not _can_mount_tmpfs(disk):
        pytest.skip("needs root and tmpfs mounts to simulate a full disk")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], check=True)
    try:
        out = disk / "run"
        cfg = tiny(steps=8, save_every=2, keep=3)
        with pytest.raises(CheckpointWriteError) as ei:
            SmallRun(cfg, out).run()
        msg = str(ei.value)
        assert "No space left on device" in msg and "intact and resumable" in msg
        good = rundir.complete_checkpoints(out)
        assert good and good[-1].name in msg
        assert not [p for p in out.rglob("*") if p.name.startswith((".tmp", ".final."))], "stray temporary files"
        assert verify_run(out)[1] == []
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)  # space again
        resumed = SmallRun(RunConfig(), out, resume=True)
        assert resumed.step == int(good[-1].name.split("-")[1])
        resumed.run()
        assert resumed.step == 8 and (out / "final" / "model.safetensors").exists()
        assert verify_run(out)[1] == []
    finally:
        subprocess.run(["umount", "-l", str(disk)])


def test_resume_after_checkpoint_rotation_is_exact(tmp_path):
    cfg = tiny(steps=8, save_every=1, keep=2, batch_size=8)
    full = SmallRun(cfg, tmp_path / "full")
    full.run()
    stop = threading.Event()
    part = SmallRun(cfg, tmp_path / "part", stop_event=stop,
                    callback=lambda e: stop.set() if e["type"] == "step" and e["step"] == 5 else None)
    part.run()
    resumed = SmallRun(RunConfig(), tmp_path / "part", resume=True)
    resumed.run()
    a, b = weights(full), weights(resumed)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert verify_run(tmp_path / "part")[1] == []


# ----------------------------------------------------------------------------- the whole config is validated first


BAD_CLI = [
    (["--lr", "inf"], "lr must be a finite number"),
    (["--epsilon", "5"], "epsilon must be in (0, 1)"),
    (["--device", "bogus"], "device must be auto, cpu, cuda"),
    (["--data", "/nonexistent/file.jsonl"], "data: file not found"),
    (["--keep", "0"], "keep must be >= 1"),
    (["--kl-beta", "nan"], "kl_beta must be a finite number"),
]


@pytest.mark.parametrize("args,message", BAD_CLI)
def test_bad_config_is_one_line_exit_2_nothing_created(tmp_path, capsys, args, message):
    out = tmp_path / "never"
    assert cli(["grpo", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def test_cuda_without_cuda_is_refused(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert cli(["sft", "--device", "cuda", "--out", str(tmp_path / "n")]) == 2
    err = capsys.readouterr().err.strip()
    assert "CUDA is not available" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "n").exists()


def test_garbage_model_config_and_long_prompt_are_refused(tmp_path, capsys, finished):
    bad = tmp_path / "bad_model"
    bad.mkdir()
    (bad / "config.json").write_text("{not json")
    assert cli(["grpo", "--model", str(bad), "--out", str(tmp_path / "n1")]) == 2
    err = capsys.readouterr().err.strip()
    assert "model:" in err and "not valid JSON" in err and len(err.splitlines()) == 1
    # a prompt longer than the model's context (GPT-2 n_positions = 128) names its line
    data = tmp_path / "long.jsonl"
    data.write_text(json.dumps({"prompt": "rev ab=", "answer": "ba"}) + "\n" + json.dumps({"prompt": "x" * 200, "answer": "y"}) + "\n")
    assert cli(["grpo", "--data", str(data), "--model", str(finished / "final"), "--out", str(tmp_path / "n2")]) == 2
    err = capsys.readouterr().err.strip()
    assert "data: line 2" in err and "context of 128" in err and len(err.splitlines()) == 1
    # resume with a garbage run_config.json
    run = tmp_path / "r"
    run.mkdir()
    (run / rundir.MARKER).write_text("{}")
    (run / "run_config.json").write_text("garbage")
    assert cli(["sft", "--resume", "--out", str(run)]) == 2
    assert "run_config.json is not a valid run config" in capsys.readouterr().err
    assert not (tmp_path / "n1").exists() and not (tmp_path / "n2").exists()


def test_bad_utf8_names_its_line(tmp_path):
    f = tmp_path / "d.jsonl"
    f.write_bytes(b'{"prompt": "rev ab=", "completion": "ba"}\n{"prompt": "\xff\xfe", "completion": "x"}\n')
    recs, bad = validate_jsonl(f, "sft")
    assert len(recs) == 1 and bad[0].line == 2 and "UTF-8" in bad[0].reason
    with pytest.raises(DataFileError, match="line 2: not valid UTF-8"):
        SmallRun(tiny(data=str(f)), tmp_path / "n")
    assert not (tmp_path / "n").exists()


@pytest.mark.parametrize("field,value,msg", [("lr", float("inf"), "lr"), ("epsilon", 5.0, "epsilon"), ("steps", 2.5, "steps"),
                                             ("group_size", 1, "group_size"), ("device", "bogus", "device"), ("scale", "x", "scale"),
                                             ("task", "chess", "task"), ("epsilon_high", -1.0, "epsilon_high"), ("seed", True, "seed")])
def test_runconfig_names_the_bad_field(field, value, msg):
    with pytest.raises(ValueError, match=msg):
        RunConfig(algorithm="grpo", **{field: value})


# ----------------------------------------------------------------------------- run names: a name, not a path


@pytest.mark.parametrize("name", ["../evil", "/etc", "a/b", "..", "x/../../y", "", " ", "a\\b", ".hidden", "a" * 101])
def test_run_name_is_a_name_not_a_path(tmp_path, name):
    with pytest.raises(ValueError, match="run name"):
        run_path(tmp_path, name)


def test_run_name_symlink_cannot_lead_out(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "link").symlink_to(tmp_path)
    with pytest.raises(ValueError, match="outside the runs directory"):
        run_path(runs, "link")
    assert check_run_name("grpo-reversal-1.2_a") == "grpo-reversal-1.2_a"


# ----------------------------------------------------------------------------- the import race and the address


def test_two_starts_at_once_in_a_fresh_process_have_no_import_race():
    """Reproduced: two Starts at once in a fresh server: ImportError: cannot import name 'PreTrainedTokenizerFast'.
    Four threads reach transformers at the same moment (a barrier), as the page's run threads did."""
    code = (
        "import threading, lab.smallrun.live\n"
        "from lab.models import char_tokenizer, tiny_gpt2\n"
        "errs, bar = [], threading.Barrier(4)\n"
        "def go():\n"
        "    bar.wait()\n"
        "    try:\n"
        "        tok = char_tokenizer(); tiny_gpt2(len(tok))\n"
        "    except Exception as e:\n"
        "        errs.append(repr(e))\n"
        "ts = [threading.Thread(target=go) for _ in range(4)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "print('ERRORS', errs)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "ERRORS []" in r.stdout, r.stdout + r.stderr[-2000:]


def test_two_page_runs_at_once_both_finish(tmp_path):
    from lab.smallrun.live import start_run

    runs = [start_run(tiny(steps=2, seed=i), tmp_path / f"r{i}") for i in range(2)]
    for r in runs:
        r.wait(timeout=300)  # a worker process now, not a thread
    assert [r.state for r in runs] == ["done", "done"], [r.error for r in runs]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> list[str]:
    """Local addresses listening on ``port``, from /proc/net/tcp{,6} (state 0A = LISTEN)."""
    found = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            addr, p = local.split(":")
            if state == "0A" and int(p, 16) == port:
                found.append(addr)
    return found


def test_streamlit_run_directly_binds_localhost():
    """`streamlit run app.py` without lab.sh reads .streamlit/config.toml and listens on 127.0.0.1 only."""
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs /proc/net/tcp")
    port = _free_port()
    p = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        end = time.time() + 120
        while time.time() < end and not _listening(port):
            time.sleep(0.5)
        addrs = _listening(port)
        assert addrs, "streamlit never listened"
        # 0100007F is 127.0.0.1 in /proc's little-endian hex; 00000000 would be every interface
        assert addrs == ["0100007F"], addrs
    finally:
        p.terminate()
        p.wait(timeout=30)


# ----------------------------------------------------------------------------- properties (no model: fast)

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

records = hst.lists(hst.dictionaries(hst.text(min_size=1, max_size=5), hst.one_of(hst.integers(), hst.floats(allow_nan=False), hst.text(max_size=8)),
                                     max_size=4), min_size=2, max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recs=records, data=hst.data())
def test_property_any_edit_delete_or_reorder_breaks_the_chain(tmp_path_factory, recs, data):
    d = tmp_path_factory.mktemp("chain")
    led = ChainLedger(d / "l.jsonl")
    for r in recs:
        led.append({"type": "x", **{f"k{k}": v for k, v in r.items()}})
    got, problems = led.verify()
    assert problems == [] and len(got) == len(recs)
    lines = (d / "l.jsonl").read_bytes().split(b"\n")[:-1]
    i = data.draw(hst.integers(0, len(lines) - 1))
    kind = data.draw(hst.sampled_from(["edit", "delete", "swap"]))
    if kind == "edit":
        rec = json.loads(lines[i])
        rec["type"] = "y"
        lines[i] = json.dumps(rec, sort_keys=True).encode()
    elif kind == "delete":
        del lines[i]
    else:
        j = (i + 1) % len(lines)
        if lines[i] == lines[j]:
            return
        lines[i], lines[j] = lines[j], lines[i]
    (d / "l.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    assert ChainLedger(d / "l.jsonl").verify()[1], f"{kind} of line {i + 1} went unnoticed"


@settings(max_examples=200, deadline=None)
@given(name=hst.text(max_size=30))
def test_property_a_valid_run_name_is_one_component_inside_the_runs_dir(name):
    root = Path("/tmp/runs-root-that-need-not-exist")
    try:
        p = run_path(root, name)
    except ValueError as exc:
        assert "run name" in str(exc)
        return
    assert p.parent == root and p.name == name.strip() and p.name not in (".", "..") and "/" not in p.name


def test_failing_write_without_root_keeps_the_previous_checkpoint(tmp_path):
    """The same guarantee where tmpfs cannot be mounted: after the first checkpoint the process's file-size
    limit (RLIMIT_FSIZE) is lowered, so the kernel fails the next checkpoint's writes (EFBIG) for real."""
    code = (
        "import resource, signal, sys, torch\n"
        "torch.set_num_threads(1)\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write returns EFBIG instead of killing us\n"
        "from lab.smallrun import RunConfig, SmallRun\n"
        "from lab.smallrun.rundir import CheckpointWriteError\n"
        "def cb(e):\n"
        "    if e['type'] == 'checkpoint' and e['step'] == 2:\n"
        "        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, resource.RLIM_INFINITY))\n"
        "cfg = RunConfig(algorithm='sft', steps=6, batch_size=4, eval_every=100, eval_size=4, save_every=2, model_size='tiny')\n"
        "try:\n"
        "    SmallRun(cfg, sys.argv[1], callback=cb).run()\n"
        "except CheckpointWriteError as exc:\n"
        "    print('REFUSED', exc)\n")
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "REFUSED" in r.stdout, r.stdout + r.stderr[-2000:]
    assert "step-000002 is intact and resumable" in r.stdout
    assert [p.name for p in rundir.checkpoint_dirs(out)] == ["step-000002"]
    assert not [p for p in out.rglob("*") if p.name.startswith((".tmp", ".final."))], "stray temporary files"
    resumed = SmallRun(RunConfig(), out, resume=True)
    assert resumed.step == 2
    resumed.run()
    assert resumed.step == 6 and verify_run(out)[1] == []
