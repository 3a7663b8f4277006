"""Test support for the sink participants: the ``postgres_server`` / ``postgres_dsn`` pytest fixtures."""
