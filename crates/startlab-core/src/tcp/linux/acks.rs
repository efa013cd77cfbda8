//! When a Linux receiver acknowledges, and the window it advertises (net/ipv4/tcp_input.c,
//! tcp_output.c, Linux 6.18).
//!
//! Linux does not simply ACK every second segment. What decides is, per data segment:
//! * **quick-ACK mode** (`tcp_in_quickack_mode`): every segment is acknowledged at once while
//!   `quick > 0`. The first data segment sets `quick` to rcv_wnd / (2 × rcv_mss), at most 16
//!   (`tcp_incr_quickack`); so does a gap longer than the RTO, and a duplicate segment enters
//!   quick-ACK mode (`tcp_enter_quickack_mode`). Every ACK sent takes one off
//!   (`tcp_dec_quickack_mode`). And **every segment that grows the receive window** sets
//!   `quick |= 1` (`tcp_grow_window`): while the window opens (slow start, until the buffer's
//!   autotuned limit is reached) the receiver acknowledges every segment.
//! * otherwise an ACK once more than one full segment is unacknowledged (`__tcp_ack_snd_check`),
//!   when a segment fills the last hole (`ICSK_ACK_NOW`), when the application's read frees at
//!   least twice the window left (`__tcp_cleanup_rbuf`), or when the delayed-ACK timer fires:
//!   `ato`, estimated from the segments' inter-arrival times (`tcp_event_data_recv`), bounded
//!   as `tcp_send_delayed_ack` bounds it, in jiffies.
//! * out-of-order segments are acknowledged at once for the first three duplicate ACKs, then
//!   **SACK compression** (`tcp_comp_sack_*`): one ACK after 5 % of the RTT (at most 1 ms) or
//!   after 44 held ones.
//!
//! The advertised window is `__tcp_select_window`: min(free space, rcv_ssthresh), aligned up to
//! the window-scale unit, never shrinking. rcv_ssthresh starts at the initial receive window
//! (10 segments, `tcp_select_initial_window`) and grows by two segments per segment received
//! (`tcp_grow_window`) up to the buffer's window, which dynamic right-sizing raises once per
//! receiver RTT to twice what the application read in the last one, doubled again while that
//! grows (`tcp_rcv_space_adjust`, `tcp_rcvbuf_grow`).
//!
//! The application reads every segment as it arrives (a bulk receiver). Window quantities are
//! bytes of payload; the buffer's window is counted directly in window bytes, which is what
//! `tcp_win_from_space` makes of it, so the skb truesize never enters.

use crate::time::{Duration, Time};

/// The Linux receiver's settings (defaults: Linux 6.18 as Debian builds it).
#[derive(Clone, Debug, PartialEq)]
pub struct LinuxAckConfig {
    /// Kernel timer frequency (`CONFIG_HZ`): the delayed-ACK timer and `ato` count jiffies.
    pub hz: u32,
    /// Initial receive window, segments (`TCP_DEFAULT_INIT_RCVWND`, or the route's `initrwnd`).
    pub initial_rwnd_segments: u32,
    /// Initial receive buffer, bytes (`net.ipv4.tcp_rmem[1]`).
    pub rmem_default_bytes: u64,
    /// Largest receive buffer, bytes (`net.ipv4.tcp_rmem[2]`). Linux's own default is 6 MiB;
    /// this one is the kernel world's (256 MiB, so that no path is buffer-limited), which also
    /// sets the window scale (13).
    pub rmem_max_bytes: u64,
    /// Quick ACKs granted at the start or on re-entry (`TCP_MAX_QUICKACKS`).
    pub max_quickacks: u32,
    /// SACK compression: the longest hold (`tcp_comp_sack_delay_ns`) and the most ACKs held
    /// (`tcp_comp_sack_nr`; 0 turns compression off).
    pub comp_sack_delay: Duration,
    pub comp_sack_nr: u32,
    /// The largest window offered, bytes (`window_clamp`, as a route's `window` sets it; the
    /// scenario's `tcp.receive_window`); none: the buffer's autotuned window.
    pub window_clamp_bytes: Option<u64>,
}

