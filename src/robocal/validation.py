"""Reading YAML into pydantic models with errors that name the file and the field path."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from robocal.errors import InputError

M = TypeVar("M", bound=BaseModel)


def field_path(loc: tuple) -> str:
    """pydantic's location tuple as `measurements[0].sigma`."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load_yaml_model(path: Path, model: type[M]) -> M:
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise InputError(path, f"cannot read file ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(path, f"not valid YAML: {getattr(exc, 'problem', exc)}", line=mark.line + 1 if mark else None) from None
    if not isinstance(raw, dict):
        raise InputError(path, "expected a mapping at the top level")
    try:
        return model.model_validate(raw, context={"path": path})
    except ValidationError as exc:
        first = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise InputError(path, f"{first['msg']}{more}", field=field_path(first["loc"])) from None


class Strict(BaseModel):
    """Base for config models: unknown keys are errors (a typo never silently does nothing)."""

    model_config = ConfigDict(extra="forbid")
