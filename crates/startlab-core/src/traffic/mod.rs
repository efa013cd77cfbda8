//! Traffic other than a hand-placed TCP flow: UDP sources (constant bit rate, on-off) and the
//! arrival process of many finite TCP flows.

pub mod arrivals;
pub mod dist;
pub mod udp;

pub use arrivals::{arrivals_stream, ArrivalDraws};
pub use dist::{OnOffDistribution, SizeDistribution};
pub use udp::{source_stream, UdpPattern, UdpSource};