impl Default for LinuxAckConfig {
    fn default() -> Self {
        LinuxAckConfig {
            hz: 250,
            initial_rwnd_segments: 10,
            rmem_default_bytes: 131_072,
            rmem_max_bytes: 256 << 20,
            max_quickacks: 16,
            comp_sack_delay: Duration::from_millis(1),
            comp_sack_nr: 44,
            window_clamp_bytes: None,
        }
    }
}

/// What to do about the segment that just arrived.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AckAction {
    Now,
    /// Arm (or keep) the delayed-ACK timer for this instant.
    Delay(Time),
    /// Hold a compressed SACK until this instant (or until more are held).
    Compress(Time),
}

/// One segment's arrival, as the receiver classified it.
#[derive(Copy, Clone, Debug)]
pub struct Arrival {
    /// Payload bytes received in order before and after it (`rcv_nxt`).
    pub rcv_nxt_before: u64,
    pub rcv_nxt: u64,
    /// It was entirely below `rcv_nxt` (a duplicate).
    pub duplicate: bool,
    /// Out-of-order data is held after it.
    pub out_of_order: bool,
    /// It filled the last hole.
    pub filled_last_hole: bool,
    /// Highest byte held out of order, if any (for `tcp_rcvbuf_grow`).
    pub ooo_end: u64,
}

/// A Linux receiver's ACK state.
#[derive(Clone, Debug)]
pub struct LinuxAcks {
    p: LinuxAckConfig,
    /// `icsk_ack.rcv_mss` = advmss: the receiver's full segment, bytes.
    mss: u64,
    jiffy: Duration,
    /// Window scale (`tcp_select_initial_window`: the smallest shift that fits rmem_max).
    wscale: u32,
    quick: u32,
    /// `icsk_ack.ato`; `None` before the first data segment.
    ato: Option<Duration>,
    lrcvtime: Time,
    /// Window advertised by the last ACK, and `rcv_nxt` then (`rcv_wnd`, `rcv_wup`).
    rcv_wnd: u64,
    rcv_wup: u64,
    rcv_ssthresh: u64,
    /// The buffer's window (`window_clamp`; free space equals it as the reader keeps up).
    clamp: u64,
    /// Dynamic right-sizing (`rcvq_space`).
    space: u64,
    space_seq: u64,
    space_time: Time,
    /// Receiver RTT (`rcv_rtt_est`, the window-based measure) and its current probe.
    rcv_rtt: Option<Duration>,
    rtt_seq: u64,
    rtt_time: Option<Time>,
    /// SACK compression (`compressed_ack`, `dup_ack_counter`, `compressed_ack_rcv_nxt`).
    compressed: u32,
    dup_acks: u32,
    compressed_at: u64,
}

/// The delayed-ACK bounds in jiffies: `TCP_ATO_MIN` = `TCP_DELACK_MIN` = HZ / 25,
/// `TCP_DELACK_MAX` = HZ / 5.
fn jiffies(hz: u32, n: u64) -> Duration {
    Duration::from_nanos(n * 1_000_000_000 / hz as u64)
}

