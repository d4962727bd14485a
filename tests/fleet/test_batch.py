"""Batched solves: units of one structure solved together (`solve_batch`, `calibrate_group`, the
batched `fleet run`) give what each unit gives solved on its own (`solve`, `calibrate`, the
one-at-a-time `fleet run`): estimates and standard deviations to 1e-9 relative, the same
iterations, rejected rows and verdicts. Units: a simulated batch of the 6-joint arm with two
slipped offsets (20 mrad, 20 prior sigmas: those need many more steps than the others, so the
vectorized rounds hand them on to a batch of their own)."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest
import yaml

from robocal.calibration import calibrate, measurement_metrics
from robocal.errors import InputError
from robocal.fleet.batch import calibrate_group, group, share_compiled, structure_key
from robocal.fleet.criteria import judge, load_criteria
from robocal.problem import load_problem
from robocal.simulation.fleet import simulate_fleet
from robocal.solver.map import solve, solve_batch

ARM = Path(__file__).resolve().parents[2] / "examples" / "fleet" / "arm_6r.urdf"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> tuple[Path, dict]:
    """6 units, 2 of them defective."""
    folder = tmp_path_factory.mktemp("fleet")
    truth = simulate_fleet(folder, ARM, 6, defect_share=2 / 6, seed=3)
    return folder, truth


def problems(folder: Path) -> list:
    return [load_problem(p) for p in sorted(folder.glob("UNIT-*/problem.yaml"))]


def test_solve_batch_equals_solve(fleet):
    folder, truth = fleet
    assert sum(u["defective"] for u in truth["units"].values()) == 2
    units = problems(folder)
    template = units[0]
    for unit in units:
        share_compiled(unit, template)
    masks = [[np.ones(m.n) for m in u.measurements] for u in units]
    masks[2][0][[3, 17]] = 0.0  # rows left out of one unit
    batch = solve_batch(template.map_problem, [u.map_problem.data for u in units], np.stack([u.theta0 for u in units]), masks=masks)
    steps = []
    for unit, mask, got in zip(units, masks, batch):
        alone = solve(unit.map_problem, unit.theta0, masks=mask)
        np.testing.assert_allclose(got.theta, alone.theta, rtol=1e-9, atol=0)
        np.testing.assert_allclose(got.std, alone.std, rtol=1e-9, atol=0)
        assert got.cost == pytest.approx(alone.cost, rel=1e-9)
        assert (got.iterations, got.converged) == (alone.iterations, alone.converged)
        assert all(np.array_equal(a, b) for a, b in zip(got.masks, alone.masks))
        steps.append(got.iterations)
    defective = [truth["units"][u.path.parent.name]["defective"] for u in units]
    assert min(s for s, d in zip(steps, defective) if d) > 2 * max(s for s, d in zip(steps, defective) if not d), steps  # the stragglers


def test_rejection_rounds_and_free_subset(fleet, tmp_path):
    """With outlier rejection (a 5 mm outlier in one unit) and a fit of some parameters only."""
    folder, _ = fleet
    for source in sorted(folder.glob("UNIT-0000[0-2]")):
        target = tmp_path / source.name
        target.mkdir()
        for f in source.iterdir():
            (target / f.name).write_bytes(f.read_bytes())
        problem = yaml.safe_load((target / "problem.yaml").read_text())
        problem["solver"] = {"outlier_threshold": 5.0}
        (target / "problem.yaml").write_text(yaml.safe_dump(problem, sort_keys=False))
    markers = tmp_path / "UNIT-00001" / "markers.csv"
    lines = markers.read_text().splitlines()
    cells = lines[8].split(",")
    cells[-1] = repr(float(cells[-1]) + 0.005)
    lines[8] = ",".join(cells)
    markers.write_text("\n".join(lines) + "\n")
    units = problems(tmp_path)
    for unit in units:
        share_compiled(unit, units[0])
    datas, theta0s = [u.map_problem.data for u in units], np.stack([u.theta0 for u in units])
    free = np.arange(len(units[0].theta0)) % 2 == 0
    for options in ({"outlier_threshold": 5.0}, {"free": free}):  # half the offsets alone leave errors of 5 sigmas: no rejection there
        batch = solve_batch(units[0].map_problem, datas, theta0s, **options)
        for unit, got in zip(units, batch):
            alone = solve(unit.map_problem, unit.theta0, **options)
            np.testing.assert_allclose(got.theta, alone.theta, rtol=1e-9, atol=0)
            np.testing.assert_allclose(got.covariance, alone.covariance, rtol=0, atol=1e-9 * np.abs(alone.covariance).max())
            assert [(r.block, r.row, r.round) for r in got.rejections] == [(r.block, r.row, r.round) for r in alone.rejections]
            assert (got.iterations, got.converged) == (alone.iterations, alone.converged)
        if "free" in options:
            assert all(np.all(b.theta[~free] == theta0s[0][~free]) and np.all(np.abs(b.theta[free]) > 1e-6) for b in batch)
        else:
            assert [(r.block, r.row) for r in batch[1].rejections] == [(0, 7)]  # line 9 of the file: data row 7
            assert not batch[0].rejections and not batch[2].rejections


def test_calibrate_group_equals_calibrate(fleet):
    folder, _ = fleet
    together = calibrate_group(problems(folder))
    for cal in together:
        alone = calibrate(load_problem(cal.problem.path))  # its own problem, compiled on its own
        np.testing.assert_allclose(cal.estimate, alone.estimate, rtol=1e-9, atol=0)
        np.testing.assert_allclose(cal.solution.std, alone.solution.std, rtol=1e-9, atol=0)
        np.testing.assert_allclose(cal.baseline, alone.baseline, rtol=1e-9, atol=0)
        a, b = cal.report(), alone.report()
        findings = [[(f["code"], f["level"], f["sentence"]) for f in r["verdict"]["findings"]] for r in (a, b)]
        assert a["verdict"]["level"] == b["verdict"]["level"] and findings[0] == findings[1]
        assert a["identifiability"]["rank"] == b["identifiability"]["rank"]
        for x, y in zip(a["measurements"], b["measurements"], strict=True):
            assert x["after"] == pytest.approx(y["after"], rel=1e-9) and x["before"] == pytest.approx(y["before"], rel=1e-9)
        kinds = {p.name: p.kind for p in alone.problem.layout.parameters}
        criteria = load_criteria(cal.problem.path.parent / "criteria.yaml")
        assert judge(a, kinds, criteria) == judge(b, kinds, criteria)


def test_group_metrics_equal_unit_metrics(fleet):
    """The group's before/after metrics, vectorized over its units, are each unit's own to rounding."""
    folder, _ = fleet
    for cal in calibrate_group(problems(folder)):
        for got, m, mask in zip(cal.metrics, cal.problem.measurements, cal.solution.masks, strict=True):
            alone = measurement_metrics(m, m.data, cal.baseline, cal.estimate, mask > 0)
            assert got.keys() == alone.keys() and all(got[k] == alone[k] for k in got if k not in ("before", "after", "removed", "fit_per_residual"))
            for side in ("before", "after", "removed", "fit_per_residual"):
                assert got[side] == pytest.approx(alone[side], rel=1e-12)


def test_structure_key(fleet, tmp_path):
    folder, _ = fleet
    units = problems(folder)
    assert len({structure_key(u) for u in units}) == 1 and structure_key(units[0]) is not None
    changed = {}
    for name, edit in {
        "robot": lambda d: (d / "robot.urdf").write_text((d / "robot.urdf").read_text().replace("0.", "0.0", 1) + " "),
        "rows": lambda d: (d / "markers.csv").write_text("\n".join((d / "markers.csv").read_text().splitlines()[:-1]) + "\n"),
        "prior": lambda d: (d / "problem.yaml").write_text((d / "problem.yaml").read_text().replace("joint_offset: 0.001", "joint_offset: 0.002")),
        "method": lambda d: (d / "problem.yaml").write_text((d / "problem.yaml").read_text() + "solver: {method: scaled_svd}\n"),
    }.items():
        target = tmp_path / name
        target.mkdir()
        for f in (folder / "UNIT-00000").iterdir():
            (target / f.name).write_bytes(f.read_bytes())
        edit(target)
        changed[name] = structure_key(load_problem(target / "problem.yaml"))
    assert changed["method"] is None
    assert len({changed["robot"], changed["rows"], changed["prior"], structure_key(units[0])}) == 4
    assert group(["a", None, "b", "a", None]) == [[0, 3], [1], [2], [4]]


def test_derived_problem_equals_loaded(fleet, tmp_path):
    """A session derived from the template of its non-data files (robocal.fleet.loading) is the
    problem load_problem builds: same layout, data and source lines, the same calibration to the
    last bit; a changed robot file makes a template of its own, and so does `select: identifiable`
    (a changed problem file), whose later sessions derive from it: the fit chooses what it holds."""
    import hashlib

    from robocal.fleet import loading
    from robocal.provenance import input_files

    folder, _ = fleet
    sessions = sorted(folder.glob("UNIT-*"))

    def files(session: Path) -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in session.iterdir()}

    first, second = (loading.load_session(s / "problem.yaml", files(s)) for s in sessions[:2])
    assert loading.derivable(first) and len(loading._templates) >= 1
    template = next(t for t in loading._templates.values() if t.tree.source.read_bytes() == (sessions[0] / "robot.urdf").read_bytes())
    assert second.tree is template.tree and second.layout is template.layout and second.path == sessions[1] / "problem.yaml"
    loaded = load_problem(sessions[1] / "problem.yaml")
    assert second.layout.names == loaded.layout.names
    np.testing.assert_array_equal(second.layout.prior_precision_sqrt(), loaded.layout.prior_precision_sqrt())
    for mine, theirs in zip(second.measurements, loaded.measurements, strict=True):
        assert mine.ctx.problem_path == theirs.ctx.problem_path
        np.testing.assert_array_equal(mine.lines, theirs.lines)
        for a, b in zip(jax.tree.leaves(mine.data), jax.tree.leaves(theirs.data), strict=True):
            np.testing.assert_array_equal(a, b)
    assert not np.array_equal(second.measurements[0].data.q, first.measurements[0].data.q)  # its own data, not the template's
    a, b = calibrate(second), calibrate(loaded)
    np.testing.assert_array_equal(a.estimate, b.estimate)
    np.testing.assert_array_equal(a.solution.std, b.solution.std)
    assert input_files(second) == input_files(loaded)  # report.json's inputs: the unit's own files
    bent = tmp_path / "bent"
    bent.mkdir()
    for f in sessions[2].iterdir():
        (bent / f.name).write_bytes(f.read_bytes())
    (bent / "robot.urdf").write_text((bent / "robot.urdf").read_text().replace("0.", "0.0", 1))
    count = len(loading._templates)
    bent_problem = loading.load_session(bent / "problem.yaml", files(bent))
    assert len(loading._templates) == count + 1 and bent_problem.tree is not template.tree
    broken = tmp_path / "broken"  # a new robot file and a bad value: no template made, the error names the session's file
    broken.mkdir()
    for f in sessions[4].iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    (broken / "robot.urdf").write_text((broken / "robot.urdf").read_text() + " ")
    lines = (broken / "markers.csv").read_text().splitlines()
    lines[3] = "abc" + lines[3][lines[3].index(",") :]
    (broken / "markers.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="markers.csv, line 4") as error:
        loading.load_session(broken / "problem.yaml", files(broken))
    assert str(broken) in str(error.value) and len(loading._templates) == count + 1
    select = tmp_path / "select"
    select.mkdir()
    for f in sessions[3].iterdir():
        (select / f.name).write_bytes(f.read_bytes())
    (select / "problem.yaml").write_text((select / "problem.yaml").read_text().replace("parameters:\n", "parameters:\n  select: identifiable\n"))
    selected = [loading.load_session(select / "problem.yaml", files(select)) for _ in range(2)]
    newest = loading._templates[next(reversed(loading._templates))]
    assert loading.derivable(selected[1]) and selected[1].tree is newest.tree and len(loading._templates) == count + 2
    a, b = calibrate(selected[1]), calibrate(load_problem(select / "problem.yaml"))
    assert a.held == b.held
    np.testing.assert_array_equal(a.estimate, b.estimate)
