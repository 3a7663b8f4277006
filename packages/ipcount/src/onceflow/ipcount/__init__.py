"""The IP-count example: requests per ip in tumbling event-time windows, exactly once into every sink.

Everything about IP counts lives here, and the framework knows none of it (a test checks that no
other product package imports it; the demo uses it like any user):

- :mod:`.job`: the Spark job (``onceflow job run onceflow.ipcount.job:job``; the ``job`` extra);
- :mod:`.schema`: its output's Arrow schema and the bindings of its sinks (table and topic);
- :mod:`.traffic`: deterministic synthetic access traffic from a seed, and its exact truth per window and ip;
- :mod:`.generator`: that traffic as the ``access-log-generator`` source connector (a plugin of the
  runtime: ``onceflow connect create ... connector.class=access-log-generator``);
- :mod:`.cli`: ``onceflow ipcount truth``, the generator's exact counts per (window, ip).

The sinks have no bindings of their own: a job writing the IP-count results declares them
(:func:`.schema.results_outputs` builds its ``[outputs]``, the demo's job config uses it).
"""
