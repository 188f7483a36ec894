"""Redis Cluster key slots, error replies and the retry machine, from
Zaris's ``no_std`` Rust core.

``key_slot`` is exactly ``CLUSTER KEYSLOT`` for any key, and a drop-in for
redis-py's ``redis.crc.key_slot(key, bucket=16384)``. Keys are encoded as
redis-py's encoder encodes them: ``bytes``, ``bytearray`` and ``memoryview`` as they are,
``str`` as UTF-8 (a lone surrogate raises ``UnicodeEncodeError``), ``int``
and ``float`` as their ``repr``; any other type (``bool``, ``bytearray``,
``None``, a list...) raises ``DataError``. ``key_slots`` does a list in one call.
"""

try:
    from redis.exceptions import DataError as _RedisDataError
except ImportError:  # redis-py is not installed: nothing to be caught as
    _RedisDataError = ValueError


class DataError(_RedisDataError, TypeError):
    """A key of a type redis-py cannot send. It is redis-py's ``DataError``
    (``redis.exceptions.DataError``, where redis-py is installed), so code
    that catches that catches this, and a ``TypeError``."""


from zaris._zaris import (
    SLOT_COUNT,
    Decision,
    ErrorReply,
    RedirectMemory,
    RetryLoop,
    crc_engine,
    hash_tag,
    key_slot,
    key_slots,
    owner_wait_until,
    parse_error_reply,
    refresh_decide,
    segment_for_slot,
)

__all__ = [
    "SLOT_COUNT",
    "DataError",
    "Decision",
    "ErrorReply",
    "RedirectMemory",
    "RetryLoop",
    "crc_engine",
    "hash_tag",
    "key_slot",
    "key_slots",
    "owner_wait_until",
    "parse_error_reply",
    "refresh_decide",
    "segment_for_slot",
]