impl LinuxAcks {
    pub fn new(p: LinuxAckConfig, mss_bytes: u32) -> Self {
        let mss = mss_bytes.max(1) as u64;
        let jiffy = jiffies(p.hz.max(1), 1);
        // tcp_select_initial_window: wscale so that rmem_max fits in 16 bits (at most 14).
        let mut wscale = 0;
        let mut span = p.rmem_max_bytes.max(p.rmem_default_bytes);
        while span > u16::MAX as u64 && wscale < 14 {
            span >>= 1;
            wscale += 1;
        }
        // The initial window: min(buffer's window, 10 segments); tcp_full_space is half the
        // buffer (TCP_DEFAULT_SCALING_RATIO), and tcp_init_buffer_space keeps one segment
        // back from the clamp.
        let full = p.rmem_default_bytes / 2;
        let limit = p.window_clamp_bytes.unwrap_or(u64::MAX).max(mss);
        let initial = (p.initial_rwnd_segments as u64 * mss).min(full).min(limit);
        let clamp = full.saturating_sub(mss).max(2 * mss).min(limit);
        LinuxAcks {
            mss,
            jiffy,
            wscale,
            quick: 0,
            ato: None,
            lrcvtime: Time::ZERO,
            rcv_wnd: initial,
            rcv_wup: 0,
            rcv_ssthresh: initial.min(clamp),
            clamp,
            // tcp_init_buffer_space: min(rcv_ssthresh, rcv_wnd, TCP_INIT_CWND × advmss).
            space: initial.min(10 * mss),
            space_seq: 0,
            space_time: Time::ZERO,
            rcv_rtt: None,
            rtt_seq: 0,
            rtt_time: None,
            compressed: 0,
            dup_acks: 0,
            compressed_at: u64::MAX,
            p,
        }
    }

