//! Zaris's deterministic simulation: the real `zaris-client` (built with
//! its `sim` feature: turmoil's network, a seeded generator) against a
//! model Redis Cluster, in simulated time, one seed a run.
//!
//! - [`model`]: the cluster's state: slots and config epochs, each node's
//!   view learnt by gossip, replication with lag, failure detection and
//!   failover; [`commands`]: what a node answers; [`serve`]: its sockets,
//!   and the faults that act on them; [`resp`]: the wire.
//! - [`churn`]: the soak's nemesis steps (`zaris_tests::soak::Churn`) on
//!   the model; [`run`]: one seed, judged by the soak's own checker;
//!   [`trace`]: what happened, hashed line by line.

pub mod campaign;
pub mod churn;
pub mod commands;
pub mod effect;
pub mod model;
pub mod resp;
pub mod run;
pub mod serve;
pub mod trace;

pub use campaign::{campaign, hunt, ours, proof_of, Report, Summary};
pub use run::{run, Outcome, Setup};
