"""The training loop of one stage, with no algorithm-specific code.

Read top to bottom: device and threads → preflight (the whole config checked before anything is created) →
the run directory (marker, lock, hash-chained ledger) → what an algorithm may ask of the loop (a policy and
its tokenizer, a frozen copy, autocast, ``optimize(loss) -> grad_norm``) → held-out evaluation → checkpoints
(save, strict load, resume) → the step loop → the summary.

An algorithm (``lab.smallrun.algos``) is a short body behind a small interface: ``prepare(ctx, resume)``,
``step(step) -> (metrics, samples | None)``, ``evaluate() -> dict``; it declares its headline ``metric``, the
modules it trains (``trained()``) and whether it needs a base SFT stage (``lab.smallrun.pipeline`` runs that).

Reproducibility: each step's data and sampling depend only on (seed, step); checkpoints hold the weights
(safetensors), optimizer, scheduler and RNG states (and any algorithm state), loaded with ``weights_only=True``;
a resumed run therefore continues exactly (bitwise on CPU).
"""

from __future__ import annotations

import copy
import hashlib
import json
import platform
import random
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Optional

import torch

from lab.models import char_tokenizer, tiny_gpt2
from lab.replay import PolicyStamp
from lab.smallrun import rundir
from lab.smallrun.config import MODEL_SIZES, RunConfig, validate_environment
from lab.smallrun.decoding import Codec, sample
from lab.smallrun.rundir import ChainLedger, CheckpointWriteError, RunDir, RunDirError
from lab.smallrun.tasks import get_task

Callback = Callable[[dict], None]


def _import_heavy_modules() -> None:
    """Import transformers' lazily-loaded classes now, in the importing (main) thread.

    ``transformers`` resolves its names on first access; two threads that touch it first at the same moment
    (two Starts at once in a fresh Streamlit server) made one fail with ``ImportError: cannot import name
    'PreTrainedTokenizerFast'``. Resolving them once here, before any training thread exists, removes the race.
    """
    import safetensors.torch  # noqa: F401
    import tokenizers  # noqa: F401
    import transformers
    from transformers import (AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel,  # noqa: F401
                              PreTrainedTokenizerFast)


_import_heavy_modules()

# ----------------------------------------------------------------------------- device, threads, seeds


def pick_device(name: str = "auto") -> torch.device:
    """cuda → mps → cpu when ``name`` is "auto"."""
    if name != "auto":
        return torch.device(name)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def pick_threads(device: torch.device, requested: int = 0) -> int:
    """Tiny models on a CPU run several times faster on one thread than on two (less sync overhead)."""
    n = requested if requested > 0 else 1
    if device.type == "cpu":
        torch.set_num_threads(n)
    return n


def step_seed(seed: int, step: int, purpose: str) -> int:
    """A seed that depends only on (run seed, step, purpose): resuming at step k replays the same data."""
    return int(hashlib.sha256(f"{seed}:{step}:{purpose}".encode()).hexdigest()[:15], 16)


def versions() -> dict:
    import transformers

    v = {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__}
    try:
        v["code_revision"] = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent,
                                            timeout=5).stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        v["code_revision"] = "unknown"
    return v


def preflight(config: RunConfig, out: str | Path, resume: bool = False) -> tuple[RunConfig, dict]:
    """``(config, environment)`` if a run may start (or resume) in ``out``; one clear ``ValueError`` otherwise.
    Creates, locks and changes nothing (the page calls it before starting a background run)."""
    out = Path(out)
    if resume:
        RunDir.check(out, resume=True)
        try:
            config = RunConfig.from_dict(json.loads((out / "run_config.json").read_text(encoding="utf-8")))
        except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as exc:
            raise ValueError(f"out: {out / 'run_config.json'} is not a valid run config ({exc})") from None
    env = validate_environment(config)
    RunDir.check(out, resume)
    return config, env


# ----------------------------------------------------------------------------- one stage


