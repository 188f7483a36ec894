//! Durable and plain writes against the final state; no read of a value
//! never written.

use super::history::*;
use super::*;
use crate::soak::workload::Finals;

/// Registers: the final value is the last acknowledged one or later, and
/// every value read was written.
pub(super) fn check_registers(
    seen: &Observed,
    finals: &Finals,
    lossy: &dyn Fn(f64) -> bool,
    report: &mut Report,
    violations: &mut Vec<String>,
) {
    let Observed {
        registers,
        reads,
        multi_written,
        multi_reads,
        ..
    } = seen;
    for (key, r) in registers {
        let Some((acked, at)) = r.acked else { continue };
        let last = finals
            .values
            .get(key)
            .cloned()
            .flatten()
            .and_then(|v| sequence(&v).map(|(_, n)| n))
            .unwrap_or(0);
        if last < acked {
            if r.durable {
                report.lost_durable_writes += 1;
                violations.push(format!("{key}: durable write {acked} lost (found {last})"));
            } else {
                report.lost_plain_writes.note(key, lossy(at));
            }
        }
    }
    for (key, value) in reads {
        let written = registers
            .get(key)
            .is_some_and(|r| r.written.contains(value));
        if value != "-" && !written {
            violations.push(format!("{key}: read {value:?}, never written"));
        }
    }
    for read in multi_reads {
        for value in read.split(',') {
            if !multi_written.contains(value) {
                violations.push(format!("MGET read {value:?}, never written"));
            }
        }
    }
}
