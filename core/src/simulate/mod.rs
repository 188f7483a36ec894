//! The playground's simulators (the `simulate` feature, on by default):
//! a script of outcomes replayed through the retry machine ([`script`]),
//! and a client's request stream through one ownership event
//! ([`churn`]). Both decide through the same code the tokio client runs;
//! an embedder that wants only placement and the decisions turns the
//! feature off and compiles neither.

mod churn;
mod scenario;
mod script;

pub use churn::{simulate_churn, ChurnTotals, ClientModel, Entry, Mark};
pub use scenario::{
    ChurnError, ChurnEvent, ChurnScenario, Milestone, MAX_CHURN_MASTERS, MAX_CHURN_REQUESTS,
};
pub use script::{parse_script, replay, Replay, Step, UnknownOutcome};