class Loop:
    """One stage in one run directory. Construction locks the directory (and, on resume, verifies the ledger);
    ``prepare()`` builds the algorithm's models (from ``start_from``) and loads the newest checkpoint on resume;
    ``run()`` trains until ``steps`` or a stop request and releases the lock.

    The loop is also the algorithm's context (``ctx``): it offers ``cfg``, ``device``, ``out``, ``task``,
    ``records`` (the validated ``--data`` file), ``load_policy()``, ``frozen_copy()``, ``autocast()``,
    ``optimize(loss)``, ``step_seed(step, purpose)``, ``tokenizer`` and ``codec``.
    """

    def __init__(self, config: RunConfig, out: str | Path, callback: Optional[Callback] = None,
                 stop_event: Optional[threading.Event] = None, resume: bool = False, env: Optional[dict] = None,
                 start_from: Optional[str] = None) -> None:
        from lab.smallrun.algos import ALGORITHMS

        self.out = Path(out)
        self.callback = callback or (lambda e: None)
        self.stop_event = stop_event or threading.Event()
        # 1. everything is checked before anything is created: config, device, data, model, context, directory
        if env is None:
            config, env = preflight(config, self.out, resume)
        self.cfg = config
        self.task = get_task(config.task)
        self.device = env["device"]
        self.records = env["records"]
        self.start_from = start_from if start_from is not None else config.model
        # 2. the directory: created with the lab's marker, locked for this writer alone
        self.rundir = RunDir.open(self.out, resume)
        try:
            self.threads = pick_threads(self.device, config.threads)
            self.use_autocast = self.device.type == "cuda" and config.bf16 and torch.cuda.is_bf16_supported()
            self.ledger = ChainLedger(self.out / rundir.LEDGER)
            self._ledger_records: list[dict] = []
            # a run stopped during its base stage never started this stage (no ledger, no checkpoint): start it afresh
            started = (self.out / rundir.LEDGER).exists() or bool(rundir.complete_checkpoints(self.out))
            if resume and started:  # a tampered ledger is reported before anything is loaded or appended
                self._ledger_records, problems = self.ledger.verify()
                if problems:
                    raise RunDirError(f"ledger: {self.out / rundir.LEDGER} fails its hash chain ({'; '.join(problems[:3])}"
                                      f"{' …' if len(problems) > 3 else ''}); refusing to resume. "
                                      f"See: python -m lab.smallrun verify {self.out}")
            self.resume = resume and started
            self.step = 0
            self.history: list[dict] = []
            self._grad_norms: list[float] = []
            self._versions = versions()
            if not resume:
                rundir.atomic_write_text(self.out / "run_config.json", json.dumps(config.to_dict(), indent=2))
            self.algo = ALGORITHMS[config.algorithm]()
            self.prepared = False
        except BaseException:
            self.rundir.close()
            raise

    # -- what an algorithm asks of the loop ----------------------------------------------------------

    def load_policy(self):
        """``(model, tokenizer)`` on the device: the checkpoint in ``start_from``, or a fresh tiny GPT-2 with the
        character tokenizer. Sets ``ctx.tokenizer`` and ``ctx.codec`` (the run's tokenizer is the policy's)."""
        if self.start_from is None:
            tok = char_tokenizer()
            n_layer, n_head, n_embd = MODEL_SIZES[self.cfg.model_size]
            model = tiny_gpt2(len(tok), n_layer=n_layer, n_head=n_head, n_embd=n_embd, seed=self.cfg.seed, pad_token_id=tok.pad_token_id,
                              eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id)
        else:
            model, tok = rundir.load_pretrained_strict(self.start_from)
        self.tokenizer, self.codec = tok, Codec(tok, self.device)
        return model.to(self.device), tok

    def frozen_copy(self, model):
        """A frozen reference: the starting checkpoint loaded again (or a copy of a fresh model), eval mode, no grads."""
        ref = rundir.load_pretrained_strict(self.start_from)[0] if self.start_from else copy.deepcopy(model)
        ref = ref.to(self.device).eval()
        for p in ref.parameters():
            p.requires_grad_(False)
        return ref

    def autocast(self):
        """bf16 autocast on CUDA (``cfg.bf16``); a no-op elsewhere."""
        return torch.autocast("cuda", dtype=torch.bfloat16) if self.use_autocast else torch.autocast("cpu", enabled=False)

    def step_seed(self, step: int, purpose: str) -> int:
        return step_seed(self.cfg.seed, step, purpose)

    def optimize(self, loss: torch.Tensor) -> float:
        """One optimizer step: zero_grad, backward, clip to ``max_grad_norm`` (0: no clipping), AdamW step, schedule.
        Returns the gradient norm before clipping; the loop logs the mean over the step's calls as ``grad_norm``."""
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        params = [p for g in self.opt.param_groups for p in g["params"]]
        clip = self.cfg.max_grad_norm if self.cfg.max_grad_norm > 0 else float("inf")
        norm = float(torch.nn.utils.clip_grad_norm_(params, clip))
        self.opt.step()
        self.sched.step()
        self._grad_norms.append(norm)
        return norm

    # -- build -------------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Seed, let the algorithm build its models and data, create AdamW + the warm-up schedule, and load the
        newest checkpoint on resume (or record the config in the ledger on a fresh start)."""
        try:
            torch.manual_seed(self.cfg.seed)
            random.seed(self.cfg.seed)
            self.algo.prepare(self, self.resume)
            self.opt = torch.optim.AdamW(self.algo.parameters(), lr=self.cfg.lr, weight_decay=self.cfg.weight_decay, foreach=True)
            warm = max(self.cfg.warmup_steps, 0)
            self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0)
            self.heldout = self.task.heldout(self.cfg.eval_size)
            if self.resume:
                self._load_latest()
            else:
                main = next(iter(self.algo.trained().values()))
                self.ledger.append({"type": "config", "config": self.cfg.to_dict(), "seed": self.cfg.seed, "versions": self._versions,
                                    "device": str(self.device), "threads": self.threads, "start_from": self.start_from or "fresh GPT-2",
                                    "parameters": sum(p.numel() for p in main.parameters()), "time": time.time()})
            self.prepared = True
        except BaseException:
            self.rundir.close()
            raise

    @property
    def model(self):
        """The main trained module (the policy, for policy algorithms)."""
        return next(iter(self.algo.trained().values()))

    # -- evaluation ----------------------------------------------------------------------------------

    @torch.no_grad()
    def evaluate(self) -> dict:
        """Held-out greedy exact match (``eval/accuracy``) for algorithms with a policy, plus the algorithm's own."""
        out, greedy = {}, None
        if self.algo.greedy_eval:
            ver = self.task.verifier()
            greedy = []  # [(Example, greedy completion)]: decoded once, shared with the algorithm's own evaluation
            for i in range(0, len(self.heldout), 100):
                chunk = self.heldout[i : i + 100]
                ids, mask, _ = sample(self.algo.policy, self.codec, [e.prompt for e in chunk], self.cfg.max_new_tokens, greedy=True)
                greedy += list(zip(chunk, self.codec.decode(ids, mask)))
            out["eval/accuracy"] = sum(ver.verify(e.prompt, t, answer=e.answer).decision for e, t in greedy) / len(self.heldout)
        out.update(self.algo.evaluate(greedy))
        return out

    # -- checkpoints ---------------------------------------------------------------------------------

    def save_checkpoint(self, final: bool = False) -> Path:
        """The main module with ``save_pretrained`` (safetensors; loads with plain transformers) + tokenizer, any
        further trained module as ``NAME.safetensors`` + ``NAME.config.json``, and optimizer, scheduler, RNG
        states, step and algorithm state in ``trainer_state.pt`` — written whole or not at all
        (``rundir.write_checkpoint``); the ledger records the policy stamp; only the newest ``keep`` are kept."""
        modules = self.algo.trained()
        main, extras = next(iter(modules.values())), list(modules.items())[1:]
        stamp = PolicyStamp.from_parts(main, self.tokenizer, {"format": "prompt+completion", "eos": self.tokenizer.eos_token},
                                       {"eval": "greedy", "train_temperature": self.cfg.temperature, "max_new_tokens": self.cfg.max_new_tokens},
                                       self._versions["code_revision"])
        state = {"step": self.step, "optimizer": self.opt.state_dict(), "scheduler": self.sched.state_dict(),
                 "torch_rng": torch.get_rng_state(), "python_rng": list(random.getstate()[1]), "python_rng_version": random.getstate()[0],
                 "history": json.dumps(self.history), "algorithm": self.algo.state_dict()}
        if torch.cuda.is_available():
            state["cuda_rng"] = torch.cuda.get_rng_state_all()

        def write(tmp: Path) -> None:
            from safetensors.torch import save_model

            main.save_pretrained(tmp, safe_serialization=True)
            self.tokenizer.save_pretrained(tmp)
            for name, mod in extras:
                save_model(mod, str(tmp / f"{name}.safetensors"))
                if getattr(mod, "config", None) is not None:
                    (tmp / f"{name}.config.json").write_text(mod.config.to_json_string())
            torch.save(state, tmp / "trainer_state.pt")

        def record(path: Path) -> None:  # appended before the rename: a recorded stamp always precedes its checkpoint
            self.ledger.append({"type": "checkpoint", "step": self.step, "path": str(path), "policy_stamp": stamp.digest,
                                "weights_sha256": stamp.weights, "time": time.time()})

        path = rundir.write_checkpoint(self.rundir, self.step, write, stamp.weights, record)
        rundir.prune_checkpoints(self.rundir, self.cfg.keep)
        if final:
            rundir.publish_final(self.rundir, path)
        self.callback({"type": "checkpoint", "step": self.step, "path": str(path)})
        return path

    def _load_latest(self) -> None:
        """Resume from the newest complete checkpoint: files checked against its manifest, strict load, and the
        loaded weights' hash checked against the ledger's policy stamp for that step."""
        ckpts = rundir.complete_checkpoints(self.out)
        if not ckpts:
            raise RunDirError(f"out: {self.out} has no complete checkpoint to resume from; start it again without --resume")
        path = ckpts[-1]
        problems = rundir.check_files(path)
        if problems:
            raise RunDirError(f"checkpoint: {problems[0]}; refusing to resume from it")
        from safetensors.torch import load_file

        modules = list(self.algo.trained().items())
        rundir.load_state_strict(modules[0][1], load_file(path / "model.safetensors", device=str(self.device)))
        for name, mod in modules[1:]:
            f = path / f"{name}.safetensors"
            if not f.is_file():
                raise RunDirError(f"checkpoint: {path} has no {f.name} for the trained module {name!r}; refusing to resume")
            rundir.load_state_strict(mod, load_file(f, device=str(self.device)))
        step = int(rundir.CKPT_RE.match(path.name).group(1))
        stamps = [r for r in self._ledger_records if r.get("type") == "checkpoint" and r.get("step") == step]
        if not stamps:
            raise RunDirError(f"ledger: no checkpoint record for step {step} ({path}); refusing to resume from an unrecorded checkpoint")
        got = rundir.weights_sha256(modules[0][1])
        if got != stamps[-1].get("weights_sha256"):
            raise RunDirError(f"checkpoint: the weights of {path} do not match the ledger's policy stamp for step {step} "
                              f"(SHA-256 {got[:12]}… vs {str(stamps[-1].get('weights_sha256'))[:12]}…); refusing to resume")
        state = torch.load(path / "trainer_state.pt", weights_only=True, map_location="cpu")  # never unpickles arbitrary objects
        self.opt.load_state_dict(state["optimizer"])
        self.sched.load_state_dict(state["scheduler"])
        self.algo.load_state_dict(state.get("algorithm", {}))
        torch.set_rng_state(state["torch_rng"])
        random.setstate((state["python_rng_version"], tuple(state["python_rng"]), None))
        if "cuda_rng" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        self.step = int(state["step"])
        self.history = json.loads(state["history"])
        self.ledger.append({"type": "resume", "step": self.step, "from": str(path), "time": time.time()})

    # -- the loop ------------------------------------------------------------------------------------

    def run(self) -> dict:
        """Train from the current step to ``steps``; returns a summary with held-out results before → after.
        The run directory's lock is released when it returns (or fails)."""
        if not self.rundir.locked:
            raise RunDirError(f"out: this SmallRun on {self.out} has already run; create a new one (resume=True) to continue")
        try:
            if not self.prepared:
                self.prepare()
            return self._run()
        except CheckpointWriteError:
            raise
        except OSError as exc:  # e.g. the ledger cannot grow on a full disk
            good = rundir.complete_checkpoints(self.out)
            raise CheckpointWriteError(f"out: writing to {self.out} failed at step {self.step} ({exc.strerror or exc}); "
                                       + (f"the checkpoint {good[-1]} is intact and resumable (--resume)" if good else "no checkpoint was written yet")) from exc
        finally:
            self.rundir.close()

    def _run(self) -> dict:
        cfg = self.cfg
        if self.step == 0 and not any(h.get("type") == "eval" for h in self.history):
            self._record({"type": "eval", "step": 0, **self.evaluate()})
        t0 = time.perf_counter()
        start_step = self.step
        while self.step < cfg.steps:
            ts = time.perf_counter()
            self._grad_norms = []
            metrics, samples = self.algo.step(self.step)
            self.step += 1
            done = self.step - start_step
            ev = {"type": "step", "step": self.step, "total_steps": cfg.steps, "lr": self.sched.get_last_lr()[0],
                  "step_time": time.perf_counter() - ts, "steps_per_second": done / (time.perf_counter() - t0), **metrics}
            if self._grad_norms:
                ev["grad_norm"] = sum(self._grad_norms) / len(self._grad_norms)
            self._record(ev)
            if samples is not None:  # labelled as the step record whose metrics they produced (the charts' x)
                self.callback({"type": "samples", "step": self.step, **samples})
            if self.step % cfg.eval_every == 0 or self.step == cfg.steps:
                self._record({"type": "eval", "step": self.step, **self.evaluate()})
            if self.stop_event.is_set():
                self.save_checkpoint()
                self.callback({"type": "stopped", "step": self.step})
                return self.summary(stopped=True)
            if self.step % cfg.save_every == 0 and self.step < cfg.steps:
                self.save_checkpoint()
        self.save_checkpoint(final=True)
        s = self.summary()
        self.ledger.append({"type": "summary", **s, "time": time.time()})
        self.callback({"type": "done", **s})
        return s

    def _record(self, ev: dict) -> None:
        self.history.append(ev)
        self.ledger.append(ev)
        self.callback(ev)

    def summary(self, stopped: bool = False) -> dict:
        evals = [h for h in self.history if h["type"] == "eval"]
        key = self.algo.metric
        return {"algorithm": self.cfg.algorithm, "task": self.cfg.task, "steps": self.step, "stopped": stopped,
                "before": evals[0].get(key) if evals else None, "after": evals[-1].get(key) if evals else None,
                "metric": key, "accuracy_before": evals[0].get("eval/accuracy") if evals else None,
                "accuracy_after": evals[-1].get("eval/accuracy") if evals else None,
                "margin_after": evals[-1].get("eval/rewards/margins") if evals else None,
                # runs against a proxy (--reward-model or the hackable checker): the proxy's own held-out score
                "proxy_before": evals[0].get("eval/proxy_reward") if evals else None,
                "proxy_after": evals[-1].get("eval/proxy_reward") if evals else None}
