"""Example jobs on the public API (:mod:`onceflow.spark.api`), each with a config under
``services/spark-worker/jobs/``:

- :mod:`.ip_count`: requests per (tumbling window, ip), append mode: the first example.
- :mod:`.traffic`: bytes and requests per (1-minute window, path, status class), update mode.
- :mod:`.server_errors`: every 5xx request, enriched, appended without a natural key.
"""
