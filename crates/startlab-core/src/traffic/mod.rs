//! Traffic other than a hand-placed bulk TCP flow: UDP sources (constant bit rate, on-off), the
//! arrival process of many finite TCP flows, and an application that sends requests in bursts.

pub mod arrivals;
pub mod dist;
pub mod requests;
pub mod udp;

pub use arrivals::{arrivals_stream, ArrivalDraws};
pub use dist::{OnOffDistribution, SizeDistribution};
pub use requests::{requests_stream, RequestDraws, RequestSpec};
pub use udp::{source_stream, UdpPattern, UdpSource};
