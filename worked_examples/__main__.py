"""python -m worked_examples [--json] [--explain]"""

import argparse
import json
import sys

from worked_examples import STATED_BY, check, examples


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m worked_examples", description="Recompute the reference's worked examples (and the lab's own illustrations) with lab/.")
    ap.add_argument("--json", action="store_true", help="print a JSON list of {id, ftip, kind, computed, expected, ok}")
    ap.add_argument("--explain", action="store_true", help="print each example's steps under its row")
    args = ap.parse_args(argv)
    mods = examples()
    rows = [check(m) for m in mods]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        fmt = "{:<26} {:<10} {:<40} {:<40} {:<25} {}"
        print(fmt.format("id", "ftip", "computed", "expected", "expected values from", "ok"))
        for mod, r in zip(mods, rows):
            comp = ", ".join(f"{x:.4g}" for x in r["computed"])
            exp = ", ".join(f"{x:.4g}" for x in r["expected"])
            print(fmt.format(r["id"], r["ftip"], comp, exp, STATED_BY[r["kind"]], "ok" if r["ok"] else "MISMATCH"))
            if getattr(mod, "NOTE", None):
                print("    note: " + mod.NOTE)
            if args.explain:
                print("    " + mod.explain().replace("\n", "\n    "))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