    /// The window the next ACK advertises, bytes (`tcp_select_window`).
    fn select_window(&self, rcv_nxt: u64) -> u64 {
        let unit = 1u64 << self.wscale;
        // __tcp_select_window: min(free space, rcv_ssthresh), aligned up to the scale unit.
        let new = self.rcv_ssthresh.min(self.clamp).div_ceil(unit) * unit;
        // Never shrink what was offered (tcp_select_window).
        let offered = (self.rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        new.max(offered.div_ceil(unit) * unit)
    }

    /// `tcp_incr_quickack`.
    fn incr_quickack(&mut self) {
        let q = (self.rcv_wnd / (2 * self.mss)) as u32;
        let q = if q == 0 { 2 } else { q }.min(self.p.max_quickacks);
        self.quick = self.quick.max(q);
    }

    /// `tcp_enter_quickack_mode`: up to `max` segments acknowledged at once, the ACK timeout at
    /// its minimum.
    pub fn enter_quickack_mode(&mut self, max: u32) {
        let q = (self.rcv_wnd / (2 * self.mss)) as u32;
        let q = if q == 0 { 2 } else { q }.min(max);
        self.quick = self.quick.max(q);
        self.ato = Some(jiffies(self.p.hz, self.p.hz as u64 / 25));
    }

    /// `tcp_grow_window`: room under the buffer's window grows rcv_ssthresh by two segments and
    /// asks for a quick ACK.
    fn grow_window(&mut self) {
        let room = self.clamp.saturating_sub(self.rcv_ssthresh);
        if room > 0 {
            self.rcv_ssthresh += room.min(2 * self.mss);
            self.quick |= 1;
        }
    }

    /// `tcp_event_data_recv`'s `ato` estimator and quick-ACK (re-)entry, in jiffies.
    fn on_in_order_data(&mut self, now: Time) {
        let ato_min = jiffies(self.p.hz, self.p.hz as u64 / 25);
        match self.ato {
            None => {
                self.incr_quickack();
                self.ato = Some(ato_min);
            }
            Some(ato) => {
                let m = self.jiffies_between(self.lrcvtime, now);
                // The receiver's RTO: it never sent data, so its RTO is the initial 1 s.
                let rto = Duration::from_secs(1);
                if m <= ato_min / 2 {
                    self.ato = Some(ato / 2 + ato_min / 2);
                } else if m < ato {
                    self.ato = Some((ato / 2 + m).min(rto));
                } else if m > rto {
                    self.incr_quickack();
                }
            }
        }
        self.lrcvtime = now;
    }

    /// `now - then` in whole jiffies (the kernel's `tcp_jiffies32` difference).
    fn jiffies_between(&self, then: Time, now: Time) -> Duration {
        let j = self.jiffy.as_nanos().max(1);
        let n = now.as_nanos() / j - then.as_nanos() / j;
        Duration::from_nanos(n * j)
    }

    /// `tcp_rcv_rtt_measure` (the window-based receiver RTT: the time to receive one window).
    fn measure_rcv_rtt(&mut self, now: Time, rcv_nxt: u64) {
        if let Some(t) = self.rtt_time {
            if rcv_nxt < self.rtt_seq {
                return;
            }
            let m = now.saturating_since(t);
            // tcp_rcv_rtt_update(win_dep = 1): keep the minimum.
            if self.rcv_rtt.is_none_or(|r| m < r) && m > Duration::ZERO {
                self.rcv_rtt = Some(m);
            }
        }
        self.rtt_seq = rcv_nxt + self.rcv_wnd;
        self.rtt_time = Some(now);
    }

    /// The application read up to `rcv_nxt`: dynamic right-sizing (`tcp_rcv_space_adjust`).
    fn space_adjust(&mut self, now: Time, rcv_nxt: u64, ooo_end: u64) {
        let Some(rtt) = self.rcv_rtt else { return };
        if now.saturating_since(self.space_time) < rtt {
            return;
        }
        let copied = rcv_nxt - self.space_seq;
        if copied > self.space {
            // tcp_rcvbuf_grow: DRS is one RTT late (× 2), and lets a slow-starting sender
            // double (the growth term).
            let old = self.space.max(1);
            let mut rcvwin = copied * 2;
            rcvwin += 2 * (rcvwin as u128 * (copied - old) as u128 / old as u128) as u64;
            rcvwin += ooo_end.saturating_sub(rcv_nxt);
            let cap = (self.p.rmem_max_bytes / 2)
                .min(self.p.window_clamp_bytes.unwrap_or(u64::MAX).max(self.mss));
            self.clamp = self.clamp.max(rcvwin.min(cap));
            self.space = copied;
        }
        self.space_seq = rcv_nxt;
        self.space_time = now;
    }

    /// A data segment arrived (the stack's part, before the application reads).
    pub fn on_segment(&mut self, now: Time, a: Arrival) -> AckAction {
        if a.duplicate {
            // tcp_data_queue: "A retransmit ... Force an immediate ack" (tcp_enter_quickack_mode).
            self.incr_quickack();
            self.ato = Some(jiffies(self.p.hz, self.p.hz as u64 / 25));
            return AckAction::Now;
        }
        if a.rcv_nxt > a.rcv_nxt_before {
            self.on_in_order_data(now);
            self.measure_rcv_rtt(now, a.rcv_nxt);
        }
        // Both tcp_event_data_recv and tcp_data_queue_ofo grow the window.
        self.grow_window();
        // __tcp_ack_snd_check. The application keeps up, so the window offered never lags.
        if a.rcv_nxt - self.rcv_wup > self.mss || self.quick > 0 || a.filled_last_hole {
            return AckAction::Now;
        }
        if !a.out_of_order {
            return AckAction::Delay(self.delayed_ack_deadline(now));
        }
        if self.p.comp_sack_nr == 0 || self.compressed >= self.p.comp_sack_nr {
            return AckAction::Now;
        }
        if self.compressed_at != a.rcv_nxt {
            self.compressed_at = a.rcv_nxt;
            self.dup_acks = 0;
        }
        // TCP_FASTRETRANS_THRESH duplicate ACKs go at once.
        if self.dup_acks < 3 {
            self.dup_acks += 1;
            return AckAction::Now;
        }
        self.compressed += 1;
        // 5 % of the RTT, at most tcp_comp_sack_delay_ns.
        let rtt = self.rcv_rtt.unwrap_or(Duration::from_secs(1));
        AckAction::Compress(now + (rtt / 20).min(self.p.comp_sack_delay))
    }

    /// `tcp_send_delayed_ack`: when the timer fires, from `ato`.
    fn delayed_ack_deadline(&self, now: Time) -> Time {
        let delack_min = jiffies(self.p.hz, self.p.hz as u64 / 25);
        let mut ato = self.ato.unwrap_or(delack_min);
        if ato > delack_min {
            // Not a ping-pong connection: HZ / 2, then the RTT (at least TCP_DELACK_MIN).
            let mut max_ato = jiffies(self.p.hz, self.p.hz as u64 / 2);
            if let Some(rtt) = self.rcv_rtt {
                max_ato = max_ato.min(rtt.max(delack_min));
            }
            ato = ato.min(max_ato);
        }
        // The timer runs in whole jiffies from the current one.
        let j = self.jiffy.as_nanos().max(1);
        let ticks = ato.as_nanos().div_ceil(j);
        Time::from_nanos((now.as_nanos() / j + ticks) * j)
    }

    /// The application read everything up to `rcv_nxt`; true when its read must send an ACK
    /// now (`__tcp_cleanup_rbuf`: it frees at least twice the window left to the sender).
    pub fn on_read(&mut self, now: Time, rcv_nxt: u64, ooo_end: u64, ack_pending: bool) -> bool {
        self.space_adjust(now, rcv_nxt, ooo_end);
        if !ack_pending {
            return false;
        }
        let left = (self.rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        2 * left <= self.clamp && self.select_window(rcv_nxt) >= 2 * left.max(1)
    }

    /// An ACK for `rcv_nxt` leaves: the window it advertises, in bytes (`tcp_select_window`,
    /// `tcp_event_ack_sent`).
    pub fn on_ack_sent(&mut self, rcv_nxt: u64, acked_data: bool) -> u64 {
        let w = self.select_window(rcv_nxt);
        self.rcv_wnd = w;
        self.rcv_wup = rcv_nxt;
        // tcp_dec_quickack_mode: one quick ACK used per ACK of new data.
        if acked_data && self.quick > 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = Some(jiffies(self.p.hz, self.p.hz as u64 / 25));
            }
        }
        self.compressed = 0;
        w
    }

