//! `zaris._zaris`: the Python face of `zaris-core` (the `zaris` package
//! re-exports it with type stubs). Keys are hashed without a copy: `bytes`
//! as they are, `str` through the UTF-8 form CPython caches.

use std::borrow::Cow;
use std::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyFloat, PyInt, PyList, PyMemoryView, PyString, PyTuple, PyType,
};
use zaris_core::{
    owner_wait_until as core_owner_wait_until, parse_error_reply as parse_reply, Decision,
    ErrorReply as CoreErrorReply, Outcome, RedirectMemory as CoreRedirectMemory, RefreshAsk,
    RefreshGate, RetryLoop as CoreRetryLoop, RetryPolicy, StopReason, SLOT_COUNT,
};

/// A key's bytes, encoded as redis-py's `Encoder.encode` encodes it:
/// `bytes` as they are and `str` as UTF-8 (strict: a lone surrogate is a
/// `UnicodeEncodeError`, as redis-py's encoder raises), both without a
/// copy; `bytearray` and `memoryview` as their bytes; `int` and `float` as
/// their `repr`. Anything else (`bool`, `None`, a list, ...) is redis-py's
/// `DataError`, with its message.
fn key_bytes<'a>(key: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(bytes) = key.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(bytes.as_bytes()));
    }
    if let Ok(text) = key.cast::<PyString>() {
        return Ok(Cow::Borrowed(text.to_str()?.as_bytes()));
    }
    if let Ok(array) = key.cast::<PyByteArray>() {
        return Ok(Cow::Owned(array.to_vec()));
    }
    if key.is_instance_of::<PyMemoryView>() {
        // Its bytes as `bytes` (the buffer protocol is not in the limited
        // API before 3.11).
        let bytes = key.call_method0("tobytes")?;
        return Ok(Cow::Owned(bytes.cast::<PyBytes>()?.as_bytes().to_vec()));
    }
    if (key.is_instance_of::<PyInt>() && !key.is_instance_of::<PyBool>())
        || key.is_instance_of::<PyFloat>()
    {
        return Ok(Cow::Owned(key.repr()?.to_str()?.as_bytes().to_vec()));
    }
    Err(data_error(key))
}

/// `zaris.DataError` (a subclass of redis-py's `DataError` where redis-py
/// is installed, and of `TypeError`) with the message redis-py's encoder
/// gives a key it cannot encode.
fn data_error(key: &Bound<'_, PyAny>) -> PyErr {
    let py = key.py();
    let message = match key.get_type().name() {
        Ok(name) => format!(
            "Invalid input of type: '{name}'. Convert to a bytes, string, int or float first."
        ),
        Err(e) => return e,
    };
    let class = py.import("zaris").and_then(|m| m.getattr("DataError"));
    match class.map(|class| class.cast_into::<PyType>()) {
        Ok(Ok(class)) => PyErr::from_type(class, message),
        _ => PyTypeError::new_err(message),
    }
}

/// The slot of `key` (`CLUSTER KEYSLOT`): of its hash tag, if it has one.
/// redis-py's `key_slot(key, bucket=16384)`: with another `bucket`, the
/// CRC modulo it, as Python's `%` computes it (so `0` raises
/// `ZeroDivisionError`, as redis-py does).
#[pyfunction]
#[pyo3(signature = (key, bucket = None))]
fn key_slot<'py>(
    key: &Bound<'py, PyAny>,
    bucket: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = key.py();
    let bytes = key_bytes(key)?;
    match bucket {
        Some(bucket) if bucket.extract::<u32>().ok() != Some(u32::from(SLOT_COUNT)) => {
            let crc = zaris_core::crc16(zaris_core::hash_tag(&bytes));
            crc.into_pyobject(py)?.rem(bucket)
        }
        _ => Ok(zaris_core::slot_for_key(&bytes)
            .into_pyobject(py)?
            .into_any()),
    }
}

