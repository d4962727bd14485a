"""`robocal convert` end to end: URDF -> DH table -> URDF, and the error contract (one located
`error:` line, exit code 2, nothing written, no file overwritten)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robocal.kinematics.convert import table_difference
from robocal.kinematics.dh import load_dh
from robocal.kinematics.urdf import load_urdf
from tests.conftest import REPO

PANDA = REPO / "examples/mukca/data/urdf/panda.urdf"


def robocal(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1", TERM="dumb", JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-m", "robocal", *map(str, args)], capture_output=True, text=True, env=env, timeout=120, cwd=cwd)


def test_urdf_to_dh_and_back(tmp_path):
    """Both files keep every Panda link's pose to 1e-10 (robocal's FK; Pinocchio checks the same
    conversions in tests/kinematics/test_convert.py), and the DH table reads as the Panda's
    published modified-DH table (d1 = 0.333, d3 = 0.316, a4 = 0.0825, d5 = 0.384, a7 = 0.088,
    flange d = 0.107)."""
    table = tmp_path / "panda.yaml"
    done = robocal("convert", PANDA, "--out", table)
    assert done.returncode == 0, done.stderr
    assert "links on DH frames: " in done.stdout and "panda_link7" in done.stdout
    source, dh = load_urdf(PANDA), load_dh(table)
    assert max(table_difference(source, dh)) < 1e-10
    values = {j.name: j.origin.values for j in dh.joints}
    expected = {"panda_joint1": 0.333, "panda_joint3": 0.316, "panda_joint5": 0.384, "panda_link8_joint": 0.107}
    assert {name: values[name][0] for name in expected} == pytest.approx(expected, abs=1e-12)  # d
    assert [values[f"panda_joint{k}"][2] for k in (4, 5, 7)] == pytest.approx([0.0825, -0.0825, 0.088], abs=1e-12)  # a
    assert [values[f"panda_joint{k}"][3] for k in range(1, 8)] == pytest.approx(np.array([0, -1, 1, 1, -1, 1, 1]) * np.pi / 2, abs=1e-12)  # alpha

    urdf = tmp_path / "panda_dh.urdf"
    done = robocal("convert", table, "--out", urdf)
    assert done.returncode == 0, done.stderr
    assert max(table_difference(dh, load_urdf(urdf))) < 1e-10
    standard = tmp_path / "panda_standard.yml"
    done = robocal("convert", urdf, "--out", standard, "--convention", "standard")
    assert done.returncode == 0, done.stderr
    assert "convention: standard" in standard.read_text()
    assert max(table_difference(source, load_dh(standard))) < 1e-10


@pytest.mark.parametrize(
    "case, args, message",
    [
        ("exists", ["{urdf}", "--out", "{existing}"], "exists"),
        ("urdf to urdf", ["{urdf}", "--out", "{folder}/x.urdf"], "already a URDF"),
        ("suffix", ["{urdf}", "--out", "{folder}/x.txt"], ".yaml or .yml"),
        ("convention", ["{urdf}", "--out", "{folder}/x.yaml", "--convention", "craig"], "one of modified, standard"),
        ("convention for a URDF", ["{table}", "--out", "{folder}/x.urdf", "--convention", "standard"], "only a DH table"),
        ("bad URDF", ["{bad_urdf}", "--out", "{folder}/x.yaml"], "bad.urdf, line 3"),
        ("bad DH table", ["{bad_table}", "--out", "{folder}/x.urdf"], "field 'chains[0].joints[1].alpha'"),
        ("missing", ["{folder}/none.urdf", "--out", "{folder}/x.yaml"], "cannot read URDF"),
    ],
)
def test_bad_input_writes_nothing(tmp_path, case, args, message):
    folder = tmp_path
    existing = folder / "existing.yaml"
    existing.write_text("keep me\n")
    (folder / "bad.urdf").write_text('<robot name="r">\n  <link name="a"/>\n  <link name="a"/>\n</robot>\n')
    (folder / "bad.yaml").write_text(
        "name: r\nconvention: modified\nchains:\n  - name: c\n    joints:\n      - {name: j1}\n      - {name: j2, alpha: 'pi / two'}\n"
    )
    (folder / "good.yaml").write_text("name: r\nconvention: modified\nchains:\n  - name: c\n    joints:\n      - {name: j1, d: 0.1}\n")
    names = {
        "urdf": PANDA,
        "existing": existing,
        "folder": folder,
        "table": folder / "good.yaml",
        "bad_urdf": folder / "bad.urdf",
        "bad_table": folder / "bad.yaml",
    }
    before = sorted(p.name for p in folder.iterdir())
    done = robocal("convert", *(a.format(**names) for a in args))
    assert done.returncode == 2, (case, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], (case, done.stderr)
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing written, no partial file left
    assert existing.read_text() == "keep me\n"
