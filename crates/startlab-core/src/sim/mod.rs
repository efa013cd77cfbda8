//! The discrete-event engine: an event queue owned by the simulation (no globals), ordered by
//! time and, at equal times, by insertion order.

mod queue;
pub use queue::EventQueue;
