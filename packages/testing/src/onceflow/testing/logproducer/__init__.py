"""Test support for onceflow.logproducer: a corpus of access-log lines with their expected outcome
(:mod:`.corpus`) and hypothesis strategies for well-formed lines (:mod:`.strategies`, needs hypothesis)."""
