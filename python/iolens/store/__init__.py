"""The statistics database: runs, phases, systems, monitoring samples and profiles, in SQLite or PostgreSQL.

- db: connections (SQLite file in WAL mode, or a postgresql:// URL) and the dialects' differences;
- schema: the tables and their migrations; records: what is stored; store: writing records;
- documents, io500_dir, profiles, darshan_logs, samples: reading each kind of source into records;
- importer: `iolens db import`; queries: the questions it answers; api: the same as pandas data frames;
- settings: which database and system a command uses (--db, IOLENS_DB, the config file).

All SQL of iolens lives in this package.
"""

from iolens.store.db import StoreError, default_location
from iolens.store.schema import SCHEMA_VERSION, SchemaTooNew
from iolens.store.store import Store, Stored

__all__ = ["SCHEMA_VERSION", "SchemaTooNew", "Store", "StoreError", "Stored", "default_location"]
