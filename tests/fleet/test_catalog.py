"""`robocal fleet add-model` and `ingest --model`: a model's URDF and criteria stored as given (the
criteria from a file, or from the URDF's calibration description), sessions filed under it and
counted per model in the fleet's yield; a second model of the same name, an unknown model and bad
criteria refused with a located message."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml
from sqlalchemy.orm import Session as DbSession
from typer.testing import CliRunner

from robocal.cli.fleet import app
from robocal.errors import InputError, RobocalError
from robocal.fleet.catalog import add_model
from robocal.fleet.criteria import Criteria
from robocal.fleet.engine import run
from robocal.fleet.statistics import results, yields
from robocal.fleet.store import open_store
from robocal.fleet.store.models import AuditEntry, FleetModel, Result, Session
from robocal.fleet.store.sessions import ingest
from robocal.problem.description import embed
from tests.fleet.test_store import make_fleet

ARM = Path(__file__).resolve().parents[2] / "examples" / "fleet" / "arm_6r.urdf"
CRITERIA = {"tolerance": {"joint_offset": 0.002}, "max_rms": 0.0005}


def test_add_model_and_file_sessions_under_it(tmp_path):
    db = tmp_path / "robocal.db"
    engine = open_store(db, create=True)
    (tmp_path / "criteria.yaml").write_text(yaml.safe_dump(CRITERIA))
    done = CliRunner().invoke(app, ["add-model", "arm-6r", "--description", str(ARM), "--criteria", str(tmp_path / "criteria.yaml"), "--db", str(db)])
    assert done.exit_code == 0, done.output
    assert "model arm-6r added: 6 actuated joints, criteria from" in done.output
    with DbSession(engine) as session:
        model = session.scalar(sa.select(FleetModel))
        assert (model.name, model.urdf) == ("arm-6r", ARM.read_text())
        assert Criteria.model_validate(yaml.safe_load(model.criteria)) == Criteria.model_validate(CRITERIA)
        assert session.scalar(sa.select(AuditEntry.detail).where(AuditEntry.action == "model"))["name"] == "arm-6r"
    make_fleet(tmp_path / "line", 3)
    make_fleet(tmp_path / "other", 2, first=3)
    assert ingest(engine, tmp_path / "line", "arm-6r") == (3, 0)
    assert ingest(engine, tmp_path / "other") == (2, 0)
    with DbSession(engine) as session:
        assert [s for s in session.scalars(sa.select(Session.model_id).order_by(Session.id))] == [model.id] * 3 + [None] * 2
    verdicts = iter(["pass", "rework", "pass", "pass", "fail"])
    run(engine, work=lambda e, s: Result(session_id=s, parameters=[], report='{"measurements": []}', verdict={"status": next(verdicts), "reasons": []}))
    counted = yields(results(engine))
    assert counted["arm-6r @ -"] == {"pass": 2, "rework": 1, "fail": 0, "yield": 2 / 3}
    assert counted["- @ -"] == {"pass": 1, "rework": 0, "fail": 1, "yield": 0.5}
    with pytest.raises(RobocalError, match="already in the store"):
        add_model(engine, "arm-6r", ARM)
    with pytest.raises(RobocalError, match="no model 'arm-7r'"):
        ingest(engine, tmp_path / "line", "arm-7r")


def test_criteria_from_the_description(tmp_path):
    engine = open_store(tmp_path / "robocal.db", create=True)
    problem = {"parameters": {"default": "joint_offsets"}, "measurements": []}
    described = tmp_path / "arm_described.urdf"
    described.write_bytes(embed(ARM, problem, CRITERIA))
    joints, source = add_model(engine, "arm-described", described)
    assert joints == 6 and "calibration description" in source
    plain = add_model(engine, "arm-plain", ARM)[1]
    assert plain.startswith("defaults")
    with DbSession(engine) as session:
        stored = {name: text for name, text in session.execute(sa.select(FleetModel.name, FleetModel.criteria))}
    assert yaml.safe_load(stored["arm-described"]) == CRITERIA and stored["arm-plain"] == ""
    described.write_bytes(embed(ARM, problem, {"tolerance": {"joint_offset": 0.002}, "sigma": 3}))
    with pytest.raises(InputError, match="criteria"):
        add_model(engine, "arm-bad", described)
    (tmp_path / "bad.yaml").write_text("max_rms: -1\n")
    with pytest.raises(InputError, match="bad.yaml"):
        add_model(engine, "arm-bad", ARM, tmp_path / "bad.yaml")
    (tmp_path / "broken.urdf").write_text("<robot name='arm'><link name='base'>\n")
    with pytest.raises(InputError, match="broken.urdf"):
        add_model(engine, "not-a-robot", tmp_path / "broken.urdf")
    with DbSession(engine) as session:
        assert sorted(session.scalars(sa.select(FleetModel.name))) == ["arm-described", "arm-plain"]
