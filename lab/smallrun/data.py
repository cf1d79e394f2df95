"""JSONL data files in TRL's dataset formats, validated line by line.

- SFT: ``{"prompt": str, "completion": str}`` or ``{"messages": [{"role", "content"}, ...]}``
- preference: ``{"prompt": str, "chosen": str, "rejected": str}``
- RL: ``{"prompt": str, "answer": str}`` (the verifier's field)

``validate_jsonl`` reports every bad line with its number; ``load_jsonl`` refuses a file with any bad line,
so nothing ever trains on a partly broken file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

KINDS = ("sft", "preference", "rl")


@dataclass(frozen=True)
class BadLine:
    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


def _check_record(rec: object, kind: str) -> str | None:
    if not isinstance(rec, dict):
        return "not a JSON object"
    def need_str(*keys: str) -> str | None:
        for k in keys:
            if k not in rec:
                return f"missing field {k!r}"
            if not isinstance(rec[k], str) or not rec[k]:
                return f"field {k!r} must be a non-empty string"
        return None
    if kind == "sft":
        if "messages" in rec:
            msgs = rec["messages"]
            if not isinstance(msgs, list) or not msgs:
                return "field 'messages' must be a non-empty list"
            for i, m in enumerate(msgs):
                if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant") or not isinstance(m.get("content"), str):
                    return f"messages[{i}] must be {{'role': system|user|assistant, 'content': str}}"
            if msgs[-1]["role"] != "assistant":
                return "the last message must be the assistant's (it is the completion)"
            return None
        return need_str("prompt", "completion")
    if kind == "preference":
        err = need_str("prompt", "chosen", "rejected")
        if err is None and rec["chosen"] == rec["rejected"]:
            return "chosen and rejected are identical"
        return err
    return need_str("prompt", "answer")


def _validate(lines: list[str | bytes], kind: str) -> tuple[list[dict], list[int], list[BadLine]]:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}; got {kind!r}")
    records, numbers, bad = [], [], []
    for n, line in enumerate(lines, start=1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad.append(BadLine(n, f"not valid UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1})"))
                continue
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            bad.append(BadLine(n, f"invalid JSON ({exc.msg})"))
            continue
        err = _check_record(rec, kind)
        if err:
            bad.append(BadLine(n, err))
        else:
            records.append(rec)
            numbers.append(n)
    if not records and not bad:
        bad.append(BadLine(0, "the file has no records"))
    return records, numbers, bad


def validate_lines(lines: list[str | bytes], kind: str) -> tuple[list[dict], list[BadLine]]:
    """``(records, bad_lines)`` for JSONL lines (``str``, or ``bytes`` decoded as UTF-8 line by line)."""
    records, _, bad = _validate(lines, kind)
    return records, bad


def _read_lines(path: str | Path) -> list[bytes]:
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"data: file not found: {path}")
    # bytes, split on newlines and decoded line by line, so that bad UTF-8 is reported with its line number
    return p.read_bytes().split(b"\n")


def validate_jsonl(path: str | Path, kind: str) -> tuple[list[dict], list[BadLine]]:
    """``(records, bad_lines)`` for a JSONL file of the given kind."""
    return validate_lines(_read_lines(path), kind)


class DataFileError(ValueError):
    def __init__(self, path: str, bad: list[BadLine]) -> None:
        self.bad = bad
        super().__init__(f"{path}: {len(bad)} bad line(s); nothing was trained:\n" + "\n".join(str(b) for b in bad))


def load_jsonl(path: str | Path, kind: str) -> list[dict]:
    """The records of a valid file; ``DataFileError`` listing every bad line otherwise."""
    return load_jsonl_lines(path, kind)[0]


def load_jsonl_lines(path: str | Path, kind: str) -> tuple[list[dict], list[int]]:
    """``(records, line_numbers)`` of a valid file (the line each record came from); ``DataFileError`` otherwise."""
    records, numbers, bad = _validate(_read_lines(path), kind)
    if bad:
        raise DataFileError(str(path), bad)
    return records, numbers


def sft_pairs(records: list[dict]) -> list[tuple[str, str]]:
    """(prompt, completion) pairs; a messages record is serialised as 'role: content' lines, the last
    assistant message being the completion (the prompt serializer of ftip-006V, declared here)."""
    out = []
    for r in records:
        if "messages" in r:
            *ctx, last = r["messages"]
            prompt = "".join(f"{m['role']}: {m['content']}\n" for m in ctx) + "assistant: "
            out.append((prompt, last["content"]))
        else:
            out.append((r["prompt"], r["completion"]))
    return out