    /// The window the receiver offers before any data (SYN-ACK), bytes.
    pub fn initial_window(&self) -> u64 {
        self.rcv_wnd
    }

    /// Quick ACKs left (for tests and traces).
    pub fn quick(&self) -> u32 {
        self.quick
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;

    fn arrival(before: u64, after: u64) -> Arrival {
        Arrival {
            rcv_nxt_before: before * MSS as u64,
            rcv_nxt: after * MSS as u64,
            duplicate: false,
            out_of_order: false,
            filled_last_hole: false,
            ooo_end: 0,
        }
    }

    fn ms(x: u64) -> Time {
        Time::ZERO + Duration::from_millis(x)
    }

    #[test]
    fn the_initial_window_is_ten_segments_and_grants_five_quick_acks() {
        let mut r = LinuxAcks::new(LinuxAckConfig::default(), MSS);
        // 10 × 1448 = 14480 bytes, below half of the 128 KiB buffer.
        assert_eq!(r.initial_window(), 14_480);
        // First segment: quick = 14480 / (2 × 1448) = 5; it also grows the window (quick |= 1).
        assert_eq!(r.on_segment(ms(0), arrival(0, 1)), AckAction::Now);
        assert_eq!(r.quick(), 5);
        // The ACK advertises rcv_ssthresh 14480 + 2 × 1448 = 17376, aligned up to the scale
        // unit 2^13 (256 MiB needs wscale 13): 24576, as Linux's receiver advertises.
        assert_eq!(r.on_ack_sent(MSS as u64, true), 24_576);
        assert_eq!(r.quick(), 4);
    }

    #[test]
    fn a_growing_window_acks_every_segment_and_a_full_one_every_second() {
        let p = LinuxAckConfig {
            // Buffer window 64 KiB - 1448 = 64088 bytes: rcv_ssthresh reaches it after
            // (64088 - 14480) / 2896 = 17.1 segments.
            ..LinuxAckConfig::default()
        };
        let mut r = LinuxAcks::new(p, MSS);
        let mut acks = Vec::new();
        for k in 0..40u64 {
            let t = ms(k);
            match r.on_segment(t, arrival(k, k + 1)) {
                AckAction::Now => {
                    r.on_ack_sent((k + 1) * MSS as u64, true);
                    acks.push(k + 1);
                }
                AckAction::Delay(_) => {}
                AckAction::Compress(_) => unreachable!(),
            }
        }
        // Segments 1..18 each grow the window (the 18th takes the last 376 bytes of room) and
        // set quick |= 1: with the 5 granted at the start, quick alternates 5, 4, 5, 4...; after
        // the 18th ACK 4 remain, spent on segments 19-22. Then every second segment.
        let expect: Vec<u64> = (1..=22).chain((24..=40).step_by(2)).collect();
        assert_eq!(acks, expect);
    }

    #[test]
    fn a_window_clamp_bounds_the_offered_window_and_its_growth() {
        // A clamp of 8 segments (11584 bytes) is below the initial 10: the first window is
        // the clamp, and no segment grows it (no quick |= 1 after the 4 quick ACKs granted
        // for 11584 / 2896); the offer stays at the clamp aligned up to the scale unit 8192.
        let p = LinuxAckConfig {
            window_clamp_bytes: Some(8 * MSS as u64),
            ..LinuxAckConfig::default()
        };
        let mut r = LinuxAcks::new(p, MSS);
        assert_eq!(r.initial_window(), 11_584);
        r.on_segment(ms(0), arrival(0, 1));
        assert_eq!(r.quick(), 4);
        for k in 1..200u64 {
            r.on_segment(ms(k), arrival(k, k + 1));
            r.on_read(ms(k), (k + 1) * MSS as u64, 0, false);
            assert_eq!(r.on_ack_sent((k + 1) * MSS as u64, true), 16_384);
        }
    }

    #[test]
    fn the_delayed_ack_timer_is_forty_milliseconds_in_jiffies() {
        let p = LinuxAckConfig {
            initial_rwnd_segments: 2,
            rmem_default_bytes: 4 * MSS as u64,
            ..LinuxAckConfig::default()
        };
        let mut r = LinuxAcks::new(p, MSS);
        // Buffer window = 2 × 1448 - 1448 -> at least 2 × 1448: no room, so no quick |= 1.
        // The first segment still grants quick ACKs: 2896 / 2896 = 1.
        assert_eq!(r.on_segment(ms(0), arrival(0, 1)), AckAction::Now);
        r.on_ack_sent(MSS as u64, true);
        assert_eq!(r.quick(), 0);
        // The next lone segment at 1 ms waits for ato = TCP_ATO_MIN = HZ/25 = 10 jiffies of
        // 4 ms, counted from the current jiffy (0): 40 ms. ato was (40/2 + 20) = 40 ms.
        assert_eq!(r.on_segment(ms(1), arrival(1, 2)), AckAction::Delay(ms(40)));
    }

    #[test]
    fn out_of_order_segments_compress_after_three_duplicate_acks() {
        let p = LinuxAckConfig {
            initial_rwnd_segments: 2,
            rmem_default_bytes: 4 * MSS as u64,
            ..LinuxAckConfig::default()
        };
        let mut r = LinuxAcks::new(p, MSS);
        r.on_segment(ms(0), arrival(0, 1));
        r.on_ack_sent(MSS as u64, true);
        let ooo = Arrival {
            out_of_order: true,
            ..arrival(1, 1)
        };
        let actions: Vec<_> = (0..5).map(|k| r.on_segment(ms(2 + k), ooo)).collect();
        assert_eq!(&actions[..3], &[AckAction::Now; 3]);
        // No receiver RTT yet: 5 % of 1 s = 50 ms, capped at 1 ms.
        assert_eq!(
            actions[3],
            AckAction::Compress(ms(5) + Duration::from_millis(1))
        );
        // A duplicate (retransmitted old data) re-enters quick-ACK mode: rcv_wnd (2896 aligned
        // up to 8192) / (2 × 1448) = 2 quick ACKs.
        let dup = Arrival {
            duplicate: true,
            ..arrival(1, 1)
        };
        assert_eq!(r.on_segment(ms(10), dup), AckAction::Now);
        assert_eq!(r.quick(), 2);
    }
}
