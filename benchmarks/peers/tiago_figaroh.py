"""FIGAROH 1.0.2 (PyPI) on robocal's TIAGo protocol: the peer of `robocal calibrate
examples/tiago_mocap/full.yaml` + `robocal evaluate` on the three held-out sessions in
benchmarks/peers/run.py.

Run by run.py in the peers' own virtual environment (FIGAROH and Pinocchio are not robocal
dependencies):
    PEERS_VENV/bin/python benchmarks/peers/tiago_figaroh.py --urdf URDF --data DIR [--level full_params]
It prints one JSON object (parameter count and names, RMSE per session in mm, the seconds of each
phase) as its last line. The whole process is the job: import, calibration, evaluation.

Written against FIGAROH's documented API (the BaseCalibration docstring and README): a robot
subclass whose `cost_function` is the SE3 log-map residual of `calc_updated_fkm`, a unified
config (written to a temporary folder), `initialize()` (data + parameter selection), `solve()`,
and `calc_updated_fkm` with the fitted vector on the held-out postures. FIGAROH's robot classes
for TIAGo live in the separate figaroh-examples repository, not in the PyPI package, so the
subclass here is our own, with the same cost as that repository's TiagoCalibration.

The job is the one of examples/tiago_mocap/full.yaml (docs/validation.md, FIGAROH's held-out
protocol v1): fit on the 11-30 15:44 session only, point BL (x1, y1, z1) as an unknown point
fixed in wrist_ft_tool_link, the 6-DOF placement of the robot root in the Qualisys base body
unknown, the 6-DOF placement error of the torso and every arm joint origin, cut to a set the
training data identify; score the RMSE of the 3D error of BL on the 11-26 session and the two
11-30 confirmation sessions. How FIGAROH's model of it differs from robocal's:

- Parameter selection: FIGAROH keeps the joint parameters its structural QR on random
  configurations finds identifiable, then drops those the base and tip frames absorb on the
  training postures (`eliminate_absorbed_parameters`); robocal's `select: identifiable` runs a
  greedy pivoted QR on the robot columns after projecting out the frame and marker columns. The
  cuts can differ in count and in which parameters they keep (the count is printed).
- Parameterisation: FIGAROH's full_params are per-joint placement errors in its own convention
  (pinocchio joint placements; the base frame as px, py, pz, phix, phiy, phiz), robocal's `full`
  Trans(d) Rot(r) on the right of each nominal URDF origin. Equivalent models, different
  coordinates, so estimates are compared through the held-out errors, not parameter by parameter.
- Data handling: FIGAROH's solve excludes postures whose fitted error is above 5 cm and refits
  (at most 3 fits); robocal's full.yaml has no rejection. On these data no posture is near 5 cm.
- Start: FIGAROH starts the frames at its closed-form guess, the rest at zero; robocal starts
  the frame at its own guess (`initial: auto`). No prior in either (full.yaml sets none).
- Outputs: FIGAROH prints its quality report to the terminal and writes nothing here (no
  html_report, no save_results); robocal's calibrate writes report.json, frames.yaml,
  calibrated.urdf and report.html, and evaluate prints its tables. The robocal side does more I/O.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import time

START = time.perf_counter()

import tempfile  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pinocchio as pin  # noqa: E402
import yaml  # noqa: E402
from figaroh.calibration import BaseCalibration  # noqa: E402
from figaroh.calibration.calibration_tools import calc_updated_fkm  # noqa: E402

IMPORTED = time.perf_counter()
JOINTS = ["torso_lift_joint"] + [f"arm_{i}_joint" for i in range(1, 8)]
SESSIONS = {
    "training": "qualisys_2021-11-30_static_postures.csv",
    "validation 11-26": "qualisys_2021-11-26_static_postures.csv",
    "confirmation 14:03": "qualisys_2021-11-30-1403_static_postures.csv",
    "confirmation 15:04": "qualisys_2021-11-30-1504_static_postures.csv",
}


class TiagoMocap(BaseCalibration):
    """Point BL seen by motion capture: the SE3 log-map residuals of FIGAROH's updated FK."""

    def cost_function(self, var):
        predicted = calc_updated_fkm(self.model, self.data, var, self.q_measured, self.calib_config)
        return self._compute_logmap_residuals(self.PEE_measured, predicted)


