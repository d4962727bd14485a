"""Contact warnings, the side-by-side picture and `robocal teleop show`.

Known distances come from the DLR-Hand II's geometry: a straight finger's distal capsule core
lies on the line through its base origin along the finger, from 0.1315 to 0.148 m, radius
0.01425 m; the fore and middle finger bases share one orientation, so with equal joints their
capsules are parallel and, overlapping along the finger, as far apart as the lines.
"""

from __future__ import annotations

import csv
import re
import sys

import jax.numpy as jnp
import numpy as np
import pytest
from matplotlib.image import imread
from typer.testing import CliRunner

from robocal import cli
from robocal.cli import app
from robocal.errors import InputError, RobocalError
from robocal.teleop import HandMapping
from robocal.teleop.contact import contact_distances, contact_warnings, parse_object, sphere
from robocal.teleop.picture import check_picture_path, draw, save_picture

RADIUS = 0.01425


@pytest.fixture(scope="module")
def mapping():
    return HandMapping.load()


def _straight(mapping, abduction: float):
    """Joint vector with every finger straight, fore and middle abducted by `abduction`; the
    finger axes (4, 3) and base origins (4, 3) in the palm frame."""
    q = dict.fromkeys(mapping.config.robot.actuated, 0.0)
    q.update(fore_q1=abduction, middle_q1=abduction)
    model = mapping.robot_model
    bases = np.asarray(model.link_poses(model.nominal, jnp.zeros(12), [f"{f}_base" for f in mapping.fingers]))
    axes = np.array([b[:3, :3] @ [np.cos(a), np.sin(a), 0.0] for b, a in zip(bases, [0.0, abduction, abduction, 0.0])])
    return np.array(list(q.values())), axes, bases[:, :3, 3]


@pytest.mark.parametrize("abduction", [0.0, 0.3])
def test_fingertip_pair_warning_at_the_parallel_line_distance(mapping, abduction):
    q, axes, origins = _straight(mapping, abduction)
    model = mapping.robot_model
    fore, middle = model.link_poses(model.nominal, jnp.zeros(12), ["fore_base", "middle_base"])
    np.testing.assert_allclose(np.asarray(fore)[:3, :3], np.asarray(middle)[:3, :3], atol=1e-15)
    offset = origins[2] - origins[1]
    along = offset @ axes[1]
    assert abs(along) < 0.033 - 0.0165  # the two cores overlap along the finger
    expected = np.sqrt(offset @ offset - along**2) - 2 * RADIUS
    distances = {(c.a, c.b): c.distance for c in contact_distances(mapping, q)}
    assert distances[("fore", "middle")] == pytest.approx(expected, abs=1e-12)
    assert [(w.a, w.b) for w in contact_warnings(mapping, q, threshold=expected + 1e-3)] == [("fore", "middle")]
    assert contact_warnings(mapping, q, threshold=expected - 1e-3) == []


def _ball_beside_fore(axes, origins, gap: float, radius: float = 0.02):
    """A ball `gap` (m) from the straight fore finger's distal capsule, on the side away from
    the middle finger, level with the middle of the capsule core."""
    middle_of_core = origins[1] + axes[1] * (0.1315 + 0.148) / 2
    away = np.cross(axes[1], origins[2] - origins[1])  # perpendicular to the finger and to the middle finger
    return sphere("ball", middle_of_core + away / np.linalg.norm(away) * (radius + RADIUS + gap), radius)


def test_sphere_object_distance_and_warning(mapping):
    q, axes, origins = _straight(mapping, 0.0)
    for gap, warned in ((0.003, True), (0.007, False)):
        ball = _ball_beside_fore(axes, origins, gap)
        distances = {(c.a, c.b): c.distance for c in contact_distances(mapping, q, [ball])}
        assert distances[("fore", "ball")] == pytest.approx(gap, abs=1e-12)
        warnings = contact_warnings(mapping, q, [ball])  # the file's threshold, 5 mm
        assert [(w.a, w.b) for w in warnings if w.b == "ball"] == ([("fore", "ball")] if warned else [])
    parsed = parse_object("sphere:0.01,0.02,0.2,0.015", "object 1")
    np.testing.assert_allclose(parsed.pose[:3, 3], [0.01, 0.02, 0.2])
    assert parsed.shape.radius == 0.015


def test_picture_shows_both_hands_and_the_warnings(mapping, tmp_path):
    q, axes, origins = _straight(mapping, 0.0)
    ball = _ball_beside_fore(axes, origins, 0.004)
    warnings = contact_warnings(mapping, q, [ball], threshold=0.015)  # the ball at 4 mm, the middle finger at 11.7 mm
    assert [(w.a, w.b) for w in warnings] == [("fore", "ball"), ("fore", "middle")]
    assert warnings[0].distance == pytest.approx(0.004, abs=1e-12)
    fig = draw(mapping, np.zeros(len(mapping.config.human.actuated)), q, warnings, [ball])
    assert fig.get_suptitle() == "contact warnings: fore - ball: 4.0 mm; fore - middle: 11.7 mm"
    path = save_picture(fig, tmp_path / "hands.png")
    assert imread(path).shape[:2] == (600, 1200)  # 12 x 6 in at 100 dpi
    assert path.stat().st_size > 40_000  # two 3D views with wireframes, not an empty canvas


