"""The learned controller against the analytical one on the same grasps and pushes (the seed's
Sec. V-C protocol): the table, Fig. 7 and Fig. 8 with the analytical controller, the learned
controller and the baseline without wrench estimate on the learned predictor, from two
`robocal grasp evaluate` runs of one configuration but `--controller`. Several learned runs may
be given: each method and scale is taken from the first of them that has it (for example the
controller from a run of new estimator weights, the baseline, which uses only the predictor,
from an earlier run with the same predictor).

Run from the repository root (figures and table in docs/grasp.md, "Learned controller"):
    robocal grasp evaluate --controller analytical --methods controller --scales 1 --grasps 8 --forces 5 --out out/eval/analytical
    robocal grasp evaluate --controller learned --methods controller,without_wrench_estimate --scales 1,2,3 --grasps 8 --forces 5 --out out/eval/learned
    .venv/bin/python examples/learned_grasp/compare.py out/eval/analytical out/eval/learned [out/eval/more_learned ...] --out docs/grasp_learned
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from robocal.grasp.figures import plot_breaks_vs_torque, plot_deviation_densities

SAME = ("objects", "grasps", "forces", "seed", "gravity", "margin", "filter_time", "ramp", "hold", "control_period")
LABELS = {"controller": "controller", "without_wrench_estimate": "w/o wrench estimate", "fixed_offsets": "fixed offsets"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", help="the analytical evaluation folder, then one or more learned ones")
    parser.add_argument("--out", required=True, help="prefix of the two figures (PREFIX_breaks_vs_torque.png, PREFIX_deviations.png)")
    args = parser.parse_args()
    results = [json.loads((run / "results.json").read_text()) for run in args.runs]
    differ = sorted({k for r in results[1:] for k in SAME if results[0]["config"][k] != r["config"][k]})
    if len(results) < 2 or differ or [r["config"]["controller"] for r in results] != ["analytical"] + ["learned"] * (len(results) - 1):
        raise SystemExit(f"not one protocol with the analytical, then the learned controller (settings differ: {differ})")
    rows, trials, labels = [], [], {}
    for run, result in zip(args.runs, results):
        who = result["config"]["controller"]
        for row in result["summary"]["methods"]:
            name = f"{who} {row['method']}"
            if any(r["method"] == name and r["scale"] == row["scale"] for r in rows):
                continue  # an earlier run gave this method and scale
            print(f"{LABELS[row['method']]} ({who}), scale {row['scale']:g}: from {run}")
            rows.append({**row, "method": name})
            labels[name] = f"{LABELS[row['method']]} ({who})"
            trials += [
                {**t, "method": name}
                for t in result["trials"]
                if t["method"] == row["method"] and t["scale"] == row["scale"] and t["force"] >= 0 and "error" not in t
            ]
    stars = {"analytical controller": "C3", "learned controller": "C2"}
    print(f"{'method':45s} scale trials  kept %  torque Nm  q90 cm  q90 deg")
    for row in rows:
        print(
            f"{labels[row['method']]:45s} {row['scale']:5g} {row['trials']:6d} {100 * row['kept']:7.1f} {row['torque_sum']:10.2f}"
            f" {100 * row['translation_q90']:7.2f} {57.29577951308232 * row['rotation_q90']:8.1f}"
        )
    for run, result in zip(args.runs, results):
        estimation = result["summary"]["wrench_estimation"]
        print(
            f"{run}: force error median by kind {estimation['force_error_median_by_kind']} N;"
            f" with no force, largest estimate median {estimation['no_force_estimate_median']:.4f} N, max {estimation['no_force_estimate_max']:.3f} N,"
            f" below 0.3 N on {estimation['no_force_below_limit']} of {estimation['no_force_grasps']} grasps"
        )
    plot_breaks_vs_torque(rows, Path(f"{args.out}_breaks_vs_torque.png"), labels, stars)
    plot_deviation_densities(trials, rows, Path(f"{args.out}_deviations.png"), labels, stars)
    print(f"wrote {args.out}_breaks_vs_torque.png, {args.out}_deviations.png")


if __name__ == "__main__":
    main()