def config(training: Path, level: str, n: int) -> dict:
    return {
        "_metadata": {"schema_version": "2.0", "config_type": "robot_configuration"},
        "robot": {"name": "tiago", "properties": {"joints": {"active_joints": JOINTS}}},
        "tasks": {
            "calibration": {
                "enabled": True,
                "parameters": {"calibration_level": level, "include_non_geometric": False, "outlier_threshold": 0.05},
                "kinematics": {"base_frame": "universe", "tool_frame": "wrist_ft_tool_link"},
                "measurements": {
                    "markers": [{"name": "BL", "reference_joint": "arm_7_joint", "measurable_dof": [True, True, True, False, False, False]}],
                    "poses": {"base_pose": [0.0] * 6, "tool_pose": [0.0] * 6},
                },
                "data": {"source_file": str(training), "validation_data_file": "", "number_of_samples": n},
            }
        },
    }


def calibrate(robot, training: Path, level: str, folder: Path) -> TiagoMocap:
    """Fit on the training session only; frames unknown (estimated), as in the protocol."""
    path = folder / f"{level}.yaml"
    path.write_text(yaml.safe_dump(config(training, level, len(pd.read_csv(training)))))
    calib = TiagoMocap(robot, str(path))
    calib.calib_config["known_baseframe"] = False
    calib.calib_config["known_tipframe"] = False
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        calib.initialize()
        calib.solve(enable_logging=False, plotting=False, save_results=False, html_report=False)
    return calib


def rmse_mm(calib: TiagoMocap, path: Path) -> float:
    """RMSE over the session's postures of the 3D error of point BL, in mm."""
    table = pd.read_csv(path)
    q = np.tile(pin.neutral(calib.model), (len(table), 1))
    for name in JOINTS:
        q[:, calib.model.joints[calib.model.getJointId(name)].idx_q] = table[name].to_numpy()
    predicted = calc_updated_fkm(calib.model, calib.data, calib.LM_result.x, q, dict(calib.calib_config, NbSample=len(table)))
    error = predicted.reshape(3, -1).T - table[["x1", "y1", "z1"]].to_numpy()
    return float(np.sqrt(np.mean(np.sum(error**2, axis=1))) * 1e3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urdf", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True, help="folder of the four session CSVs")
    parser.add_argument("--level", default="full_params", help="FIGAROH's calibration_level: full_params (robocal's full.yaml) or joint_offset")
    options = parser.parse_args()
    # FIGAROH's load_robot also loads the collision meshes the URDF names, which are not shipped
    # (docs of the data); calibration needs only the kinematic model, so Pinocchio reads the URDF
    # text alone and RobotWrapper gives BaseCalibration the model, data and q0 it uses.
    robot = pin.RobotWrapper(pin.buildModelFromUrdf(str(options.urdf)))
    loaded = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="figaroh_tiago_") as folder:
        calib = calibrate(robot, options.data / SESSIONS["training"], options.level, Path(folder))
    calibrated = time.perf_counter()
    rmse = {name: rmse_mm(calib, options.data / file) for name, file in SESSIONS.items()}
    evaluated = time.perf_counter()
    print(
        json.dumps(
            {
                "level": options.level,
                "n_parameters": len(calib.calib_config["param_name"]),
                "parameters": list(calib.calib_config["param_name"]),
                "excluded_postures": len(getattr(calib, "outlier_indices", []) or []),
                "success": bool(calib.LM_result.success),
                "rmse_mm": rmse,
                "seconds": {"import": IMPORTED - START, "load robot": loaded - IMPORTED, "calibrate": calibrated - loaded, "evaluate": evaluated - calibrated},
            }
        )
    )


if __name__ == "__main__":
    main()
