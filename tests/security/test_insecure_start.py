"""No service serves a network without authentication unless told to (issue 22, item 4).

Attack: the service images listen on ``0.0.0.0`` (services/Dockerfile sets it) with the default config:
no gRPC token, a PLAINTEXT broker listener. Run as built, every port was open to whoever reached it.

Expected refusal: each service's command, run as its image runs it (entry point, config, ENV),
exits 2 before it starts anything, naming the address setting and ``ONCEFLOW_INSECURE=1``; the
deploys (compose, Helm) set authentication and pass (tests/deploy). Only the check itself is run
here: no test binds a non-loopback address.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from onceflow.broker.config import BrokerConfig
from onceflow.consumer.settings import ConsumerSettings
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.core.errors import InvalidConfig
from onceflow.core.exposure import INSECURE_ENV, listeners_of, refuse_unauthenticated
from onceflow.core.settings import Settings, load_settings
from onceflow.runtime.config.worker_settings import WorkerSettings
from onceflow.sinks.server import ParticipantSettings

ROOT = Path(__file__).resolve().parents[2]
ONCEFLOW = str(Path(sys.executable).parent / "onceflow")
#: The images that serve on every interface, and the setting the refusal must name.
SERVING = {
    "broker": "listen",
    "coordinator": "server.host",
    "participant": "server.host",
    "consumer": "server.host",
    "connect-worker": "server.host",
}
SETTINGS: dict[str, type[Settings]] = {
    "broker": BrokerConfig,
    "coordinator": CoordinatorSettings,
    "participant": ParticipantSettings,
    "consumer": ConsumerSettings,
    "connect-worker": WorkerSettings,
}


def stage(name: str) -> str:
    """The build target ``name`` of services/Dockerfile (one image per service), up to the next FROM."""
    text = (ROOT / "services" / "Dockerfile").read_text()
    start = text.index(f"\nFROM onceflow AS {name}\n")
    end = text.find("\nFROM ", start + 1)
    return text[start : end if end != -1 else len(text)]


def image(name: str) -> tuple[list[str], dict[str, str]]:
    """The command line the image ``onceflow-<name>`` runs (its config taken from the repository) and
    the environment its build target sets."""
    text = stage(name)
    copies = {dest: src for src, dest in re.findall(r"^COPY (services/\S+\.toml) (\S+)$", text, re.M)}
    entrypoint, cmd = (json.loads(re.findall(rf"^{word} (\[.*\])$", text, re.M)[0]) for word in ("ENTRYPOINT", "CMD"))
    argv = [ONCEFLOW, *entrypoint[1:], *(str(ROOT / copies[arg]) if arg in copies else arg for arg in cmd)]
    env: dict[str, str] = {}
    for line in re.findall(r"^ENV (.*)$", text, re.M):
        for pair in shlex.split(line):
            key, sep, value = pair.partition("=")
            if sep and not key.startswith("UV_"):
                env[key] = value
    env.pop("PATH", None)
    return argv, env


def test_no_image_allows_insecure_serving() -> None:
    for dockerfile in [ROOT / "services" / "Dockerfile", *(ROOT / "deploy" / "images").glob("*/Dockerfile")]:
        assert not re.search(rf"^ENV .*{INSECURE_ENV}", dockerfile.read_text(), re.M), dockerfile


@pytest.mark.parametrize("name", SERVING)
def test_every_image_as_built_refuses_to_serve_without_authentication(name: str) -> None:
    argv, env = image(name)
    settings = load_settings(SETTINGS[name], argv[argv.index("--config") + 1], env=env)
    with pytest.raises(InvalidConfig) as refused:
        refuse_unauthenticated(listeners_of(settings), env={})
    assert refused.value.setting == SERVING[name]
    assert "is not a loopback address" in str(refused.value) and f"{INSECURE_ENV}=1" in str(refused.value)
    refuse_unauthenticated(listeners_of(settings), env={INSECURE_ENV: "1"})  # the explicit opt-out
    with pytest.raises(InvalidConfig, match=f"'{INSECURE_ENV}': must be 1"):
        refuse_unauthenticated(listeners_of(settings), env={INSECURE_ENV: "yes"})


def test_the_commands_exit_2_before_they_start_anything(tmp_path: Path) -> None:
    """The check runs in every service command's front, before the service is built: the broker
    creates no data dir, and the coordinator opens no log (it would fence the running one)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("ONCEFLOW_")}
    runs = {}
    for name in ("broker", "coordinator"):
        argv, env = image(name)
        work = tmp_path / name
        work.mkdir()
        env = {**env, "ONCEFLOW_COORDINATOR__KAFKA__BOOTSTRAP_SERVERS": "127.0.0.1:1"}
        runs[name] = subprocess.Popen(argv, cwd=work, env={**base, **env}, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)  # fmt: skip
    for name, run in runs.items():
        out, err = run.communicate(timeout=120)
        assert run.returncode == 2, f"{name}: {out}\n{err}"
        assert f"onceflow {name}: invalid setting '{SERVING[name]}'" in err and f"{INSECURE_ENV}=1" in err, err
        created = [p.name for p in (tmp_path / name).iterdir() if p.name != ".hypothesis"]  # kio's cache
        assert created == [], f"{name} created {created} before refusing"
