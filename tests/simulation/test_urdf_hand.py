"""`robocal simulate contact --robot HAND.urdf`: a hand given as a URDF goes through the contact
simulation of the DLR-Hand II (robocal.simulation.contact), its bodies and pairs read from the
URDF's collisions, its truth perturbed in DH terms.

Independent references: the URDF's structure as written in examples/three_finger/hand.urdf (which
links carry which collisions), `robocal.kinematics.convert.table_difference` and the URDF reader
for the true hand, `robocal.geometry.links.link_distance` (the library's per-shape path, not the
search's batched swept spheres) on the written true.urdf for the contacts, and the `contact`
measurement reading the written problem files.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from robocal.calibration import measurement_metrics
from robocal.cli import app
from robocal.errors import InputError, RobocalError
from robocal.geometry.links import link_distance, urdf_collisions
from robocal.kinematics.convert import table_difference
from robocal.kinematics.model import RobotModel
from robocal.kinematics.urdf import load_urdf
from robocal.problem import load_problem
from robocal.simulation.contact.urdf_hand import chain_end, fingertips, hand_bodies, parse_pairs, simulate_urdf_hand
from robocal.simulation.sampling import batch_link_poses, sample_configurations
from tests.conftest import REPO

HAND = REPO / "examples" / "three_finger" / "hand.urdf"
TIPS = ("thumb_link4", "index_link4", "middle_link4")
TRANSLATION, ROTATION = 0.002, float(np.deg2rad(2.0))
N_PER_PAIR = 6


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    return simulate_urdf_hand(HAND, tmp_path_factory.mktemp("urdf_hand"), n_per_pair=N_PER_PAIR, seed=3, translation=TRANSLATION, rotation=ROTATION)


def test_fingertips_are_the_collision_links_that_end_a_finger():
    """The palm's box has bodies below it and no actuated joint moves it: not a fingertip. The
    distal capsules are; each chain ends in its fixed tip link."""
    tree = load_urdf(HAND)
    collisions = urdf_collisions(HAND)
    assert sorted(collisions.shapes) == sorted(("palm", *TIPS))
    assert fingertips(tree, collisions) == TIPS
    assert [chain_end(tree, tip) for tip in TIPS] == ["thumb_tip", "index_tip", "middle_tip"]
    assert hand_bodies(HAND)[2] == [(TIPS[0], TIPS[1]), (TIPS[0], TIPS[2]), (TIPS[1], TIPS[2])]


def test_a_collision_below_a_capsule_makes_it_no_fingertip(tmp_path):
    """A mesh on the index tip link (a collision robocal does not read) still ends that finger:
    its capsule is no fingertip, and with one fingertip left the pairs must be named."""
    text = HAND.read_text().replace(
        '<link name="index_tip"/>', '<link name="index_tip"><collision><geometry><mesh filename="tip.stl"/></geometry></collision></link>'
    )
    urdf = tmp_path / "hand.urdf"
    urdf.write_text(text)
    assert fingertips(load_urdf(urdf), urdf_collisions(urdf)) == (TIPS[0], TIPS[2])
    assert hand_bodies(urdf, "thumb_link4:index_link4")[2] == [("thumb_link4", "index_link4")]
    sphere = '<link name="middle_tip"><collision><geometry><sphere radius="0.01"/></geometry></collision></link>'
    urdf.write_text(text.replace('<link name="middle_tip"/>', sphere))
    assert fingertips(load_urdf(urdf), urdf_collisions(urdf)) == (TIPS[0], "middle_tip")  # a usable shape that ends the chain
    urdf.write_text(text.replace('<link name="middle_tip"/>', sphere.replace('<sphere radius="0.01"/>', '<mesh filename="tip.stl"/>')))
    with pytest.raises(RobocalError, match="1 fingertip"):
        hand_bodies(urdf)


def test_pairs_are_checked():
    bodies = ("palm", *TIPS)
    assert parse_pairs(" thumb_link4:index_link4 , index_link4:palm", bodies) == [("thumb_link4", "index_link4"), ("index_link4", "palm")]
    for text, message in (
        ("thumb_link4", "two different links"),
        ("thumb_link4:thumb_link4", "two different"),
        ("thumb_link4:index_link3", "index_link3"),
        (",", "at least one"),
    ):
        with pytest.raises(RobocalError, match=message):
            parse_pairs(text, bodies)


def test_the_truth_is_the_hand_perturbed_in_dh_terms(written):
    """hand_dh.yaml is the URDF to 1e-10 (every link's pose); the truth moves every DH number of
    the 12 joint rows by at most the perturbation and true.urdf is that hand (FK to 1e-12)."""
    hand = written.hand
    assert max(table_difference(load_urdf(HAND), hand.dh_tree)) < 1e-10
    truth = hand.truth
    assert len(truth.parameters) == 48 and {p.name.split(".")[0] for p in truth.parameters} == {j.name for j in load_urdf(HAND).joints if j.moves}
    change = hand.theta_true - truth.nominal
    limit = np.array([TRANSLATION if p.kind == "translation" else ROTATION for p in truth.parameters])
    assert np.all(np.abs(change) <= limit) and np.abs(change / limit).max() > 0.9
    true_urdf = RobotModel(load_urdf(written.files[2]))
    links = ["thumb_tip", "index_tip", "middle_tip", *TIPS]
    q = sample_configurations(hand.dh_tree, 20, seed=1)
    mine = batch_link_poses(truth, hand.theta_true, q, links)
    theirs = batch_link_poses(true_urdf, true_urdf.nominal, q, links)  # same actuated joint order: the URDF's
    assert np.abs(mine - theirs).max() < 1e-12
    nominal = batch_link_poses(truth, truth.nominal, q, links)
    assert np.linalg.norm(mine[..., :3, 3] - nominal[..., :3, 3], axis=-1).mean() > 2e-3  # the perturbation is real: millimetres


def test_contacts_touch_on_the_true_hand(written):
    """Every pair has its contacts, and at each recorded configuration the two capsules of the
    true hand (true.urdf, distances by link_distance) touch to 1e-9 m; on the nominal hand they do not."""
    sim = written.sim
    assert sim.counts() == {tuple(sorted(pair)): N_PER_PAIR for pair in written.pairs}
    true_urdf = RobotModel(load_urdf(written.files[2]))
    nominal = RobotModel(load_urdf(HAND))
    geometry = written.geometry
    for model in (true_urdf, nominal):
        distances = []
        for (a, b), q in zip(sim.pairs, sim.q):
            poses = model.link_poses(jnp.asarray(model.nominal), jnp.asarray(q), (a, b))
            distances.append(float(link_distance(geometry[a], poses[0], geometry[b], poses[1])))
        if model is true_urdf:
            assert np.abs(distances).max() < 1e-9
        else:
            assert np.abs(distances).mean() > 2e-4


def test_problem_files_load(written):
    """problem.yaml (the URDF, `full`, geometry from_urdf: true) and problem_dh.yaml (the DH table)
    read the same contacts with the fingertips as bodies; the priors are the perturbation's
    standard deviation (uniform +-h: h / sqrt(3))."""
    config = yaml.safe_load(written.problem.read_text())
    assert config["geometry"] == {"from_urdf": True, "bodies": list(TIPS)}
    assert config["priors"]["translation"] == pytest.approx(TRANSLATION / np.sqrt(3.0))
    assert config["task"] == {"tips": ["thumb_tip", "index_tip", "middle_tip"], "reference": "thumb_tip"}
    urdf, dh = load_problem(written.problem), load_problem(written.problem_dh)
    assert sorted(urdf.geometry) == sorted(dh.geometry) == sorted(TIPS)
    assert len(urdf.robot.parameters) == 72 and len(dh.robot.parameters) == 48
    for problem in (urdf, dh):
        contacts = problem.measurements[0]
        assert contacts.n == 3 * N_PER_PAIR
        assert contacts.pairs == tuple(sorted(tuple(sorted(p)) for p in written.pairs))
        # One figure per contact (the rows are held per pair: robocal.measurements.base.padded_rows);
        # at the nominal hand the contacts of the true one are apart or overlapping by about a millimetre.
        figures = measurement_metrics(contacts, contacts.data, problem.theta0, problem.theta0)
        assert figures["n"] == 3 * N_PER_PAIR and 2e-4 < figures["before"]["mean"] < 5e-3


def test_from_urdf_true_needs_a_urdf_robot(written, tmp_path):
    config = yaml.safe_load(written.problem_dh.read_text())
    config["geometry"]["from_urdf"] = True
    path = written.problem_dh.with_name("bad.yaml")
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(InputError, match="from_urdf: true takes the problem's robot URDF, but the robot hand_dh.yaml is a DH table") as error:
        load_problem(path)
    assert error.value.field == "geometry.from_urdf" and error.value.path == path


def test_cli(tmp_path):
    runner = CliRunner()
    out = tmp_path / "sim"
    result = runner.invoke(app, ["simulate", "contact", "--robot", str(HAND), "--out", str(out), "--n-per-pair", "2", "--pairs", "thumb_link4:index_link4"])
    assert result.exit_code == 0, result.output
    assert "calibrate: robocal calibrate" in result.output and "problem_dh.yaml" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["contacts.csv", "hand.urdf", "hand_dh.yaml", "problem.yaml", "problem_dh.yaml", "true.urdf"]
    assert len((out / "contacts.csv").read_text().splitlines()) == 3
    result = runner.invoke(app, ["simulate", "contact", "--out", str(tmp_path / "dlr"), "--pairs", "a:b"])
    assert isinstance(result.exception, RobocalError) and "--pairs names links of --robot" in str(result.exception)  # exit 2 from robocal's main