/// Every slot as a Python int, made once: a batch's list then holds
/// references to these instead of 100,000 new int objects (slots past 256
/// are not among CPython's cached small ints, and making them was most of
/// a batch's time).
static SLOT_INTS: PyOnceLock<Py<PyTuple>> = PyOnceLock::new();

/// The slots of `keys` (any iterable), in one call.
#[pyfunction]
fn key_slots<'py>(py: Python<'py>, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let mut slots: Vec<u16> = Vec::with_capacity(keys.len().unwrap_or(0));
    if let Ok(list) = keys.cast::<PyList>() {
        for key in list.iter() {
            slots.push(zaris_core::slot_for_key(&key_bytes(&key)?));
        }
    } else {
        for key in keys.try_iter()? {
            slots.push(zaris_core::slot_for_key(&key_bytes(&key?)?));
        }
    }
    let ints = SLOT_INTS
        .get_or_try_init(py, || PyTuple::new(py, 0..SLOT_COUNT).map(Bound::unbind))?
        .bind(py);
    PyList::new(
        py,
        slots
            .iter()
            .map(|&slot| ints.get_borrowed_item(usize::from(slot)))
            .collect::<PyResult<Vec<_>>>()?,
    )
}

/// The part of `key` that is hashed: its hash tag's content, or all of it.
#[pyfunction]
fn hash_tag<'py>(py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = key_bytes(key)?;
    Ok(PyBytes::new(py, zaris_core::hash_tag(&bytes)))
}

/// The segment of `slot` when the slots are cut into `segments` contiguous,
/// near-equal ranges.
#[pyfunction]
fn segment_for_slot(slot: u32, segments: u32) -> PyResult<u16> {
    match (u16::try_from(slot), u16::try_from(segments)) {
        (Ok(slot), Ok(segments)) if slot < SLOT_COUNT && segments > 0 => {
            Ok(zaris_core::segment_for_slot(slot, segments))
        }
        _ => Err(PyValueError::new_err(format!(
            "slot must be below {SLOT_COUNT} and segments between 1 and 65535 (got {slot}, {segments})"
        ))),
    }
}

/// The CRC engine this process uses (`"vpclmulqdq512"`, `"pclmulqdq"`, ...).
#[pyfunction]
fn crc_engine() -> &'static str {
    zaris_core::crc_engine().name()
}

/// An error reply read: a redirect, or a status of the vocabulary.
#[pyclass(frozen, module = "zaris", get_all)]
struct ErrorReply {
    /// `"moved"`, `"ask"` or `"status"`.
    kind: &'static str,
    /// What to pass to `RetryLoop.record`: `"Moved"`, `"Ask"`, `"Migrating"`, ...
    outcome: &'static str,
    /// The status (`ASK` is `"Migrating"`).
    status: &'static str,
    /// The slot a redirect names.
    slot: Option<u16>,
    /// The host a redirect names (empty when Redis 7 leaves it out).
    host: Option<String>,
    /// The port a redirect names.
    port: Option<u16>,
}

#[pymethods]
impl ErrorReply {
    fn __repr__(&self) -> String {
        match (&self.host, self.port, self.slot) {
            (Some(host), Some(port), Some(slot)) => {
                format!("ErrorReply({}, slot={slot}, {host}:{port})", self.kind)
            }
            _ => format!("ErrorReply(status, {})", self.status),
        }
    }
}

/// Reads an error reply (`b"-MOVED 3999 127.0.0.1:6381"`, with or without
/// its `-` and `\r\n`). `ValueError` for an error outside the routing
/// vocabulary (surface it as is) or a broken redirect.
#[pyfunction]
fn parse_error_reply(reply: &Bound<'_, PyAny>) -> PyResult<ErrorReply> {
    let bytes = key_bytes(reply)?;
    let parsed = parse_reply(&bytes).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let (kind, redirect) = match parsed {
        CoreErrorReply::Moved(to) => ("moved", Some(to)),
        CoreErrorReply::Ask(to) => ("ask", Some(to)),
        CoreErrorReply::Status(_) => ("status", None),
    };
    Ok(ErrorReply {
        kind,
        outcome: parsed.outcome().name(),
        status: parsed.status().name(),
        slot: redirect.map(|r| r.slot),
        host: redirect.map(|r| r.host.to_owned()),
        port: redirect.map(|r| r.port),
    })
}

