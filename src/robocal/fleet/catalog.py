"""Robot models in the fleet store (`robocal fleet add-model`): a model's nominal URDF, with or
without a calibration description (robocal.problem.description), and its criteria. The service
adds a model's files to each session a station uploads for it; `robocal fleet ingest --model`
files the sessions of a folder under one, so the fleet report counts their yield per model."""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml
from pydantic import ValidationError
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session as DbSession

from robocal.errors import InputError, RobocalError
from robocal.fleet.criteria import Criteria, load_criteria
from robocal.fleet.store.models import AuditEntry, FleetModel
from robocal.kinematics.urdf import parse_document
from robocal.problem.description import NAMESPACE, extract


def model_criteria(description: Path, criteria: Path | None) -> tuple[str, str]:
    """(criteria.yaml text, where it came from): the file `criteria`, else the description's
    <robocal:criteria>, else none (the defaults of robocal.fleet.criteria); checked either way."""
    if criteria is not None:
        if not criteria.is_file():
            raise InputError(criteria, "no such file")
        load_criteria(criteria)  # a located error where it is not a criteria file
        return criteria.read_text(), str(criteria)
    if parse_document(description).getroot().find(f"{{{NAMESPACE}}}calibration") is None:
        return "", "defaults (no criteria given, no calibration description in the URDF)"
    found = extract(description)[1]
    if found is None:
        return "", "defaults (the calibration description has no <robocal:criteria>)"
    try:
        Criteria.model_validate(found)
    except ValidationError as exc:
        raise InputError(description, "<robocal:criteria>: " + str(exc).replace("\n", " ")) from None
    return yaml.safe_dump(found, sort_keys=False), f"the calibration description in {description.name}"


def add_model(engine: Engine, name: str, description: Path, criteria: Path | None = None) -> tuple[int, str]:
    """Store model `name` (a new name: a changed model is a new version under a name of its own);
    returns its actuated joints and where its criteria came from."""
    from robocal.kinematics.load import load_robot

    if not name or len(name) > 100 or any(c.isspace() or c == "/" for c in name):
        raise RobocalError(f"model name '{name}': 1 to 100 characters, no spaces or slashes")
    tree = load_robot(description)  # a located error where the URDF does not describe a robot
    text, source = model_criteria(description, criteria)
    urdf = description.read_text()
    with DbSession(engine) as db, db.begin():
        if db.scalar(select(FleetModel.id).where(FleetModel.name == name)) is not None:
            raise RobocalError(f"model {name} is already in the store; give the new version a name of its own (e.g. {name}-2)")
        model = FleetModel(name=name, urdf=urdf, criteria=text)
        db.add(model)
        digest = hashlib.sha256(urdf.encode()).hexdigest()
        db.add(AuditEntry(action="model", detail={"name": name, "urdf_sha256": digest, "joints": len(tree.actuated), "source": "cli"}))
    return len(tree.actuated), source
