"""zaris against a real redis-server and redis-py: the same slot for every
key (bytes of any length, str of every UTF-8 width, tags, empty tags), the
same refusals (lone surrogates), and the retry machine."""

import os
import random
import shutil
import socket
import subprocess
import tempfile
import time

import pytest
import redis
from redis.connection import Encoder
from redis.crc import key_slot as redis_py_key_slot

import zaris


def free_port() -> int:
    """A port free a moment ago whose cluster bus port (+10000) is free
    too: redis-server refuses cluster mode above port 55535."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port > 55535:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair below 55536")


@pytest.fixture(scope="module")
def server():
    """A cluster-mode redis-server on 127.0.0.1, stopped after the module."""
    binary = shutil.which("redis-server")
    assert binary, "redis-server is not installed (apt-get install redis-server)"
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="zaris-py-")
    process = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--cluster-enabled", "yes",
         "--cluster-config-file", "nodes.conf", "--save", "", "--appendonly", "no"],
        cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(host="127.0.0.1", port=port)
    for _ in range(100):
        assert process.poll() is None, f"redis-server exited ({process.returncode}) on port {port}"
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    yield client
    process.terminate()
    process.wait(timeout=10)
    shutil.rmtree(workdir, ignore_errors=True)


ENCODER = Encoder("utf-8", "strict", False)

# Code points of every UTF-8 width, braces, and ASCII.
ALPHABET = ["a", "z", "0", ":", "{", "}", "é", "κ", "ж", "键", "ｱ", "😀", "𝄞"]


def random_keys(count: int, seed: int = 0x5EED):
    rng = random.Random(seed)
    keys = []
    for i in range(count):
        kind = i % 5
        if kind == 0:
            length = rng.randrange(4097) if rng.randrange(8) == 0 else rng.randrange(64)
            keys.append(bytes(rng.randrange(256) for _ in range(length)))
        elif kind == 1:
            keys.append("".join(rng.choice(ALPHABET) for _ in range(rng.randrange(16))))
        elif kind == 2:
            keys.append(f"prefix{{user{rng.randrange(100_000)}}}:suffix{rng.randrange(10)}")
        elif kind == 3:
            keys.append("{}" + "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(8))))
        else:
            keys.append(rng.choice([0, 7, -3, 12345678901234567890, 1.5, -0.25]))
    return keys


def server_slots(server, keys):
    pipe = server.pipeline(transaction=False)
    for key in keys:
        pipe.execute_command("CLUSTER", "KEYSLOT", key)
    return pipe.execute()


def test_slots_equal_cluster_keyslot_and_redis_py(server):
    keys = random_keys(6000)
    expected = server_slots(server, keys)
    assert len(expected) == len(keys)
    for key, slot in zip(keys, expected):
        assert zaris.key_slot(key) == slot, repr(key)
        assert redis_py_key_slot(ENCODER.encode(key)) == slot, repr(key)
    assert zaris.key_slots(keys) == expected
    assert zaris.key_slots(iter(keys)) == expected, "any iterable"
    assert zaris.key_slots(tuple(keys[:10])) == expected[:10]
    tagged = sum(1 for k in keys if isinstance(k, (str, bytes)) and zaris.hash_tag(k) != ENCODER.encode(k))
    assert tagged > len(keys) // 5


def test_empty_tags_and_edges(server):
    keys = ["", b"", "{}", "{}{a}", "a{}b", "{a}{b}", "{", "}", "}{", "{{a}}", "{user1000}.following"]
    assert zaris.key_slots(keys) == server_slots(server, keys)
    assert zaris.key_slot("{user1000}.following") == 3443
    assert zaris.hash_tag("{user1000}.following") == b"user1000"
    assert zaris.hash_tag("foo{}{bar}") == b"foo{}{bar}", "an empty tag hashes the whole key"
    assert zaris.key_slot(memoryview(b"{user1000}")) == 3443
    assert zaris.key_slot(bytearray(b"{user1000}")) == 3443


def test_lone_surrogates_are_refused_as_redis_py_refuses_them():
    for key in ["a\ud800", "\udfff", "{\ud83d}x"]:
        with pytest.raises(UnicodeEncodeError):
            ENCODER.encode(key)
        with pytest.raises(UnicodeEncodeError):
            zaris.key_slot(key)
        with pytest.raises(UnicodeEncodeError):
            zaris.key_slots(["ok", key])
    # A pair is one character, as redis-py encodes it.
    assert zaris.key_slot("\U0001F600") == redis_py_key_slot("\U0001F600".encode())


def test_keys_are_encoded_and_refused_as_redis_py_encodes_and_refuses_them():
    class Number(int):
        def __repr__(self):
            return "number"

    for key in [b"k", "k\u00e9", bytearray(b"{a}b"), memoryview(b"{a}b"), 0, -17, 2**70, 1.5, -0.0, 1e300, float("inf"), Number(5)]:
        assert zaris.key_slot(key) == redis_py_key_slot(bytes(ENCODER.encode(key))), repr(key)
    for bad in [None, True, False, object(), [b"a"], {"a": 1}, 1j]:
        with pytest.raises(redis.exceptions.DataError) as theirs:
            ENCODER.encode(bad)
        with pytest.raises(redis.exceptions.DataError) as ours:
            zaris.key_slot(bad)
        assert isinstance(ours.value, zaris.DataError) and isinstance(ours.value, TypeError)
        assert str(ours.value) == str(theirs.value), repr(bad)
        with pytest.raises(zaris.DataError):
            zaris.key_slots(["ok", bad])


def test_key_slot_takes_redis_py_bucket():
    from binascii import crc_hqx

    # redis-py's own cases (tests/test_cluster.py), with zaris in its place.
    assert zaris.key_slot(b"foo", 100) == crc_hqx(b"foo", 0) % 100
    assert 0 <= zaris.key_slot(b"123456789", 100) < 100
    assert zaris.key_slot(b"{{bar}}zap") == zaris.key_slot(b"{bar")
    for key in (b"{}foo", b"foo{}", b"foo{}{bar}", b"{foo"):
        assert zaris.key_slot(key) == crc_hqx(key, 0) % zaris.SLOT_COUNT
    for key in random_keys(500):
        encoded = bytes(ENCODER.encode(key))
        for bucket in (1, 7, 100, 16384, 65536, 1 << 40, -5):
            assert zaris.key_slot(key, bucket) == redis_py_key_slot(encoded, bucket), (key, bucket)
            assert zaris.key_slot(key, bucket=bucket) == redis_py_key_slot(encoded, bucket=bucket)
    with pytest.raises(ZeroDivisionError):
        zaris.key_slot(b"a", 0)
    with pytest.raises(ZeroDivisionError):
        redis_py_key_slot(b"a", 0)
    with pytest.raises(TypeError):
        zaris.key_slot(b"a", "16384")


def test_bad_input_is_a_typed_error():
    for bad in [None, object(), [b"a"], True]:
        with pytest.raises(TypeError):
            zaris.key_slot(bad)
    with pytest.raises(TypeError):
        zaris.key_slots(5)
    with pytest.raises(ValueError):
        zaris.segment_for_slot(16384, 4)
    with pytest.raises(ValueError):
        zaris.segment_for_slot(1, 0)
    assert zaris.segment_for_slot(16383, 4) == 3
    with pytest.raises(ValueError):
        zaris.parse_error_reply(b"-ERR unknown command")
    with pytest.raises(ValueError):
        zaris.parse_error_reply(b"-MOVED 99999 h:1")
    with pytest.raises(ValueError):
        zaris.RetryLoop().record("Bogus")


def test_the_retry_machine_through_moved_ask_and_tryagain():
    moved = zaris.parse_error_reply(b"-MOVED 3999 127.0.0.1:6381\r\n")
    assert (moved.kind, moved.slot, moved.host, moved.port) == ("moved", 3999, "127.0.0.1", 6381)
    ask = zaris.parse_error_reply("ASK 3999 10.0.0.7:7002")
    assert (ask.kind, ask.outcome, ask.status) == ("ask", "Ask", "Migrating")
    tryagain = zaris.parse_error_reply(b"-TRYAGAIN Multiple keys request during rehashing of slot")
    assert (tryagain.kind, tryagain.outcome, tryagain.slot) == ("status", "Migrating", None)

    loop = zaris.RetryLoop(max_attempts=5, backoff_ms=100, deadline_ms=60_000)
    d = loop.record(moved.outcome, remaining_ms=60_000)
    assert (d.kind, d.refresh_map, d.delay_ms) == ("retry", True, 100)
    assert loop.record(ask.outcome, remaining_ms=60_000).kind == "follow_ask"
    d = loop.record(tryagain.outcome, remaining_ms=60_000)
    assert (d.kind, d.refresh_map, d.delay_ms) == ("retry", False, 2000)
    d = loop.record("ConnectionReset", remaining_ms=60_000)
    assert (d.kind, d.delay_ms) == ("retry", 400)
    d = loop.record("Migrating", remaining_ms=60_000)
    assert (d.kind, d.stop_reason) == ("give_up", "attempts_exhausted")
    assert loop.attempts == 5
    d = zaris.RetryLoop().record("Moved", remaining_ms=50)
    assert (d.kind, d.stop_reason) == ("give_up", "deadline_reached")
    assert zaris.RetryLoop().record("Ok").kind == "return"
    assert zaris.crc_engine() in {"portable", "pclmulqdq", "vpclmulqdq256", "vpclmulqdq512", "pmull"}


def test_the_refresh_rules_are_the_clients():
    assert zaris.refresh_decide(None, False, 10) == "start"
    assert zaris.refresh_decide(None, True, 11) == "ride"
    assert zaris.refresh_decide(20, False, 519) == "debounced"
    assert zaris.refresh_decide(20, False, 520) == "start"
    assert zaris.refresh_decide(20, False, 120, min_interval_ms=100) == "start"
    assert zaris.owner_wait_until(100, 200) == 15_100
    assert zaris.owner_wait_until(100, 200, deadline_ms=3_000) == 3_000
    assert zaris.owner_wait_until(100, 15_100) is None
    assert zaris.owner_wait_until(0, 1, max_attempts=1) is None
    redirects = zaris.RedirectMemory()
    assert not redirects.note(5, "a:1", "b:1", 10)
    assert redirects.note(5, "b:1", "a:1", 30), "undone within 2 s: a loop"
    assert not redirects.note(7, "a:1", "b:1", 40)
    assert not redirects.note(7, "b:1", "a:1", 2_040), "undone, but after 2 s: a move back"
    assert redirects.note(9, "c:1", "c:1", 50), "MOVED to the node asked"
