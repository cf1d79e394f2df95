"""python -m worked_examples [--json] [--explain]"""

import argparse
import json
import sys

from worked_examples import check, examples


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m worked_examples", description="Recompute the reference's worked examples with lab/.")
    ap.add_argument("--json", action="store_true", help="print a JSON list of {id, ftip, computed, expected, ok}")
    ap.add_argument("--explain", action="store_true", help="print each example's steps under its row")
    args = ap.parse_args(argv)
    mods = examples()
    rows = [check(m) for m in mods]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        fmt = "{:<26} {:<10} {:<40} {:<40} {}"
        print(fmt.format("id", "ftip", "computed", "stated", "ok"))
        for mod, r in zip(mods, rows):
            comp = ", ".join(f"{x:.4g}" for x in r["computed"])
            exp = ", ".join(f"{x:.4g}" for x in r["expected"])
            print(fmt.format(r["id"], r["ftip"], comp, exp, "ok" if r["ok"] else "MISMATCH"))
            if args.explain:
                print("    " + mod.explain().replace("\n", "\n    "))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
