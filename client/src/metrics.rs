//! What the client reports to the `metrics` facade, behind the `metrics`
//! feature (without it, every call here is empty and compiles away). Any
//! recorder the application installs gets them: a Prometheus exporter, an
//! OpenTelemetry bridge. The names:
//!
//! | name | kind | labels |
//! |---|---|---|
//! | `zaris_requests_total` | counter | `command`, `outcome` (`ok` or the error's kind) |
//! | `zaris_redirects_total` | counter | `kind` (`moved`, `ask`) |
//! | `zaris_retries_total` | counter | `status` (a status's name, or `transport`) |
//! | `zaris_refreshes_total` | counter | `cause` |
//! | `zaris_reconnects_total` | counter | `node` |
//! | `zaris_nodes_opened_total` | counter | `node` |
//! | `zaris_in_flight` | gauge | `node` |
//! | `zaris_request_seconds` | histogram | `node` |
//! | `zaris_cache_total` | counter | `event` (`hit`, `miss`, `invalidation`, `flush`) |
//! | `zaris_cache_bytes` | gauge | |
//!
//! One attempt's latency is recorded per node, from the write to the last
//! reply.

/// A request ended (its caller got `outcome`).
#[inline]
pub(crate) fn request(command: &'static str, outcome: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zaris_requests_total", "command" => command, "outcome" => outcome)
        .increment(1);
    let _ = (command, outcome);
}

/// A redirect followed or applied.
#[inline]
pub(crate) fn redirect(kind: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zaris_redirects_total", "kind" => kind).increment(1);
    let _ = kind;
}

/// A retry, after `status` (`transport` for a connection failure).
#[inline]
pub(crate) fn retry(status: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zaris_retries_total", "status" => status).increment(1);
    let _ = status;
}

/// A map refresh started, for `cause` (a `RefreshCause`'s name).
#[inline]
pub(crate) fn refresh(cause: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zaris_refreshes_total", "cause" => cause).increment(1);
    let _ = cause;
}

/// A node's shared connection made again after it broke.
#[inline]
pub(crate) fn reconnect(node: &str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zaris_reconnects_total", "node" => node.to_owned()).increment(1);
    let _ = node;
}

/// The client cache: a hit, a miss, an invalidation or a flush.
#[inline]
pub(crate) fn cache(event: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zaris_cache_total", "event" => event).increment(1);
    let _ = event;
}

/// The bytes the client cache holds now.
#[inline]
pub(crate) fn cache_bytes(bytes: u64) {
    #[cfg(feature = "metrics")]
    metrics::gauge!("zaris_cache_bytes").set(bytes as f64);
    let _ = bytes;
}

/// A node opened (its requests kept timing out).
#[inline]
pub(crate) fn opened(node: &str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("zaris_nodes_opened_total", "node" => node.to_owned()).increment(1);
    let _ = node;
}

/// When an attempt starts, for [`attempt`]: read from the clock only
/// when metrics are on (two clock reads per request otherwise wasted).
#[inline]
pub(crate) fn started() -> Option<std::time::Instant> {
    #[cfg(feature = "metrics")]
    {
        Some(std::time::Instant::now())
    }
    #[cfg(not(feature = "metrics"))]
    {
        None
    }
}

/// One attempt on `node`, begun at `began` ([`started`]), is over;
/// `in_flight` requests are there now.
#[inline]
pub(crate) fn attempt(node: &str, began: Option<std::time::Instant>, in_flight: usize) {
    #[cfg(feature = "metrics")]
    if let Some(began) = began {
        metrics::histogram!("zaris_request_seconds", "node" => node.to_owned())
            .record(began.elapsed().as_secs_f64());
        metrics::gauge!("zaris_in_flight", "node" => node.to_owned()).set(in_flight as f64);
    }
    let _ = (node, began, in_flight);
}
