"""Reading YAML into pydantic models with errors that name the file and the field path."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from robocal.errors import InputError
from robocal.io.table import read_text

M = TypeVar("M", bound=BaseModel)


def _not_bool(value):
    """YAML reads `true` / `yes` as a boolean, which pydantic would take as 1.0: refuse it."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, found the boolean {str(value).lower()}")
    return value


# A finite number (never a boolean), a point or vector of three, a count of at least one, and a seed.
Number = Annotated[float, BeforeValidator(_not_bool), Field(allow_inf_nan=False)]
Vec3 = tuple[Number, Number, Number]
Count = Annotated[int, BeforeValidator(_not_bool), Field(gt=0)]
Seed = Annotated[int, BeforeValidator(_not_bool), Field(ge=0)]  # a random generator's seed: numpy takes none below 0
# A positive, finite number (never a boolean); the type of every positive setting of a config file.
Positive = Annotated[float, BeforeValidator(_not_bool), Field(gt=0, allow_inf_nan=False)]
# A standard deviation (SI: m, rad, or the unit of its quantity): positive, finite, and within what
# a measurement or prior can mean. Below 1e-12 (a picometre) whitening would multiply residuals by
# more than 1e12 and lose every digit of float64; above 1e3 the quantity is not constrained at all.
SIGMA_RANGE = (1e-12, 1e3)
Sigma = Annotated[float, BeforeValidator(_not_bool), Field(ge=SIGMA_RANGE[0], le=SIGMA_RANGE[1], allow_inf_nan=False)]


def field_path(loc: tuple, raw=None, missing: bool = False) -> str:
    """pydantic's location tuple as `measurements[0].sigma`.

    With the validated input `raw`, the labels pydantic inserts for union members (the
    discriminator value `markers`, `Placement`, `literal['auto']`) are dropped: a string part is
    kept only if it is a key of the input there, or the absent key of a `missing` error.
    """
    out, node = "", raw
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
            node = node[part] if isinstance(node, (list, tuple)) and -len(node) <= part < len(node) else None
            continue
        if raw is not None and not (isinstance(node, dict) and part in node) and not (missing and i == len(loc) - 1):
            continue
        out += f".{part}" if out else str(part)
        node = node.get(part) if isinstance(node, dict) else None
    return out


def _first_error(errors: list[ErrorDetails]) -> ErrorDetails:
    """The error to report: an unknown key first (a typo also makes the intended field 'missing')."""
    return next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])


def _message(error: ErrorDetails, errors: list[ErrorDetails]) -> str:
    """pydantic's message, with what the file has where that helps (not for a missing key)."""
    if error["type"] != "extra_forbidden":
        message = error["msg"].removeprefix("Value error, ")
        found = error.get("input")
        if error["type"] != "missing" and not isinstance(found, (dict, list)) and repr(found) not in message:
            message += f"; found {found!r}"
        return message
    key, parent = str(error["loc"][-1]), error["loc"][:-1]
    missing = [str(e["loc"][-1]) for e in errors if e["type"] == "missing" and e["loc"][:-1] == parent]
    close = difflib.get_close_matches(key, missing, n=1)
    return f"unknown key '{key}'" + (f"; did you mean '{close[0]}'?" if close else "")


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping (the last would silently win)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` entries may be overridden on purpose
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)):
                continue  # unhashable keys are left to the schema
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key '{key}' given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def yaml_problem(exc: yaml.YAMLError, text: str | None = None) -> tuple[str, int | None]:
    """What is wrong in a YAML `text`, in one line, and the 1-based line where it is (None where
    neither YAML nor the text tells)."""
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow, e.g. a NUL
        character = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
        return f"unacceptable character {character}: {exc.reason}", text.count("\n", 0, exc.position) + 1 if text is not None else None
    mark = getattr(exc, "problem_mark", None)
    return getattr(exc, "problem", None) or str(exc).splitlines()[0], mark.line + 1 if mark else None


def read_yaml(path: Path, what: str = "file") -> Any:
    """A YAML file's content (a key given twice is refused); unreadable (`what` names it then), not
    UTF-8 or not YAML is an InputError naming the line."""
    text = read_text(path, what)
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        problem, line = yaml_problem(exc, text)
        raise InputError(path, f"not valid YAML: {problem}", line=line) from None


def load_yaml_model(path: Path, model: type[M]) -> M:
    return validate_mapping(path, read_yaml(path), model)


def read_json(path: Path) -> Any:
    """A JSON file's content (any JSON value); unreadable, not UTF-8 or not JSON is an InputError naming the line."""
    import json

    text = read_text(path, "file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON: {exc.msg}", line=exc.lineno) from None


def load_json_model(path: Path, model: type[M]) -> M:
    return validate_mapping(path, read_json(path), model)


def validate_mapping(path: Path, raw: object, model: type[M]) -> M:
    """`raw` (read from `path`) validated as `model`; the first problem as one located error."""
    if not isinstance(raw, dict):
        raise InputError(path, "expected a mapping at the top level")
    try:
        return model.model_validate(raw, context={"path": path})
    except ValidationError as exc:
        errors = exc.errors()
        first = _first_error(errors)
        more = f" ({len(errors) - 1} more problem{'s' if len(errors) > 2 else ''} in this file)" if len(errors) > 1 else ""
        where = field_path(first["loc"], raw, missing=first["type"] == "missing")
        raise InputError(path, f"{_message(first, errors)}{more}", field=where or None) from None


class Strict(BaseModel):
    """Base for config models: unknown keys are errors (a typo never silently does nothing)."""

    model_config = ConfigDict(extra="forbid")
