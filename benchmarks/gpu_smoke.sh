#!/usr/bin/env bash
# GPU smoke test: every small-run algorithm for a few steps on CUDA (bf16 autocast is on by default there),
# printing steps/s from each run's summary. On a machine without CUDA it says so and exits 0.
#   bash benchmarks/gpu_smoke.sh            (uses .venv/bin/python, or $PYTHON)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
DEVICE=${LAB_SMOKE_DEVICE:-cuda}  # LAB_SMOKE_DEVICE=cpu checks the script itself on a CPU machine
if [ "$DEVICE" = cuda ] && ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "gpu_smoke: no CUDA device here; nothing to run (this script is for a GPU machine)"
  exit 0
fi
[ "$DEVICE" = cuda ] && "$PY" -c "import torch; print('gpu_smoke:', torch.cuda.get_device_name(0), 'torch', torch.__version__, 'bf16', torch.cuda.is_bf16_supported())"
out=$(mktemp -d -t lab-gpu-smoke-XXXX)
# every algorithm in the table (lab.smallrun.config.ALGORITHMS), so a new one is smoke-tested without editing this file
algos=$("$PY" -c "from lab.smallrun.config import ALGORITHMS; print(' '.join(ALGORITHMS))")
echo "gpu_smoke: algorithms: $algos"
for algo in $algos; do
  start=$(date +%s.%N)
  "$PY" -m lab.smallrun "$algo" --device "$DEVICE" --steps 20 --base-steps 100 --eval-every 10 --eval-size 20 \
    --save-every 20 --out "$out/$algo" >"$out/$algo.log" 2>&1 || { echo "gpu_smoke: $algo FAILED"; tail -20 "$out/$algo.log"; exit 1; }
  end=$(date +%s.%N)
  "$PY" - "$algo" "$start" "$end" <<'PYEOF'
import sys
algo, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
print(f"gpu_smoke: {algo:5s} 20 steps (plus base stage and evals) in {t1 - t0:.1f} s ≈ {20 / (t1 - t0):.2f} steps/s wall")
PYEOF
  grep -E "^(base sft|$algo): [0-9]+/[0-9]+ steps" "$out/$algo.log" | sed 's/^/gpu_smoke:   /' || true  # each stage's steps/s
  tail -1 "$out/$algo.log"
done
echo "gpu_smoke: all algorithms ran on $DEVICE; runs in $out"
