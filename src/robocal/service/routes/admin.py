"""Robot models with their criteria, stations and tokens. Reading models needs any token; changing
them, and everything about stations and tokens, needs an admin token."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import timedelta

import yaml
from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from robocal.errors import RobocalError
from robocal.fleet.criteria import Criteria
from robocal.fleet.store.models import AuditEntry, FleetModel, Station
from robocal.service.auth import SCOPES, Caller, create_token, require
from robocal.service.routes import checked_name, database

router = APIRouter(tags=["models, stations and tokens"])


class ModelIn(BaseModel):
    name: str = Field(max_length=100)
    urdf: str = Field(max_length=4 * 2**20)
    criteria: str = Field("", max_length=2**16)  # criteria.yaml (robocal.fleet.criteria)


class CriteriaIn(BaseModel):
    criteria: str = Field(max_length=2**16)


class TokenIn(BaseModel):
    scope: str
    station: str | None = None
    expires_in: float | None = Field(None, gt=0, le=10 * 365 * 86400)  # s


def checked_criteria(text: str) -> str:
    try:
        Criteria.model_validate(yaml.safe_load(text) or {})
    except (yaml.YAMLError, ValidationError) as exc:
        raise HTTPException(422, f"criteria: {str(exc).splitlines()[0]}") from None
    return text


def checked_urdf(text: str) -> str:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise HTTPException(422, f"urdf: not XML ({exc})") from None
    if root.tag != "robot":
        raise HTTPException(422, f"urdf: the root element is <{root.tag}>, not <robot>")
    return text


def model_dict(model: FleetModel) -> dict:
    return {"name": model.name, "criteria": model.criteria, "created": model.created.isoformat()}


@router.get("/models")
def list_models(db: DbSession = Depends(database), _: Caller = Depends(require("station"))) -> list[dict]:
    return [model_dict(m) for m in db.scalars(select(FleetModel).order_by(FleetModel.name))]


@router.post("/models", status_code=201)
def create_model(body: ModelIn, request: Request, db: DbSession = Depends(database), who: Caller = Depends(require("admin"))) -> dict:
    """A robot model: its nominal URDF and criteria, added to every session uploaded for it."""
    name, urdf, criteria = checked_name(body.name, "name"), checked_urdf(body.urdf), checked_criteria(body.criteria)
    with request.app.state.write_lock, db.begin():
        if db.scalar(select(FleetModel.id).where(FleetModel.name == name)) is not None:
            raise HTTPException(409, f"model {name} exists")
        model = FleetModel(name=name, urdf=urdf, criteria=criteria)
        db.add(model)
        db.add(AuditEntry(action="model", detail={"name": name, "token": who.token_id}))
        db.flush()
        return model_dict(model)


@router.put("/models/{name}/criteria")
def set_criteria(name: str, body: CriteriaIn, request: Request, db: DbSession = Depends(database), who: Caller = Depends(require("admin"))) -> dict:
    """Replace a model's criteria; sessions uploaded from now on are judged by them."""
    criteria = checked_criteria(body.criteria)
    with request.app.state.write_lock, db.begin():
        model = db.scalar(select(FleetModel).where(FleetModel.name == checked_name(name, "name")))
        if model is None:
            raise HTTPException(404, f"no model {name}")
        model.criteria = criteria
        db.add(AuditEntry(action="criteria", detail={"model": name, "token": who.token_id}))
        return model_dict(model)


@router.get("/stations")
def list_stations(db: DbSession = Depends(database), _: Caller = Depends(require("engineer"))) -> list[dict]:
    return [{"name": s.name, "created": s.created.isoformat()} for s in db.scalars(select(Station).order_by(Station.name))]


@router.post("/tokens", status_code=201)
def new_token(body: TokenIn, request: Request, _: Caller = Depends(require("admin"))) -> dict:
    """A new token (its secret is shown once); a station token creates its station when new."""
    if body.scope not in SCOPES:
        raise HTTPException(422, f"scope: one of {', '.join(SCOPES)}")
    if body.station is not None:
        checked_name(body.station, "station")
    expires = None if body.expires_in is None else timedelta(seconds=body.expires_in)
    try:
        with request.app.state.write_lock:
            token = create_token(request.app.state.engine, body.scope, body.station, expires)
    except RobocalError as exc:
        raise HTTPException(422, str(exc)) from None
    return {"token": token, "scope": body.scope, "station": body.station}
