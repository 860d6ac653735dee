"""Where the ledger lives: the database URL, engines, and schema migrations.

``DATABASE_URL`` names PostgreSQL through psycopg 3 (``postgresql+psycopg://...``) in production;
unset, the ledger is a SQLite file under ``./var`` so a laptop needs no database server.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from aipool.errors import SettingsError
from aipool.settings import read_settings, settings

if TYPE_CHECKING:
    from alembic.config import Config

#: The embedded default when ``DATABASE_URL`` is unset.
DEFAULT_SQLITE_PATH = Path("var") / "aipool.db"

_MIGRATIONS = Path(__file__).with_name("migrations")
# Any constant works; it only has to be the same in every process that migrates.
_MIGRATION_LOCK_ID = 0x41495030


def database_url(env: Mapping[str, str] | None = None) -> str:
    """The ledger's SQLAlchemy URL: ``DATABASE_URL`` (of ``env``, default this process's
    settings), or a SQLite file under ``./var``.

    A bare ``postgresql://`` or ``postgres://`` URL is taken to mean psycopg 3. The SQLite
    file's directory is created when missing.
    """
    url = (settings() if env is None else read_settings(env).checked()).database_url
    if not url:
        DEFAULT_SQLITE_PATH.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{DEFAULT_SQLITE_PATH}"
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def make_engine(url: str | None = None, **kwargs: object) -> Engine:
    """An engine for ``url`` (default ``database_url()``) with settings fit for the ledger.

    PostgreSQL connections fail fast (5 s connect timeout) so a down database delays a drain,
    never a worker; SQLite gets WAL and a busy timeout so a drainer and a reader can overlap.
    """
    url = url or database_url()
    parsed = make_url(url)
    options: dict[str, object] = {"pool_pre_ping": True}
    if parsed.get_backend_name() == "postgresql":
        options["connect_args"] = {"connect_timeout": 5}
    elif parsed.get_backend_name() == "sqlite":
        options["connect_args"] = {"timeout": 15}
    options.update(kwargs)
    try:
        engine = create_engine(url, **options)
    except ImportError as exc:
        # A driver the pool does not install (psycopg2, MySQLdb): the setting's mistake, said
        # as a refused setting, not a traceback; the password never shown.
        shown = parsed.render_as_string(hide_password=True)
        raise SettingsError(
            [
                f"DATABASE_URL={shown}: names the driver {parsed.drivername}, which is not "
                f"installed ({exc.name or exc}); the pool's ledger takes postgresql+psycopg:// "
                "or sqlite:///"
            ]
        ) from None
    if parsed.get_backend_name() == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

    return engine


def alembic_config(url: str | None = None) -> Config:
    """An Alembic config pointing at the migrations shipped inside the package."""
    # Alembic costs 0.6 s to import: only a migration pays it, not every aipool command.
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    if url:
        # ConfigParser treats "%" as interpolation; URL-encoded passwords contain it.
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def migrate(url: str | None = None, revision: str = "head") -> None:
    """Bring the ledger schema at ``url`` (default ``database_url()``) up to ``revision``.

    Safe to call from many processes at once: on PostgreSQL an advisory lock serialises them, on
    a SQLite file a lock file beside it (``aipool worker`` starts five workers that each migrate
    the embedded ledger), and the ones that come second find nothing left to do.
    """
    url = url or database_url()
    with _sqlite_migration_lock(url):
        _migrate(url, revision)


@contextmanager
def _sqlite_migration_lock(url: str) -> Iterator[None]:
    """Hold an exclusive lock on ``<database>.migrate.lock`` while a SQLite file is migrated.

    SQLite has no advisory lock, and Alembic runs its DDL outside a transaction there, so two
    processes upgrading one file at once both add the same column and the second fails
    ("duplicate column name"). An in-memory database belongs to one process: nothing to hold.
    """
    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        yield
        return
    with open(f"{database}.migrate.lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _migrate(url: str, revision: str) -> None:
    engine = make_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _MIGRATION_LOCK_ID})
                conn.commit()
            try:
                config = alembic_config(url)
                config.attributes["connection"] = conn
                # Imported here for the same reason as in alembic_config.
                from alembic import command

                command.upgrade(config, revision)
                conn.commit()
            finally:
                if conn.dialect.name == "postgresql":
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _MIGRATION_LOCK_ID})
                    conn.commit()
    finally:
        engine.dispose()
