"""The job's own settings come from ``[params]``, with defaults, and a bad one is named."""

from __future__ import annotations

import pytest

from onceflow.core.errors import InvalidConfig
from onceflow.ipcount.job import windowing


def test_windows_and_lateness_default_to_five_seconds_and_follow_the_params() -> None:
    assert windowing({}) == (5000, 5000)
    assert windowing({"window_ms": 60_000, "lateness_ms": 0, "other": "kept for the job"}) == (60_000, 0)


@pytest.mark.parametrize(
    ("params", "setting"),
    [({"window_ms": 0}, "params.window_ms"), ({"window_ms": "5s"}, "params.window_ms"),
     ({"lateness_ms": -1}, "params.lateness_ms"), ({"lateness_ms": True}, "params.lateness_ms")],
)  # fmt: skip
def test_a_bad_param_is_refused_by_name(params: dict[str, object], setting: str) -> None:
    with pytest.raises(InvalidConfig) as refused:
        windowing(params)
    assert refused.value.setting == setting
