"""`parameters.select: identifiable` (robocal.analysis.selection): the fit holds the robot
parameters outside the data's base set at nominal by a mask over the full layout (one traced
problem). The independent reference is the same problem with those parameters written into
`parameters.fixed`, which removes them from the layout: both must be the same calibration.

The problem is tests/analysis/test_gauge.py's: a six-joint arm with every joint origin in the model
(`full`, 42 parameters), three markers on its tool seen in an estimated tracker frame, a task, and
1 mm / 1 mrad priors. So the comparison covers the fit, the covariance, identifiability, the
verdict, the task prediction, whose held parameters enter with their prior
(robocal.analysis.task_uncertainty), and what `robocal analyze` and `robocal design` see.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from robocal.analysis.selection import selection
from robocal.analysis.sensitivity import analyze
from robocal.analysis.task_uncertainty import Task
from robocal.calibration import calibrate
from robocal.design import choose, design_criterion
from robocal.problem import load_problem
from tests.analysis.test_gauge import write_problem


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(calibration with select: identifiable, calibration with its held parameters fixed)."""
    folder = tmp_path_factory.mktemp("selection")
    write_problem(folder, "tracker")
    config = yaml.safe_load((folder / "problem.yaml").read_text())
    config["parameters"]["select"] = "identifiable"
    (folder / "select.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    selected = calibrate(load_problem(folder / "select.yaml"))
    config["parameters"] = {"default": "full", "fixed": list(selected.held)}
    (folder / "fixed.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return selected, calibrate(load_problem(folder / "fixed.yaml"))


def test_the_selection_holds_what_the_data_do_not_identify(pair):
    """12 of the 42 origin parameters are not identifiable from the tool's pose (4 per revolute
    joint + 6, less the 6 the tracker frame takes): the selection holds those 18, the rest has
    full rank, and the problem keeps all 42 in its layout (the held ones at nominal)."""
    selected, fixed = pair
    problem = selected.problem
    robot = problem.layout.blocks["robot"]
    assert len(problem.layout.names[robot]) == 42 and len(selected.held) == 42 - (4 * 6 + 6 - 6)
    assert selection(problem) == selected.held
    assert selected.identifiability.rank == selected.identifiability.n_parameters == len(problem.layout) - len(selected.held)
    held = ~selected.free
    np.testing.assert_array_equal(selected.estimate[held], problem.theta0[held])
    assert np.all(selected.solution.covariance[held] == 0.0)


def test_it_is_the_fit_with_those_parameters_fixed(pair):
    """Same estimates, standard deviations, rank, gauge and verdict as the fixed problem (the
    report lists the fitted parameters only and names the held ones), and no gauge in either. Tolerances: the two solvers take the
    same steps on differently shaped arrays, so they agree to rounding (1e-12 m on 1e-3 m values),
    far below the 1 um the data are declared to."""
    selected, fixed = pair
    ours, theirs = selected.report(), fixed.report()
    assert [p["name"] for p in ours["parameters"]] == [p["name"] for p in theirs["parameters"]]
    for a, b in zip(ours["parameters"], theirs["parameters"]):
        assert abs(a["estimate"] - b["estimate"]) < 1e-12 and abs(a["std"] - b["std"]) <= 1e-9 * b["std"]
    assert ours["identifiability"]["rank"] == theirs["identifiability"]["rank"]
    assert ours["identifiability"]["unidentifiable_fixed"] == list(selected.held) and theirs["identifiability"]["unidentifiable_fixed"] == []
    # the tracker frame's columns come first in the selection, so the first origin, which carried
    # test_gauge.py's gauge, is held: no gauge is left in either
    assert {"shoulder_pan.dx", "shoulder_pan.rz"} <= set(selected.held) and selected.gauge is None and fixed.gauge is None
    assert [f.code for f in selected.verdict.findings if f.code != "held_at_nominal"] == [f.code for f in fixed.verdict.findings]


def test_the_task_prediction_counts_the_held_parameters_prior(pair):
    """The predicted task error of both: the held parameters enter with their prior in either way
    of holding them (in the layout at zero covariance, or left out by parameters.fixed)."""
    selected, fixed = pair
    ours, theirs = selected.task_prediction, fixed.task_prediction
    assert ours is not None and theirs is not None and sorted(ours["held_at_nominal"]) == sorted(theirs["held_at_nominal"]) == sorted(selected.held)
    for key in ("rms", "mean"):
        assert ours["predicted"][key] == pytest.approx(theirs["predicted"][key], rel=1e-9)


def test_analyze_and_design_see_the_fitted_parameters(pair):
    """`robocal analyze` and `robocal design` describe the fit: over the same parameters as the
    fixed problem, with the same rank, quality and design criterion (to rounding)."""
    selected, fixed = pair
    ours, theirs = analyze(selected.problem)[0], analyze(fixed.problem)[0]
    assert ours.parameters == theirs.parameters and len(ours.parameters) == len(selected.problem.layout) - len(selected.held)
    assert ours.combined.identifiability.rank == theirs.combined.identifiability.rank == len(ours.parameters)
    assert ours.combined.quality["scaled_condition_number"] == pytest.approx(theirs.combined.quality["scaled_condition_number"], rel=1e-9)
    task = Task("base", ("tool",), n=200, seed=1)
    a, b = (design_criterion(c.problem, c.problem.theta0, task) for c in pair)
    np.testing.assert_allclose(a.blocks, b.blocks, rtol=0, atol=1e-12 * np.abs(b.blocks).max())
    np.testing.assert_array_equal(a.prior, b.prior)
    assert choose(a, 12, "detmax").criterion == pytest.approx(choose(b, 12, "detmax").criterion, rel=1e-9)
