"""Parsing of the options that hold lists: comma-separated values, repeated or not."""

from __future__ import annotations

from robocal.errors import RobocalError


def csv_list(value: str, option: str, cast=str, positive: bool = False) -> tuple:
    """The items of a comma-separated option; a given option must name at least one, and with
    `positive` every item must be a finite number above 0."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    what = f"{option} '{value}'"
    if not items:
        raise RobocalError(f"{what}: expected a comma-separated list of at least one item")
    try:
        values = tuple(cast(v) for v in items)
    except ValueError:
        raise RobocalError(f"{what}: expected a comma-separated list of {cast.__name__} values") from None
    if positive and not all(0 < v < float("inf") for v in values):
        raise RobocalError(f"{what}: every value must be a positive, finite number")
    return values


def names(values: list[str] | None) -> list[str] | None:
    """The names of an option given repeated and/or comma-separated (`--tips a,b --tips c`), or
    None when none was given."""
    return [name.strip() for value in values or () for name in value.split(",") if name.strip()] or None
