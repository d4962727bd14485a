"""The fleet store: a SQLite file by default (`robocal.db`), PostgreSQL by URL; schema by Alembic.

Every command opens the store at this robocal's schema revision (the newest migration) and no
other: a database that is not a fleet store is refused, so is one of a newer robocal (whose schema
this one does not know), and one of an older robocal is upgraded by `robocal fleet init` (which
keeps a copy of an older SQLite file first) or the service's start, never behind a command's back.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, inspect, make_url, text
from sqlalchemy.exc import ArgumentError, DBAPIError

from robocal.errors import InputError, RobocalError
from robocal.fleet import DEFAULT_DB
from robocal.fleet.store.models import Base

SQLITE_WAIT = 30.0  # s a SQLite write waits for another writer (another run, the service) before failing
log = logging.getLogger("robocal.fleet")
T = TypeVar("T")
_PASSWORD = re.compile(r"//[^/@]*@")  # the credentials of a URL, hidden in messages


def database_url(db: str | Path) -> str:
    """A SQLAlchemy URL for `db`: a URL as is (`postgresql+psycopg://...`), a path as a SQLite file."""
    text = str(db)
    return text if "://" in text else f"sqlite:///{Path(text).resolve()}"


def store_name(db: str | Path | Engine) -> str:
    """The store as messages name it: a SQLite file by its path, a URL without its password."""
    if isinstance(db, Engine):
        return db.url.database or "" if db.url.get_backend_name() == "sqlite" else db.url.render_as_string(hide_password=True)
    return make_url(str(db)).render_as_string(hide_password=True) if "://" in str(db) else str(db)


def stored_json(engine: Engine, table: str, row_id: int, column: str, raw: str | None, read: Callable[[Any], T]) -> T:
    """`read` of the JSON text `raw` (SQL NULL: None) stored in `table`'s row `row_id`, `column`. Text
    that is no JSON, or a value `read` refuses (raising ValueError, TypeError, KeyError, ...: not
    what robocal writes there), is a RobocalError naming the database, table, row and column."""
    try:
        return read(None if raw is None else json.loads(raw))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise RobocalError(f"{store_name(engine)}: table {table}, row {row_id}, column {column}: damaged ({type(exc).__name__}: {exc})") from None


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(resources.files("robocal.fleet.store").joinpath("migrations")))
    return config


@cache
def revisions() -> tuple[str, ...]:
    """The schema revisions this robocal knows, oldest first (the last is the newest, `head`)."""
    return tuple(reversed([script.revision for script in ScriptDirectory.from_config(_config()).walk_revisions()]))


def migrate(engine: Engine, revision: str = "head") -> None:
    """Upgrade the database to the newest schema revision, or to `revision` (from empty, or from any older one)."""
    config = _config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def _reason(exc: DBAPIError) -> str:
    """The first line of what the database driver said."""
    return (str(exc.orig) or type(exc.orig).__name__).splitlines()[0]


def stored_revision(engine: Engine, where: str | None = None) -> str | None:
    """The schema revision the database carries; None where it has none (empty, or not a fleet store).
    A file that is no database (or a damaged one), or a server that does not answer, is a RobocalError
    naming the store as `where` (default: `store_name`)."""
    where = where or store_name(engine)
    try:
        with engine.connect() as connection:
            if "alembic_version" not in inspect(connection).get_table_names():
                return None
            return connection.execute(text("select version_num from alembic_version")).scalar()
    except DBAPIError as exc:
        if engine.url.get_backend_name() == "sqlite":
            raise RobocalError(f"{where}: not a robocal fleet database ({_reason(exc)})") from None
        raise RobocalError(f"{where}: cannot open the fleet database ({_reason(exc)})") from None


def _backup(engine: Engine, revision: str) -> Path | None:
    """A consistent copy of a SQLite store beside it (FILE.REVISION-TIME.bak), before it is upgraded; None for a server."""
    if engine.url.get_backend_name() != "sqlite" or not engine.url.database:
        return None
    source = Path(engine.url.database)
    copy = source.with_name(f"{source.name}.{revision}-{datetime.now(UTC):%Y%m%dT%H%M%S%f}.bak")
    with closing(sqlite3.connect(source)) as old, closing(sqlite3.connect(copy)) as new:
        old.backup(new)
    return copy


def open_store(db: str | Path = DEFAULT_DB, *, create: bool = False, notice: Callable[[str], None] = log.warning) -> Engine:
    """The store's engine, at this robocal's schema revision (module doc). `create`: make it where it
    is new, upgrade it where it is older (`fleet init`, the service), `notice` saying so; otherwise it
    must exist at the newest revision."""
    url = database_url(db)
    try:
        where = store_name(db)
        engine = create_engine(url, connect_args={"timeout": SQLITE_WAIT} if url.startswith("sqlite") else {})
    except (ArgumentError, ValueError, ImportError) as exc:  # no such dialect, a malformed URL, a driver not installed
        raise RobocalError(f"{_PASSWORD.sub('//***@', str(db))}: cannot open the fleet database ({exc})") from None
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        if path.is_dir():
            raise RobocalError(f"{where}: not a robocal fleet database (a folder)")
        if not path.exists() and not create:
            raise InputError(db, "no fleet database here; run `robocal fleet init` first")
        if not path.parent.is_dir():
            raise RobocalError(f"{where}: no folder {path.parent} to create the fleet database in")
    found, known = stored_revision(engine, where), revisions()
    if found is not None and found not in known:
        raise RobocalError(
            f"{where}: the fleet database is at schema revision {found}, newer than this robocal knows (its newest is {known[-1]}); "
            "use the robocal that wrote it"
        )
    if found == known[-1]:
        return engine
    if not create:
        if found is None:
            raise RobocalError(f"{where}: not a robocal fleet database (no schema revision); run `robocal fleet init`")
        raise RobocalError(
            f"{where}: the fleet database is at schema revision {found}, older than this robocal's {known[-1]}; "
            f"upgrade it with `robocal fleet init --db {where}`"
        )
    if found is None:
        foreign = sorted(set(inspect(engine).get_table_names()) - set(Base.metadata.tables) - {"alembic_version"})
        if foreign:  # another application's database: never written into
            raise RobocalError(f"{where}: not a robocal fleet database (it holds other tables: {', '.join(foreign[:5])}); give a new file or an empty database")
    backup = _backup(engine, found) if found is not None else None
    migrate(engine)
    if found is not None:
        notice(f"{where}: upgraded the fleet database from schema revision {found} to {known[-1]}" + (f" (the old file is kept as {backup})" if backup else ""))
    return engine
