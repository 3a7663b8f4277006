"""pyiceberg's ``SqlCatalog`` on the participant's SQLite file or PostgreSQL database."""

from __future__ import annotations

from pathlib import Path

from psycopg.conninfo import conninfo_to_dict
from pyiceberg.catalog.sql import SqlCatalog
from sqlalchemy.engine import URL

from onceflow.sinks.iceberg.settings import IcebergCatalogSettings
from onceflow.sinks.lakehouse.storage import TableStore


def catalog_url(settings: IcebergCatalogSettings, *, create: bool = True) -> str:
    """The SQLAlchemy URL of the catalog database (PostgreSQL through psycopg 3, the sinks' driver)."""
    if settings.sqlite:
        path = Path(settings.sqlite).expanduser().resolve()
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
            return f"sqlite:///{path}"
        if not path.exists():
            raise FileNotFoundError(f"Iceberg catalog database {path} does not exist")
        return f"sqlite:///file:{path}?mode=ro&uri=true"
    params = {k: str(v) for k, v in conninfo_to_dict(settings.postgres_dsn).items()}
    port = params.pop("port", None)
    url = URL.create(
        "postgresql+psycopg",
        username=params.pop("user", None),
        password=params.pop("password", None),
        host=params.pop("host", None),
        port=int(port) if port else None,
        database=params.pop("dbname", None),
        query=params,
    )
    return url.render_as_string(hide_password=False)


def open_catalog(settings: IcebergCatalogSettings, store: TableStore, *, create: bool = True) -> SqlCatalog:
    """The catalog, writing under ``store``'s root; ``create``: its tables and the sink's namespace
    are created when missing (the participant), else the database is only read (readers)."""
    catalog = SqlCatalog(
        settings.name,
        uri=catalog_url(settings, create=create),
        warehouse=store.root if not store.is_local else f"file://{store.root}",
        pool_pre_ping="true",
        init_catalog_tables=str(create).lower(),
        **store.iceberg_properties(),
    )
    if create:
        catalog.create_namespace_if_not_exists(settings.namespace)
    return catalog
