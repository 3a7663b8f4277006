"""Command-line entry points: ``onceflow coordinator`` (the service) and ``onceflow txn`` (admin)."""
