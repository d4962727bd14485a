"""The measurement types a problem file may use. A new type is one module plus one line in
`_BUILT_IN`; a third-party type registers itself with `register_measurement` or through an entry
point in the group `robocal.measurements` (the class, e.g. `plane = mypkg.plane:PlaneMeasurement`),
and the problem schema (`robocal.problem.schema.problem_config`) accepts it from then on."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, get_args

from robocal.errors import RobocalError

if TYPE_CHECKING:
    from robocal.measurements.base import Measurement

ENTRY_POINT_GROUP = "robocal.measurements"
_BUILT_IN = (
    "robocal.measurements.markers:MarkerMeasurement",
    "robocal.measurements.contact:ContactMeasurement",
    "robocal.measurements.task:TaskMeasurement",
    "robocal.measurements.socket:SocketMeasurement",
    "robocal.measurements.odometry:OdometryMeasurement",
    "robocal.measurements.distance:DistanceMeasurement",
)
_types: dict[str, type[Measurement]] = {}
_loaded = False  # the built-in types and the entry points are registered on first use


def register_measurement(cls: type[Measurement]) -> type[Measurement]:
    """Make `cls` a measurement type of problem files, under `cls.type_name` (usable as a class
    decorator). Its `Config` must be a `MeasurementConfig` whose `type` field is the literal
    `cls.type_name`, which is what tells the entries of a problem file apart."""
    from robocal.measurements.base import Measurement, MeasurementConfig

    if not (isinstance(cls, type) and issubclass(cls, Measurement)):
        raise RobocalError(f"{cls!r} is not a subclass of robocal.measurements.base.Measurement")
    name = getattr(cls, "type_name", None)
    config = getattr(cls, "Config", None)
    if not isinstance(name, str) or not (isinstance(config, type) and issubclass(config, MeasurementConfig)):
        raise RobocalError(f"{cls.__qualname__}: a measurement type needs a `type_name` and a `Config` (a MeasurementConfig)")
    field = config.model_fields.get("type")
    if field is None or get_args(field.annotation) != (name,):
        raise RobocalError(f"{cls.__qualname__}.Config: its field `type` must be Literal['{name}']")
    known = _types.get(name)
    if known is not None and known is not cls:
        raise RobocalError(f"measurement type '{name}' is taken by {known.__module__}.{known.__qualname__}")
    _types[name] = cls
    return cls


def measurement_types() -> dict[str, type[Measurement]]:
    """Every registered type by name: the built-in ones, the entry points' and those registered
    by `register_measurement`."""
    global _loaded
    if not _loaded:
        for target in _BUILT_IN:
            module, _, attribute = target.partition(":")
            register_measurement(getattr(importlib.import_module(module), attribute))
        for point in entry_points(group=ENTRY_POINT_GROUP):
            try:
                cls = point.load()
            except Exception as exc:  # a broken plug-in is named, not a traceback from deep inside the import
                raise RobocalError(f"measurement plug-in '{point.name}' ({point.value}) cannot be loaded: {exc}") from exc
            register_measurement(cls)
        _loaded = True
    return dict(_types)


def config_classes() -> tuple[type, ...]:
    return tuple(cls.Config for cls in measurement_types().values())
