"""``onceflow connect ...`` (admin client) and ``onceflow connect-worker`` (the worker process)."""
