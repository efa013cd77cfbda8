//! # startlab-core
//!
//! A deterministic packet-level simulator of TCP start-up over large bandwidth-delay paths. No
//! I/O, no Python, no clock: a run is a function of its scenario and seed.
//!
//! Where to look:
//! - [`time`], [`units`]: integer nanoseconds, bit rates;
//! - [`sim`]: the event queue; [`simulation`]: the event loop, measurements and reports;
//! - [`net`]: links (queue + transmitter + propagation), queue disciplines, routing, topologies;
//! - [`tcp`]: sender and receiver with loss recovery and the RFC 6298 timer;
//! - [`cc`]: the congestion-control interface (Linux `tcp_congestion_ops` hooks) and the algorithms;
//! - [`traffic`]: UDP sources and flow-arrival processes;
//! - [`measure`]: the recorded tables;
//! - [`scenario`]: the TOML/JSON scenario model, its validation and its translation into a run.

pub mod cc;
pub mod measure;
pub mod net;
pub mod rng;
pub mod scenario;
pub mod sim;
pub mod simulation;
pub mod tcp;
pub mod time;
pub mod traffic;
pub mod units;

pub use simulation::Simulation;
pub use time::{Duration, Time};
pub use units::Rate;

/// The version of this crate, recorded with every result.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
