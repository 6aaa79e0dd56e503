"""What one announcement costs the process that sends it, on each of channels_redis's two
layers: the default (`RedisChannelLayer`: messages kept per channel, groups in sorted sets)
and the pub/sub one (`RedisPubSubChannelLayer`, which scale-out uses: dashboard/settings.py
says why). Sends `--sends` group_sends to a group nobody listens to and to a group with
one listener, in this process, on the machine's Redis; prints CPU and wall time per send
and the Redis commands each layer used. Asserts nothing.

    .venv/bin/python bench/layer_sends.py [--sends 2000] [--redis redis://127.0.0.1:6379/5]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import redis
from channels_redis.core import RedisChannelLayer
from channels_redis.pubsub import RedisPubSubChannelLayer

LAYERS = {"default": RedisChannelLayer, "pub/sub": RedisPubSubChannelLayer}


async def _measure(layer, listeners: int, sends: int) -> tuple[float, float]:
    group = f"bench-layer-{listeners}"
    channels = [await layer.new_channel() for _ in range(listeners)]
    for channel in channels:
        await layer.group_add(group, channel)
    message = {"type": "task.event", "id": 1}
    for _ in range(50):  # connections made, code paths warm
        await layer.group_send(group, message)
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(sends):
        await layer.group_send(group, message)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    for channel in channels:
        await layer.group_discard(group, channel)
    return cpu / sends * 1000, wall / sends * 1000


def _commands(client: redis.Redis) -> dict[str, int]:
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): row["calls"] for name, row in stats.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=2000)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/5")
    args = parser.parse_args()
    client = redis.Redis.from_url(args.redis)
    print(f"group_send cost in the sending process ({args.sends} sends each)")
    for name, cls in LAYERS.items():
        for listeners in (0, 1):
            layer = cls(hosts=[args.redis])
            before = _commands(client)
            cpu, wall = asyncio.run(_measure(layer, listeners, args.sends))
            after = _commands(client)
            used = {k: (after.get(k, 0) - before.get(k, 0)) / args.sends for k in after}
            shown = ", ".join(f"{k} {v:.1f}" for k, v in sorted(used.items()) if v >= 0.5)
            print(
                f"  {name:8s} {listeners} listener(s): {cpu:5.3f} ms CPU, {wall:5.3f} ms wall "
                f"per send; Redis commands per send: {shown}"
            )


if __name__ == "__main__":
    main()