def test_cli_show_writes_the_picture_and_reports_errors_by_line_and_column(mapping, tmp_path):
    names = mapping.config.human.actuated
    rows = [dict.fromkeys(names, 0.0), dict.fromkeys(names, 0.0)]
    rows[1].update(index_mcp=0.8, index_pip=0.9, thumb_T1=0.5, thumb_T2=0.6, thumb_T3=0.6)
    data = tmp_path / "poses.csv"
    with data.open("w", newline="") as f:
        writer = csv.DictWriter(f, names)
        writer.writeheader()
        writer.writerows(rows)
    picture = tmp_path / "show.png"
    result = CliRunner().invoke(app, ["teleop", "show", "--joints", str(data), "--row", "2", "--mode", "joint", "--out", str(picture), "--threshold", "0.1"])
    assert result.exit_code == 0, result.output
    q = mapping.joint_map(rows[1])
    expected = contact_warnings(mapping, q, threshold=0.1)
    assert [line for line in result.output.splitlines() if line.startswith("warning:")] == [f"warning: {w}" for w in expected]
    assert imread(picture).shape[:2] == (600, 1200)
    data.write_text(data.read_text().replace("0.8", "0.8x", 1))
    result = CliRunner().invoke(app, ["teleop", "show", "--joints", str(data), "--out", str(picture)])
    assert isinstance(result.exception, InputError)
    assert str(result.exception) == f"{data}, line 3, column 'index_mcp': '0.8x' is not a number"


def test_cli_show_maps_raw_glove_readings_through_a_sensor_file(mapping, tmp_path):
    """--sensors: the CSV holds raw glove readings; the robot joints are the joint mapping of the
    joint values the sensor file gives."""
    from robocal.kinematics.sensors import JointSensors
    from robocal.models import packaged
    from robocal.simulation.glove import GLOVE

    glove = JointSensors.load(packaged(GLOVE), mapping.config.human.actuated)
    raw = np.random.default_rng(0).uniform(60, 160, (2, len(glove.sensors)))
    data = tmp_path / "raw.csv"
    data.write_text(",".join(glove.sensors) + "\n" + "\n".join(",".join(f"{v:.17g}" for v in r) for r in raw) + "\n")
    result = CliRunner().invoke(
        app, ["teleop", "show", "--joints", str(data), "--sensors", str(packaged(GLOVE)), "--row", "2", "--mode", "joint", "--out", str(tmp_path / "p.png")]
    )
    assert result.exit_code == 0, result.output
    printed = dict((name, float(value)) for name, value in re.findall(r"(\w+)=(-?\d+\.\d+)", result.output))  # the console may wrap the line
    expected = mapping.joint_map(glove.joint_values(raw[1]))
    assert np.allclose([printed[name] for name in mapping.config.robot.actuated], expected, atol=5e-5)  # printed to 4 decimals


@pytest.mark.parametrize(
    "name, said", [("tp.txt", "must be a picture file ending in one of"), ("SOMEDIR", "must be a picture file"), ("pics.png", "existing folder")]
)
def test_cli_show_refuses_an_out_it_cannot_write_before_any_work(tmp_path, name, said):
    """--out is checked first: a suffix matplotlib cannot write, or an existing folder, is one line
    naming --out, exit code 2, and nothing is written (the missing --joints is never read)."""
    (tmp_path / "SOMEDIR").mkdir()
    (tmp_path / "pics.png").mkdir()
    before = sorted(tmp_path.rglob("*"))
    out = tmp_path / name
    result = CliRunner().invoke(app, ["teleop", "show", "--joints", str(tmp_path / "missing.csv"), "--mode", "joint", "--out", str(out)])
    assert isinstance(result.exception, RobocalError) and not isinstance(result.exception, InputError)
    assert str(result.exception).startswith(f"{out}: --out ") and said in str(result.exception) and "\n" not in str(result.exception)
    assert sorted(tmp_path.rglob("*")) == before


def test_cli_show_bad_out_exits_2_with_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["robocal", "teleop", "show", "--joints", str(tmp_path / "poses.csv"), "--out", str(tmp_path / "tp.txt")])
    monkeypatch.setenv("COLUMNS", "500")
    with pytest.raises(SystemExit) as info:
        cli.main()
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith(f"error: {tmp_path / 'tp.txt'}: --out must be a picture file") and err.count("\n") == 1
    assert not (tmp_path / "tp.txt").exists()


def test_picture_path_is_never_an_input_nor_in_a_file(tmp_path):
    picture = tmp_path / "hands.png"
    picture.write_bytes(b"an input picture")
    with pytest.raises(RobocalError, match="--out is one of the command's input files"):
        check_picture_path(picture, [tmp_path / "poses.csv", None, picture])
    (tmp_path / "file").write_text("")
    with pytest.raises(RobocalError, match="is not a writable folder"):
        check_picture_path(tmp_path / "file" / "hands.png")
    for fine in (picture, tmp_path / "new" / "deeper" / "hands.PNG", tmp_path / "hands.svg"):  # an earlier picture is replaced; folders are made
        check_picture_path(fine, [tmp_path / "poses.csv"])
    with pytest.raises(RobocalError, match="ending in one of"):
        check_picture_path(tmp_path / "hands.pgf")  # needs a TeX install
    assert picture.read_bytes() == b"an input picture"
