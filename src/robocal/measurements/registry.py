"""The measurement types a problem file may use. A new type is one module plus one line here."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from robocal.measurements.base import Measurement


def measurement_types() -> dict[str, type[Measurement]]:
    from robocal.measurements.contact import ContactMeasurement
    from robocal.measurements.distance import DistanceMeasurement
    from robocal.measurements.markers import MarkerMeasurement
    from robocal.measurements.odometry import OdometryMeasurement
    from robocal.measurements.socket import SocketMeasurement
    from robocal.measurements.task import TaskMeasurement

    return {cls.type_name: cls for cls in (MarkerMeasurement, ContactMeasurement, TaskMeasurement, SocketMeasurement, OdometryMeasurement, DistanceMeasurement)}


def config_classes() -> list[type]:
    return [cls.Config for cls in measurement_types().values()]
