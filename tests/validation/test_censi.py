"""Censi et al.'s three real logs (read from ../shared, skipped when absent): `robocal calibrate`
on the shipped problem files reproduces the published estimates."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from robocal.cli import app
from tests.conftest import REPO, shared_path

spec = importlib.util.spec_from_file_location("censi_validate", REPO / "examples/censi/validate.py")
censi_validate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(censi_validate)
PUBLISHED = censi_validate.PUBLISHED  # published key -> (our parameter, factor from our value to the published one)


@pytest.mark.parametrize("log", ["lstraight", "l90", "lmov"])
def test_calibrate_reproduces_the_published_results(log: str, tmp_path: Path) -> None:
    reference = json.loads(shared_path(f"data/censi_odometry/{log}_results.json").read_text())
    run = CliRunner().invoke(app, ["calibrate", str(REPO / "examples" / "censi" / f"{log}.yaml"), "--out", str(tmp_path)])
    assert run.exit_code == 0, run.output
    report = json.loads((tmp_path / "report.json").read_text())
    ours = {p["name"]: p for p in report["parameters"]}
    for key, (name, factor) in PUBLISHED.items():
        value = factor * ours[name]["estimate"]
        if key == "l_theta":
            assert abs(value - reference[key]) < 1e-4, (key, value, reference[key])
        else:
            assert abs(value - reference[key]) < 1e-4 * abs(reference[key]), (key, value, reference[key])
        assert ours[name]["std"] is not None and 0 < ours[name]["std"] < 0.1 * abs(reference[key]) + 0.01
    # 4 rounds of trimming 1 % each: between 4 % and 8 % of the records left out, each with its reason
    n = report["measurements"][0]["n"] + len(report["rejected"])
    assert 0.04 * n < len(report["rejected"]) < 0.08 * n
    assert all(r["reason"].startswith("trimmed in round") for r in report["rejected"])
