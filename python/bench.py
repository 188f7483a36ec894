"""zaris against redis-py's own key_slot, in one process: ns per key for
short and long keys (bytes and str), and for a batch of 100,000 keys.
Not a test: the figures depend on the machine. `just bench-python`."""

import random
import timeit

from redis.connection import Encoder
from redis.crc import key_slot as redis_py_key_slot

import zaris

ENCODER = Encoder("utf-8", "strict", False)


def redis_py(key):
    """What redis-py's RedisCluster.keyslot does with a key."""
    return redis_py_key_slot(ENCODER.encode(key))


def per_key(fn, key, number=200_000):
    best = min(timeit.repeat(lambda: fn(key), number=number, repeat=5))
    return best / number * 1e9


def main():
    rng = random.Random(7)
    print(f"zaris {zaris.__name__} (CRC engine: {zaris.crc_engine()}) vs redis-py's key_slot")
    print(f"{'key':>22} {'zaris ns':>10} {'redis-py ns':>12} {'ratio':>7}")
    for label, key in [
        ("8-byte bytes", b"user:123"),
        ("8-byte str", "user:123"),
        ("tagged str", "{user1000}.following"),
        ("64-byte bytes", bytes(rng.randrange(256) for _ in range(64))),
        ("256-byte str", "k" * 256),
        ("1 KiB bytes", bytes(rng.randrange(256) for _ in range(1024))),
    ]:
        z, r = per_key(zaris.key_slot, key), per_key(redis_py, key)
        print(f"{label:>22} {z:>10.1f} {r:>12.1f} {r / z:>6.1f}x")
    keys = [f"user:{rng.randrange(10**9)}:{i}" for i in range(100_000)]
    z = min(timeit.repeat(lambda: zaris.key_slots(keys), number=1, repeat=7))
    r = min(timeit.repeat(lambda: [redis_py(k) for k in keys], number=1, repeat=7))
    print(f"{'batch of 100,000 str':>22} {z * 1e3:>8.2f}ms {r * 1e3:>10.2f}ms {r / z:>6.1f}x")
    raw = [k.encode() for k in keys]
    z = min(timeit.repeat(lambda: zaris.key_slots(raw), number=1, repeat=7))
    r = min(timeit.repeat(lambda: [redis_py_key_slot(k) for k in raw], number=1, repeat=7))
    print(f"{'batch of 100,000 bytes':>22} {z * 1e3:>8.2f}ms {r * 1e3:>10.2f}ms {r / z:>6.1f}x")


if __name__ == "__main__":
    main()
