"""aiokafka against the broker: admin, idempotent produce, consume, consumer groups."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from onceflow.broker.embedded import EmbeddedBroker

PARTITIONS = 4


async def _create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        await admin.close()


async def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
    await producer.start()
    try:
        futures = [await producer.send(topic, value, key=str(i).encode()) for i, value in enumerate(values)]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


def _consumer(bootstrap: str, group: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=300,
        metadata_max_age_ms=1000,
    )


async def _until(condition: Callable[[], bool], timeout: float, step: Callable[[], object]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = step()
        if asyncio.iscoroutine(result):
            await result
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached in time")


def test_admin_produce_consume(broker: EmbeddedBroker) -> None:
    async def scenario() -> None:
        bootstrap = broker.bootstrap_servers
        await _create_topic(bootstrap, "aio", 2)
        values = [f"v{i}".encode() for i in range(100)]
        await _produce(bootstrap, "aio", values)
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
        await consumer.start()
        consumer.assign([TopicPartition("aio", 0), TopicPartition("aio", 1)])
        seen: list[bytes] = []

        async def step() -> None:
            batches = await consumer.getmany(timeout_ms=200)
            seen.extend(m.value for msgs in batches.values() for m in msgs if m.value is not None)

        try:
            await _until(lambda: len(seen) >= len(values), 20, step)
            end = await consumer.end_offsets([TopicPartition("aio", 0), TopicPartition("aio", 1)])
        finally:
            await consumer.stop()
        assert sorted(seen) == sorted(values)
        assert sum(end.values()) == len(values)

    asyncio.run(scenario())


def test_consumer_group_splits_rebalances_and_resumes(broker: EmbeddedBroker) -> None:
    async def scenario() -> None:
        bootstrap = broker.bootstrap_servers
        await _create_topic(bootstrap, "aio-group")
        first = [f"a-{i}".encode() for i in range(80)]
        await _produce(bootstrap, "aio-group", first)
        a, b = _consumer(bootstrap, "aio-g"), _consumer(bootstrap, "aio-g")
        a.subscribe(["aio-group"])
        b.subscribe(["aio-group"])
        await asyncio.gather(a.start(), b.start())
        seen: list[bytes] = []

        async def drain(members: list[AIOKafkaConsumer]) -> None:
            for member in members:
                batches = await member.getmany(timeout_ms=100)
                seen.extend(m.value for msgs in batches.values() for m in msgs if m.value is not None)

        def split() -> bool:
            sets = [{tp.partition for tp in m.assignment()} for m in (a, b)]
            return all(sets) and sets[0].isdisjoint(sets[1]) and len(sets[0] | sets[1]) == PARTITIONS

        await _until(split, 30, lambda: drain([a, b]))
        await _until(lambda: set(seen) >= set(first), 30, lambda: drain([a, b]))
        await a.commit()
        await b.commit()
        await a.stop()
        await _until(lambda: len(b.assignment()) == PARTITIONS, 30, lambda: drain([b]))
        await b.stop()

        second = [f"b-{i}".encode() for i in range(40)]
        await _produce(bootstrap, "aio-group", second)
        restarted = _consumer(bootstrap, "aio-g")
        restarted.subscribe(["aio-group"])
        await restarted.start()
        seen.clear()
        try:
            await _until(lambda: len(seen) >= len(second), 30, lambda: drain([restarted]))
            await drain([restarted])
        finally:
            await restarted.stop()
        assert sorted(seen) == sorted(second)

    asyncio.run(scenario())
