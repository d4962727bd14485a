"""docs/formats.md and the problem schema agree: every measurement type has a section, every
field of its configuration is documented there, and every field its tables name exists."""

from __future__ import annotations

import re

import pytest

from robocal.measurements.base import MeasurementConfig
from robocal.measurements.registry import measurement_types
from tests.conftest import REPO

TEXT = (REPO / "docs" / "formats.md").read_text()


def section(title: str) -> str:
    """The text under the heading `### <title>` up to the next heading."""
    parts = TEXT.split(f"\n### {title}\n")
    assert len(parts) == 2, f"docs/formats.md needs exactly one section '### {title}'"
    return re.split(r"\n##+ ", parts[1])[0]


def table_fields(text: str) -> set[str]:
    """Top-level field names in the first column of the section's tables (`a.b`, `c[].d` -> a, c)."""
    names = set()
    for line in text.splitlines():
        cells = line.split("|")
        if len(cells) > 2 and not set(cells[1].strip()) <= set("-") and cells[1].strip() != "field":
            names |= {re.split(r"[.\[]", name)[0] for name in re.findall(r"`([^`]+)`", cells[1])}
    return names


def documented(field: str, text: str) -> bool:
    return re.search(rf"`{field}[`.\[]|^\s*{field}:", text, re.MULTILINE) is not None


def test_common_fields_are_the_base_configuration() -> None:
    assert table_fields(section("`measurements`: common fields")) == {*MeasurementConfig.model_fields, "type"}


@pytest.mark.parametrize("name", sorted(measurement_types()))
def test_each_measurement_type_is_documented_field_by_field(name: str) -> None:
    text = section(f"`{name}` measurement")
    fields = set(measurement_types()[name].Config.model_fields) - set(MeasurementConfig.model_fields) - {"type"}
    assert [f for f in sorted(fields) if not documented(f, text)] == []
    assert table_fields(text) <= fields
