//! # startlab-emu
//!
//! The link emulator of the kernel world: packets that real hosts write into TUN devices cross
//! the scenario's links, which are the simulator's own [`startlab_core::net::Link`]s (rate,
//! propagation delay, DropTail or RED queue, random loss from the scenario's seed), driven by
//! the real clock instead of the event queue, and are written into the destination host's TUN
//! device when the link says they arrive.
//!
//! Where to look:
//! - [`emulator`]: the forwarding threads, one per side of the network, and what a run reports;
//! - [`clock`]: the monotonic clock, precise waits, CPU wake-up latency, hypervisor steal;
//! - [`lateness`]: how late packets left against their schedule, as a histogram;
//! - [`tun`]: TUN devices created inside a network namespace, offloads off.

pub mod clock;
pub mod emulator;
pub mod lateness;
pub mod tun;

pub use emulator::{Attachment, Emulator, EmulatorConfig, EmulatorReport, SideReport};
pub use lateness::Lateness;
