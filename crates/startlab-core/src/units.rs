//! Quantities with their unit in the type: link rates and the time a packet takes on the wire.

use crate::time::Duration;
use std::fmt;

/// A bit rate, in bits per second (powers of 1000: 1 Mbps = 1 000 000 bit/s).
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Rate {
    bits_per_second: u64,
}

impl Rate {
    pub const fn from_bps(bits_per_second: u64) -> Self {
        Rate { bits_per_second }
    }
    pub const fn from_mbps(mbps: u64) -> Self {
        Rate {
            bits_per_second: mbps * 1_000_000,
        }
    }
    pub const fn bps(self) -> u64 {
        self.bits_per_second
    }
    pub fn bps_f64(self) -> f64 {
        self.bits_per_second as f64
    }

    /// Serialization time of `bytes` at this rate, rounded up to the next nanosecond
    /// (so a link never sends faster than its rate).
    pub fn transmit_time(self, bytes: u64) -> Duration {
        debug_assert!(self.bits_per_second > 0);
        let bits = bytes as u128 * 8 * 1_000_000_000;
        let bps = self.bits_per_second as u128;
        Duration::from_nanos(bits.div_ceil(bps) as u64)
    }

    /// Bytes this rate carries in `d` (rounded down).
    pub fn bytes_in(self, d: Duration) -> u64 {
        (self.bits_per_second as u128 * d.as_nanos() as u128 / 8 / 1_000_000_000) as u64
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.bits_per_second;
        if b != 0 && b.is_multiple_of(1_000_000_000) {
            write!(f, "{}Gbps", b / 1_000_000_000)
        } else if b != 0 && b.is_multiple_of(1_000_000) {
            write!(f, "{}Mbps", b / 1_000_000)
        } else if b != 0 && b.is_multiple_of(1_000) {
            write!(f, "{}kbps", b / 1_000)
        } else {
            write!(f, "{}bps", b)
        }
    }
}
impl fmt::Debug for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_1000_byte_packet_at_40mbps_takes_200us() {
        // 8000 bit / 40e6 bit/s = 200 us
        assert_eq!(
            Rate::from_mbps(40).transmit_time(1000),
            Duration::from_micros(200)
        );
    }

    #[test]
    fn transmit_time_rounds_up() {
        // 8000 bit / 1.5e6 bit/s = 5333333.33 ns -> 5333334 ns
        assert_eq!(
            Rate::from_bps(1_500_000).transmit_time(1000).as_nanos(),
            5_333_334
        );
    }

    #[test]
    fn bdp_in_bytes() {
        assert_eq!(
            Rate::from_mbps(40).bytes_in(Duration::from_millis(100)),
            500_000
        );
    }
}
