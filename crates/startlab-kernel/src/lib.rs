//! # startlab-kernel
//!
//! The kernel world: a resolved scenario run on Linux's own TCP, between network namespaces,
//! over an emulated bottleneck, and written in the simulator's tables.
//!
//! Where to look:
//! - [`plan`]: what the kernel runs for a resolved scenario, or the field it cannot honour;
//! - [`trace`]: per-ACK sender state from the `tcp:tcp_probe` tracepoint, in a trace instance
//!   of the run's own;
//! - [`tcpinfo`]: a connection's `TCP_INFO` counters; [`counters`]: a namespace's `nstat` counters;
//! - [`series`]: trace records turned into the flow series and the slow-start exit;
//! - [`traffic`]: TCP connections between hosts in namespaces, on the monotonic clock;
//! - [`testbed`]: the scenario's hosts as namespaces joined to the link emulator
//!   (`startlab-emu`) by TUN devices; [`guard`]: one run at a time, global settings restored;
//! - [`run`]: all of it in order, ending in the simulator's tables.

pub mod bpf;
pub mod counters;
pub mod diag;
pub mod guard;
pub mod plan;
pub mod run;
pub mod sampler;
pub mod series;
pub mod tables;
pub mod tcpinfo;
pub mod testbed;
pub mod trace;
pub mod traffic;