/// What to do after an attempt.
#[pyclass(frozen, module = "zaris", name = "Decision", get_all)]
struct Next {
    /// `"return"`, `"surface"`, `"follow_ask"`, `"retry"` or `"give_up"`.
    kind: &'static str,
    /// For `"retry"`: refresh the routing map first.
    refresh_map: bool,
    /// For `"retry"`: milliseconds to wait.
    delay_ms: u64,
    /// For `"give_up"`: `"attempts_exhausted"` or `"deadline_reached"`.
    stop_reason: Option<&'static str>,
}

#[pymethods]
impl Next {
    fn __repr__(&self) -> String {
        match self.kind {
            "retry" => format!(
                "Decision(retry, delay_ms={}, refresh_map={})",
                self.delay_ms,
                if self.refresh_map { "True" } else { "False" }
            ),
            "give_up" => format!("Decision(give_up, {})", self.stop_reason.unwrap_or("")),
            kind => format!("Decision({kind})"),
        }
    }
}

/// One request's retry loop: create it with the policy, call `record`
/// after every attempt with its outcome, do what the decision says.
#[pyclass(module = "zaris")]
struct RetryLoop {
    inner: CoreRetryLoop,
}

#[pymethods]
impl RetryLoop {
    #[new]
    #[pyo3(signature = (max_attempts = 3, backoff_ms = 100, deadline_ms = Some(60_000)))]
    fn new(max_attempts: u32, backoff_ms: u64, deadline_ms: Option<u64>) -> Self {
        Self {
            inner: CoreRetryLoop::new(RetryPolicy {
                max_attempts,
                backoff: Duration::from_millis(backoff_ms),
                deadline: deadline_ms.map(Duration::from_millis),
            }),
        }
    }

    /// Records an attempt's outcome (a status name such as `"Moved"`,
    /// `"Ask"`, or a transport failure such as `"TimedOut"`; or an
    /// `ErrorReply`'s `.outcome`) and says what to do next.
    /// `remaining_ms` is the time left before the deadline (None: none).
    #[pyo3(signature = (outcome, remaining_ms = None))]
    fn record(&mut self, outcome: &str, remaining_ms: Option<u64>) -> PyResult<Next> {
        let outcome = Outcome::from_name(outcome).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown outcome {outcome:?}: a status (\"Moved\"), \"Ask\" or a transport failure (\"TimedOut\")"
            ))
        })?;
        let none = Next {
            kind: "return",
            refresh_map: false,
            delay_ms: 0,
            stop_reason: None,
        };
        Ok(
            match self
                .inner
                .record(outcome, remaining_ms.map(Duration::from_millis))
            {
                Decision::Return => none,
                Decision::Surface => Next {
                    kind: "surface",
                    ..none
                },
                Decision::FollowAsk => Next {
                    kind: "follow_ask",
                    ..none
                },
                Decision::Retry { refresh_map, delay } => Next {
                    kind: "retry",
                    refresh_map,
                    delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    ..none
                },
                Decision::GiveUp(stop) => Next {
                    kind: "give_up",
                    stop_reason: Some(match stop {
                        StopReason::AttemptsExhausted => "attempts_exhausted",
                        StopReason::DeadlineReached => "deadline_reached",
                    }),
                    ..none
                },
            },
        )
    }

    /// Attempts recorded so far.
    #[getter]
    fn attempts(&self) -> u32 {
        self.inner.attempts()
    }
}

