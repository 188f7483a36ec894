"""Type stubs of the ``zaris`` package."""

from typing import Iterable, Literal, Optional, Union

Key = Union[bytes, bytearray, memoryview, str, int, float]

SLOT_COUNT: int

class DataError(ValueError, TypeError):
    """A key of a type redis-py cannot send (redis-py's ``DataError`` where it is installed)."""

def key_slot(key: Key, bucket: int = 16384) -> int:
    """The slot of ``key`` (``CLUSTER KEYSLOT``): of its hash tag, if it has one.

    redis-py's ``key_slot``: with another ``bucket``, the CRC modulo it.
    Raises ``UnicodeEncodeError`` for a ``str`` with a lone surrogate and
    ``DataError`` for a type redis-py's encoder refuses.
    """

def key_slots(keys: Iterable[Key]) -> list[int]:
    """The slots of ``keys``, in one call."""

def hash_tag(key: Key) -> bytes:
    """The part of ``key`` that is hashed: its hash tag's content, or all of it."""

def segment_for_slot(slot: int, segments: int) -> int:
    """The segment of ``slot`` when the slots are cut into ``segments`` near-equal ranges.

    Raises ``ValueError`` for a slot past 16383 or zero segments.
    """

def crc_engine() -> str:
    """The CRC engine this process uses (``"vpclmulqdq512"``, ``"pclmulqdq"``, ``"portable"``...)."""

class ErrorReply:
    """An error reply read: a redirect, or a status of the vocabulary."""

    kind: Literal["moved", "ask", "status"]
    outcome: str
    """What to pass to ``RetryLoop.record``."""
    status: str
    slot: Optional[int]
    host: Optional[str]
    port: Optional[int]

def parse_error_reply(reply: Union[bytes, str]) -> ErrorReply:
    """Reads an error reply; ``ValueError`` for one outside the routing vocabulary or broken."""

class Decision:
    """What to do after an attempt."""

    kind: Literal["return", "surface", "follow_ask", "retry", "give_up"]
    refresh_map: bool
    delay_ms: int
    stop_reason: Optional[Literal["attempts_exhausted", "deadline_reached"]]

class RetryLoop:
    """One request's retry loop: ``record`` each attempt's outcome, do what it says."""

    def __init__(
        self, max_attempts: int = 3, backoff_ms: int = 100, deadline_ms: Optional[int] = 60_000
    ) -> None: ...
    def record(self, outcome: str, remaining_ms: Optional[int] = None) -> Decision:
        """Records an outcome (``"Moved"``, ``"Ask"``, ``"TimedOut"``, an ``ErrorReply.outcome``)."""
    @property
    def attempts(self) -> int:
        """Attempts recorded so far."""

def refresh_decide(
    last_done_ms: Optional[int], in_flight: bool, now_ms: int, min_interval_ms: int = 500
) -> Literal["start", "ride", "debounced"]:
    """Whether a map refresh asked for now starts, rides the one in flight, or is skipped."""

def owner_wait_until(
    since_ms: int,
    now_ms: int,
    refresh_wait_ms: int = 15_000,
    deadline_ms: Optional[int] = None,
    max_attempts: int = 3,
) -> Optional[int]:
    """Until when a request for a dead owner may wait, unsent; ``None`` once it may not."""

class RedirectMemory:
    """The last 64 ``MOVED`` redirects: tells a redirect loop from churn."""

    def __init__(self) -> None: ...
    def note(self, slot: int, from_addr: str, to_addr: str, now_ms: int) -> bool:
        """Records ``from_addr`` answering ``MOVED slot to_addr``; ``True`` for a loop."""
