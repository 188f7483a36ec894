"""Redis Cluster key slots, error replies and the retry machine, from
Zaris's ``no_std`` Rust core.

``key_slot`` is exactly ``CLUSTER KEYSLOT`` for any key: ``bytes`` as they
are, ``str`` as UTF-8 (a lone surrogate raises ``UnicodeEncodeError``, as
redis-py's encoder does), ``int`` and ``float`` as redis-py encodes them.
``key_slots`` does a list in one call.
"""

from zaris._zaris import (
    SLOT_COUNT,
    Decision,
    ErrorReply,
    RetryLoop,
    crc_engine,
    hash_tag,
    key_slot,
    key_slots,
    parse_error_reply,
    segment_for_slot,
)

__all__ = [
    "SLOT_COUNT",
    "Decision",
    "ErrorReply",
    "RetryLoop",
    "crc_engine",
    "hash_tag",
    "key_slot",
    "key_slots",
    "parse_error_reply",
    "segment_for_slot",
]