/// Whether a map refresh asked for at `now_ms` starts (`"start"`), rides
/// the one in flight (`"ride"`) or is skipped (`"debounced"`): the Zaris
/// client's rule. `last_done_ms`: when the last one ended (`None`: never).
#[pyfunction]
#[pyo3(signature = (last_done_ms, in_flight, now_ms, min_interval_ms=500))]
fn refresh_decide(
    last_done_ms: Option<u64>,
    in_flight: bool,
    now_ms: u64,
    min_interval_ms: u64,
) -> &'static str {
    match RefreshGate::decide(
        last_done_ms.map(Duration::from_millis),
        in_flight,
        Duration::from_millis(now_ms),
        Duration::from_millis(min_interval_ms),
    ) {
        RefreshAsk::Start => "start",
        RefreshAsk::Ride => "ride",
        RefreshAsk::Debounced => "debounced",
    }
}

/// Until when (ms) a request whose slot has no owner able to answer may
/// wait for one, unsent, having waited since `since_ms`: the refresh wait
/// from then, never past `deadline_ms`; `None` once it may wait no longer,
/// or when `max_attempts` is 1 (retries off).
#[pyfunction]
#[pyo3(signature = (since_ms, now_ms, refresh_wait_ms=15_000, deadline_ms=None, max_attempts=3))]
fn owner_wait_until(
    since_ms: u64,
    now_ms: u64,
    refresh_wait_ms: u64,
    deadline_ms: Option<u64>,
    max_attempts: u32,
) -> Option<u64> {
    let policy = RetryPolicy {
        max_attempts,
        ..RetryPolicy::DEFAULT
    };
    core_owner_wait_until(
        &policy,
        Duration::from_millis(since_ms),
        Duration::from_millis(now_ms),
        Duration::from_millis(refresh_wait_ms),
        deadline_ms.map(Duration::from_millis),
    )
    .map(|u| u64::try_from(u.as_millis()).unwrap_or(u64::MAX))
}

/// The last 64 `MOVED` redirects a client followed, to tell a redirect
/// loop from churn: the Zaris client's rule.
#[pyclass]
struct RedirectMemory {
    inner: CoreRedirectMemory<64>,
}

#[pymethods]
impl RedirectMemory {
    #[new]
    fn new() -> Self {
        Self {
            inner: CoreRedirectMemory::default(),
        }
    }

    /// Records that `from_addr` answered `MOVED slot to_addr` at `now_ms`;
    /// `True` when it closes a loop (a `MOVED` back to the node asked, or
    /// one undoing a `MOVED` of the same slot between the same two nodes
    /// within 2 s): do not apply its hint, refresh from other nodes first.
    fn note(&mut self, slot: u16, from_addr: &str, to_addr: &str, now_ms: u64) -> bool {
        self.inner.note(
            slot,
            from_addr.as_bytes(),
            to_addr.as_bytes(),
            Duration::from_millis(now_ms),
        )
    }
}

/// The module.
#[pymodule]
fn _zaris(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(key_slot, m)?)?;
    m.add_function(wrap_pyfunction!(key_slots, m)?)?;
    m.add_function(wrap_pyfunction!(hash_tag, m)?)?;
    m.add_function(wrap_pyfunction!(segment_for_slot, m)?)?;
    m.add_function(wrap_pyfunction!(crc_engine, m)?)?;
    m.add_function(wrap_pyfunction!(parse_error_reply, m)?)?;
    m.add_function(wrap_pyfunction!(refresh_decide, m)?)?;
    m.add_function(wrap_pyfunction!(owner_wait_until, m)?)?;
    m.add_class::<ErrorReply>()?;
    m.add_class::<Next>()?;
    m.add_class::<RetryLoop>()?;
    m.add_class::<RedirectMemory>()?;
    m.add("SLOT_COUNT", SLOT_COUNT)?;
    Ok(())
}
