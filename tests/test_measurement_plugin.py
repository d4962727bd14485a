"""A new measurement type is one module and one registration: the plane probe of
tests/plugins/plane.py, registered through the public `register_measurement`, is calibrated end to
end by `robocal calibrate` from a problem file, and recovers the Panda's true joint offsets."""

from __future__ import annotations

import json
import sys
from importlib.metadata import EntryPoint

import numpy as np
import pytest
import yaml

from robocal import cli
from robocal.errors import RobocalError
from robocal.kinematics.load import load_robot
from robocal.kinematics.model import RobotModel
from robocal.measurements.registry import measurement_types, register_measurement
from robocal.problem.schema import problem_config
from robocal.simulation.perturb import perturb_parameters
from robocal.simulation.sampling import batch_link_poses, sample_configurations
from tests.conftest import REPO
from tests.plugins.plane import PLANE_COLUMNS, PlaneConfig, PlaneMeasurement

PANDA = REPO / "examples" / "mukca" / "data" / "urdf" / "panda.urdf"
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
PROBE = np.array([0.02, 0.01, 0.11])  # m, probe tip on panda_link8
SIGMA = 1e-5  # m, a touch probe's repeatability


@pytest.fixture(scope="module", autouse=True)
def plane_type():
    register_measurement(PlaneMeasurement)
    yield
    from robocal.measurements import registry

    del registry._types["plane"]  # the other test modules see the package's own types only


def touches(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q (n, 8), theta_true, rows (n, 11)): the true robot's probe on a plane of random
    orientation through it at each of n random configurations, plane offsets with N(0, SIGMA) noise."""
    truth = RobotModel(load_robot(PANDA), {name: "joint_offsets" for name in JOINTS})
    theta_true = perturb_parameters(truth, seed=seed)
    rng = np.random.default_rng(seed)
    q = sample_configurations(truth.tree, n, seed=seed)
    q[:, 7] = 0.0
    pose = batch_link_poses(truth, theta_true, q, ("panda_link8",))[:, 0]
    probe = pose[:, :3, :3] @ PROBE + pose[:, :3, 3]
    normal = rng.normal(size=(n, 3))
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    offset = np.sum(normal * probe, axis=1) + rng.normal(0.0, SIGMA, n)
    return q, theta_true, np.column_stack([q[:, :7], normal, offset])


def write_problem(folder, rows: np.ndarray) -> None:
    header = JOINTS + list(PLANE_COLUMNS)
    (folder / "touches.csv").write_text(",".join(header) + "\n" + "\n".join(",".join(repr(float(v)) for v in r) for r in rows) + "\n")
    problem = {
        "robot": str(PANDA),
        "parameters": {"joints": {name: "joint_offsets" for name in JOINTS}},
        "priors": {"joint_offset": None},
        "measurements": [{"name": "fixture", "type": "plane", "data": "touches.csv", "sigma": SIGMA, "link": "panda_link8", "point": PROBE.tolist()}],
    }
    (folder / "problem.yaml").write_text(yaml.safe_dump(problem, sort_keys=False))


def test_the_registered_type_is_part_of_the_problem_schema():
    assert measurement_types()["plane"] is PlaneMeasurement and "markers" in measurement_types()
    entry = {"name": "fixture", "type": "plane", "data": "touches.csv", "sigma": SIGMA, "link": "panda_link8"}
    config = problem_config().model_validate({"robot": "panda.urdf", "measurements": [entry]})
    assert type(config.measurements[0]) is PlaneConfig and config.measurements[0].point == (0.0, 0.0, 0.0)


def test_a_plane_probe_calibrates_the_panda_from_a_problem_file(tmp_path, monkeypatch):
    """60 touches, 1 residual each, 7 joint offsets without a prior: the estimate lies within 4
    posterior sigmas of the truth in every offset (a 4-sigma miss has odds ~1e-4 per offset), the
    offsets moved by far more than that (the perturbation is ~1e-2 rad, the posterior std ~1e-5),
    and the residual rms after calibration is the probe noise."""
    q, theta_true, rows = touches(60, seed=5)
    write_problem(tmp_path, rows)
    monkeypatch.setattr(sys, "argv", ["robocal", "calibrate", str(tmp_path / "problem.yaml"), "--out", str(tmp_path / "out")])
    cli.main()  # returns on success (exit code 0)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    estimate = {p["name"]: (p["estimate"], p["std"]) for p in report["parameters"]}
    truth = RobotModel(load_robot(PANDA), {name: "joint_offsets" for name in JOINTS})
    moved = []
    for parameter, true_value, nominal in zip(truth.parameters, theta_true, truth.nominal):
        value, std = estimate[parameter.name]
        assert abs(value - true_value) < 4 * std, parameter.name
        moved.append(abs(true_value - nominal) / std)
    assert min(moved) > 20
    (fixture,) = report["measurements"]
    after = fixture["after"]["rms"]
    assert 0.5 * SIGMA < after < 1.5 * SIGMA  # 60 residuals less 7 parameters: rms ~ SIGMA * sqrt(53/60)


def test_an_entry_point_registers_the_same_class(monkeypatch):
    """A plug-in package declares `[project.entry-points."robocal.measurements"] plane = ...`; the
    registry loads it with the built-in types, and a broken one is named, not a traceback."""
    from robocal.measurements import registry

    point = EntryPoint("plane", "tests.plugins.plane:PlaneMeasurement", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "_types", {})
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setattr(registry, "entry_points", lambda group: [point] if group == registry.ENTRY_POINT_GROUP else [])
    assert registry.measurement_types()["plane"] is PlaneMeasurement and len(registry.measurement_types()) == 7
    broken = EntryPoint("probe", "tests.plugins.no_such_module:Probe", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "_types", {})
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setattr(registry, "entry_points", lambda group: [broken])
    with pytest.raises(RobocalError, match=r"measurement plug-in 'probe' \(tests\.plugins\.no_such_module:Probe\) cannot be loaded: No module named"):
        registry.measurement_types()


def test_a_misdeclared_type_is_refused_with_its_reason():
    class Nameless(PlaneMeasurement):
        type_name = "plane_two"  # its Config still says Literal['plane']

    with pytest.raises(RobocalError, match=r"Nameless\.Config: its field `type` must be Literal\['plane_two'\]"):
        register_measurement(Nameless)

    class Impostor(PlaneMeasurement):
        pass

    with pytest.raises(RobocalError, match="measurement type 'plane' is taken by tests.plugins.plane.PlaneMeasurement"):
        register_measurement(Impostor)
