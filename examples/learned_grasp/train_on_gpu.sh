#!/bin/bash
# The shipped learned-grasp weights, made on a machine with one GPU and 16 cores (docs/grasp.md).
# The dataset grows on the CPU cores until END seconds (its shards are whole; it resumes). Each
# run named RUN@START starts START seconds in, on the shards made by then, trains on the GPU
# (float32, the runs share it) and is stopped at END (its best network counts: best.eqx). Runs: main and
# fast, the minimal-wrench estimator at learning rates 3e-4 and 1e-3; l2, its plain-L2 ablation;
# pred, the torque predictor; fast8 and pred8, fast and pred with 8 samples per grasp and step
# (`--per-grid 8`: the grid encoded once for 8 samples); half8, fast8 with the scale loss's
# t = 0.5 (the shipped estimator's, docs/grasp.md); half3, half8 at the paper's 3e-4 (at 1e-3 the
# estimator's convolutions died in both leases: docs/grasp.md); tune8, half8 fine-tuning every
# layer of the shipped estimator (not in TINY mode: other shapes; its convolutions are dead, so
# only its dense layers can learn); aug1, the fifth lease's e_new1: half3 with each grid moved by up to
# one voxel (`--shift-augment 1`; its convolutions learned from 4,696 objects, docs/grasp.md); aug05,
# aug1 at the paper's t = 0.05 (what that lease left to try; in the sixth lease its convolutions died by step 500). RESUME=DIR continues the runs found in DIR/<run> (earlier outputs of
# this script, same options). DATASET_END=S stops the dataset at S seconds (default END), so that the
# runs that start then have every core. CARRIED=DIR (a folder of examples/learned_grasp/carry.py pack,
# carried along) is unpacked and trained on beside the dataset made here (`--data` twice; another
# seed). Then each estimator's quiet-force figures on the test split.
# Results: $OUT/summary.json, one tar per run, the logs. TINY=1 runs the same steps on a CPU.
# Usage: bash examples/learned_grasp/train_on_gpu.sh OBJECTS END RUN@START [RUN@START ...]
set -u
OBJECTS=$1; END=$2; shift 2; RUNS=("$@")
OUT=${OUT:-/tmp/devout}; mkdir -p "$OUT"
W=/tmp/learned; rm -rf $W; mkdir -p $W
PY=${PY:-python3}
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
T0=$SECONDS
log() { echo "[$(date +%H:%M:%S) +$((SECONDS - T0)) s] $*"; }
log "start; $(nproc) cores"; nvidia-smi -L 2>/dev/null
$PY -c "import jax, equinox, optax, mujoco, clarabel, pydantic; print('jax', jax.__version__, jax.devices(), 'eqx', equinox.__version__, 'optax', optax.__version__, 'mujoco', mujoco.__version__)" || exit 3
if [ -n "${TINY:-}" ]; then STEPS="--steps 40 --eval-every 10 --checkpoint-every 20 --batch 8 --width 32 --channels 2,4,4,4"; GRID=16; WORKERS=2
else STEPS="--steps 1000000 --eval-every 500 --checkpoint-every 500 --batch 256"; GRID=48; WORKERS=$(($(nproc) - ${#RUNS[@]})); fi
declare -A OPTIONS=([main]="--networks estimator --learning-rate 3e-4" [fast]="--networks estimator --learning-rate 1e-3"
  [l2]="--networks estimator --loss l2 --learning-rate 3e-4" [pred]="--networks predictor --learning-rate 3e-4"
  [fast8]="--networks estimator --learning-rate 1e-3 --per-grid 8" [pred8]="--networks predictor --learning-rate 3e-4 --per-grid 8"
  [half8]="--networks estimator --learning-rate 1e-3 --per-grid 8 --quantile 0.5"
  [half3]="--networks estimator --learning-rate 3e-4 --per-grid 8 --quantile 0.5"
  [tune8]="--networks estimator --learning-rate 3e-4 --per-grid 8 --quantile 0.5 --init src/robocal/grasp/learned/weights"
  [aug1]="--networks estimator --learning-rate 3e-4 --per-grid 8 --quantile 0.5 --shift-augment 1"
  [aug05]="--networks estimator --learning-rate 3e-4 --per-grid 8 --quantile 0.05 --shift-augment 1")
for run in "${RUNS[@]}"; do [ -n "${OPTIONS[${run%@*}]:-}" ] || { echo "unknown run ${run%@*}"; exit 2; }; done
shards() { for s in train val test; do echo -n "$(ls $W/data/$s 2>/dev/null | wc -l) $s "; done; }

log "dataset: $OBJECTS objects, grid $GRID, $WORKERS workers, until +${DATASET_END:-$END} s"
JAX_PLATFORMS=cpu timeout -s INT $((${DATASET_END:-$END} - (SECONDS - T0))) $PY -m robocal grasp dataset --out $W/data --objects $OBJECTS --grid $GRID --seed 0 --workers $WORKERS > $W/dataset.log 2>&1 &
DATA="--data $W/data"
if [ -n "${CARRIED:-}" ]; then $PY examples/learned_grasp/carry.py unpack "$CARRIED" $W/carried || exit 4; DATA="$DATA --data $W/carried"; fi
export XLA_PYTHON_CLIENT_MEM_FRACTION=0.15
train() { # name, start
  local name=$1 start=$2
  [ -n "${RESUME:-}" ] && [ -d "$RESUME/$name" ] && cp -r "$RESUME/$name" $W/ && log "$name resumes $(ls $W/$name)"
  [ $((start - (SECONDS - T0))) -gt 0 ] && sleep $((start - (SECONDS - T0)))
  log "$name starts on $(shards)shards"
  timeout -s INT $((END - (SECONDS - T0))) $PY -m robocal grasp train $DATA --out $W/$name --precision float32 --seed 0 $STEPS ${OPTIONS[$name]} > $W/$name.log 2>&1
  log "$name stopped (rc $?)"; tail -c 300 $W/$name.log
}
for run in "${RUNS[@]}"; do train "${run%@*}" "${run#*@}" & done
wait
log "trainings and dataset stopped: $(shards)shards"; tail -c 400 $W/dataset.log
$PY - "$W" "$OUT" <<'PY'
import json, sys
from pathlib import Path
from robocal.grasp.learned import ablation, controller
w, out = Path(sys.argv[1]), Path(sys.argv[2])
summary = {}
for state_file in sorted(w.glob("*/*/state.json")):
    run, state = state_file.parent, json.loads(state_file.read_text())
    name = f"{run.parent.name}/{run.name}"
    summary[name] = {"step": state["step"], "last": state["curves"][-1], "first": state["curves"][0], "constant": state["constant_val_loss"]}
    summary[name]["last_by_kind"] = state.get("val_by_kind", [[None, {}]])[-1]
    summary[name]["best"], summary[name]["object_features"] = state.get("best"), state.get("object_features", [None])[-1]
    if run.name == "estimator" and any((w / "data" / "test").glob("*.npz")):  # a short TINY run may have no test objects
        net, _ = controller.load_run(run)
        summary[name]["quiet_test"] = ablation.quiet_force(net, w / "data", "test")
print(json.dumps(summary, indent=1))
(out / "summary.json").write_text(json.dumps(summary, indent=1))
PY
cd $W && for run in "${RUNS[@]}"; do tar cf "$OUT/${run%@*}.tar" "${run%@*}"; done; tar cf $OUT/logs.tar *.log data/manifest.json
ls -la "$OUT"; log end
