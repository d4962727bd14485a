#!/bin/bash
# The shipped learned-grasp weights, made on a machine with one GPU and 16 cores (docs/grasp.md):
# the dataset on every core for DATA_SECONDS (its shards are whole; it resumes), then four
# trainings sharing the GPU for TRAIN_SECONDS each (float32; the last checkpoint counts): the
# minimal-wrench estimator at learning rates 3e-4 (main) and 1e-3 (fast), its plain-L2 ablation
# (l2) and the torque predictor (pred); then the ablation's quiet-force figures on the test split.
# Results: $OUT/summary.json and one tar per run. `tiny` runs the same steps in a minute on a CPU.
# Usage: bash examples/learned_grasp/train_on_gpu.sh DATA_SECONDS TRAIN_SECONDS OBJECTS [tiny]
set -u
DATA_S=$1; TRAIN_S=$2; OBJECTS=$3; TINY=${4:-}
OUT=${OUT:-/tmp/devout}; mkdir -p $OUT
W=/tmp/learned; rm -rf $W; mkdir -p $W
PY=${PY:-python3}
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
log() { echo "[$(date +%H:%M:%S)] $*"; }
log "start; $(nproc) cores"; nvidia-smi -L 2>/dev/null
$PY -c "import jax, equinox, optax, mujoco, clarabel, pydantic; print('jax', jax.__version__, jax.devices(), 'eqx', equinox.__version__, 'optax', optax.__version__, 'mujoco', mujoco.__version__)" || exit 3
if [ -n "$TINY" ]; then STEPS="--steps 40 --eval-every 10 --checkpoint-every 20 --batch 8 --width 32 --channels 2,4,4,4"; GRID=16; WORKERS=2
else STEPS="--steps 1000000 --eval-every 500 --checkpoint-every 500 --batch 256"; GRID=48; WORKERS=$(nproc); fi
log "dataset: $OBJECTS objects, grid $GRID, $WORKERS workers, at most $DATA_S s"
JAX_PLATFORMS=cpu timeout -s INT $DATA_S $PY -m robocal grasp dataset --out $W/data --objects $OBJECTS --grid $GRID --seed 0 --workers $WORKERS > $W/dataset.log 2>&1
log "dataset stopped (rc $?): $(ls $W/data/train | wc -l) train, $(ls $W/data/val | wc -l) val, $(ls $W/data/test | wc -l) test shards"
tail -c 600 $W/dataset.log; pkill -f multiprocessing; sleep 1
export XLA_PYTHON_CLIENT_MEM_FRACTION=0.2
train() { # name, extra options
  local name=$1; shift
  timeout -s INT $TRAIN_S $PY -m robocal grasp train --data $W/data --out $W/$name --precision float32 --seed 0 $STEPS "$@" > $W/$name.log 2>&1
  log "$name stopped (rc $?)"; tail -c 300 $W/$name.log
}
train main --networks estimator --learning-rate 3e-4 &
train pred --networks predictor --learning-rate 3e-4 &
train l2 --networks estimator --loss l2 --learning-rate 3e-4 &
train fast --networks estimator --learning-rate 1e-3 &
wait
log "trainings done"
$PY - "$W" "$OUT" <<'PY'
import json, sys
from pathlib import Path
from robocal.grasp.learned import ablation, controller
w, out = Path(sys.argv[1]), Path(sys.argv[2])
summary = {}
for run in ("main/estimator", "pred/predictor", "l2/estimator", "fast/estimator"):
    state_file = w / run / "state.json"
    if not state_file.exists():
        summary[run] = "no checkpoint"; continue
    state = json.loads(state_file.read_text())
    summary[run] = {"step": state["step"], "last": state["curves"][-1], "first": state["curves"][0], "constant": state["constant_val_loss"]}
    if run.endswith("estimator"):
        net, _ = controller.load_run(w / run)
        summary[run]["quiet_test"] = ablation.quiet_force(net, w / "data", "test")
print(json.dumps(summary, indent=1))
(out / "summary.json").write_text(json.dumps(summary, indent=1))
PY
cd $W && for r in main pred l2 fast; do tar cf $OUT/$r.tar $r; done; tar cf $OUT/logs.tar *.log data/manifest.json; ls data/test | head -120 | sed 's#^#data/test/#' | tar cf $OUT/test_shards.tar -T -
ls -la $OUT; log end
