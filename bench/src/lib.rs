//! `zaris-bench`: what the routing path costs, recorded per commit and
//! charted.
//!
//! The criterion benches (`benches/routing.rs`) time the core against the
//! peers a user would pick instead; `benches/allocs.rs` counts allocations
//! per operation. This library turns a run into a [`Record`] of medians,
//! keeps the [history] of records committed in the repo, compares
//! the latest record with the one before ([`compare`]), checks the project's
//! speed [bars], and renders the dashboard ([`charts`], [`page`]).
//!
//! `just bench` does all of it; `just bench-compare` prints the comparison.

pub mod bar;
pub mod bars;
pub mod charts;
pub mod clients;
pub mod compare;
pub mod counts;
pub mod criterion;
pub mod history;
pub mod interleave;
pub mod keys;
pub mod page;
pub mod reliability;
pub mod svg;
pub mod tiers;
pub mod trend;

pub use history::Record;
