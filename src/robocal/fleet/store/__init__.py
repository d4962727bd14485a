"""The fleet store: a SQLite file by default (`robocal.db`), PostgreSQL by URL; schema by Alembic."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, inspect

from robocal.errors import InputError, RobocalError
from robocal.fleet import DEFAULT_DB

SQLITE_WAIT = 30.0  # s a SQLite write waits for another writer (another run, the service) before failing


def database_url(db: str | Path) -> str:
    """A SQLAlchemy URL for `db`: a URL as is (`postgresql+psycopg://...`), a path as a SQLite file."""
    text = str(db)
    return text if "://" in text else f"sqlite:///{Path(text).resolve()}"


def migrate(engine: Engine, revision: str = "head") -> None:
    """Upgrade the database to the newest schema revision, or to `revision` (from empty, or from any older one)."""
    config = Config()
    config.set_main_option("script_location", str(resources.files("robocal.fleet.store").joinpath("migrations")))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def open_store(db: str | Path = DEFAULT_DB, *, create: bool = False) -> Engine:
    """The store's engine. `create`: make and migrate it (`fleet init`); otherwise it must already exist."""
    url = database_url(db)
    if url.startswith("sqlite:///") and not create and not Path(url.removeprefix("sqlite:///")).exists():
        raise InputError(db, "no fleet database here; run `robocal fleet init` first")
    engine = create_engine(url, connect_args={"timeout": SQLITE_WAIT} if url.startswith("sqlite") else {})
    if create:
        migrate(engine)
    elif "alembic_version" not in inspect(engine).get_table_names():
        raise RobocalError(f"{engine.url.render_as_string(hide_password=True)}: not a fleet database (no schema revision); run `robocal fleet init`")
    return engine
