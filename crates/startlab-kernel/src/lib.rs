//! # startlab-kernel
//!
//! The kernel world: a resolved scenario run on Linux's own TCP, between network namespaces,
//! over an emulated bottleneck, and written in the simulator's tables.
//!
//! Where to look:
//! - [`trace`]: per-ACK sender state from the `tcp:tcp_probe` tracepoint, in a trace instance
//!   of the run's own;
//! - [`tcpinfo`]: a connection's `TCP_INFO` counters.

pub mod tcpinfo;
pub mod trace;
