//! A namespace's TCP sockets as `ss -ti` sees them: `NETLINK_SOCK_DIAG` dumps
//! (include/uapi/linux/inet_diag.h) with each socket's `tcp_info` and its congestion control's
//! own report — for BBR, `struct tcp_bbr_info`: the bandwidth estimate, min RTT and gains
//! (`bbr_get_info`). The tables' model columns of a kernel BBR flow come from these readings.

use crate::sampler::Sampler;
use crate::tcpinfo::TcpInfo;
use crate::traffic::{monotonic_ns, Host};
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `SOCK_DIAG_BY_FAMILY`.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// Attributes of an `inet_diag_msg` (`enum inet_diag_attr`).
const INET_DIAG_INFO: u16 = 2;
const INET_DIAG_VEGASINFO: u16 = 3;
const INET_DIAG_CONG: u16 = 4;
const INET_DIAG_BBRINFO: u16 = 16;
/// `struct nlmsghdr` and `struct inet_diag_msg` sizes.
const NLMSG_HDR: usize = 16;
const DIAG_MSG: usize = 72;

/// `struct tcp_bbr_info` in the units BBR keeps.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BbrInfo {
    /// Bandwidth estimate, payload bytes per second.
    pub bw_bytes_per_s: u64,
    pub min_rtt_us: u32,
    /// Gains in 1/256.
    pub pacing_gain: u32,
    pub cwnd_gain: u32,
}

impl BbrInfo {
    /// BBR's mode, which `bbr_update_gains` sets the gains from: Startup 739/739, Drain 88/739,
    /// ProbeBW (any pacing gain)/512, ProbeRTT 256/256. Before its first bandwidth sample the
    /// gains are not yet BBR's (`bbr_main` has not run): no mode.
    pub fn mode(&self) -> Option<&'static str> {
        if self.bw_bytes_per_s == 0 {
            return None;
        }
        match (self.pacing_gain, self.cwnd_gain) {
            (739, 739) => Some("startup"),
            (88, 739) => Some("drain"),
            (_, 512) => Some("probe-bw"),
            (256, 256) => Some("probe-rtt"),
            _ => None,
        }
    }
}

/// One socket of one dump.
#[derive(Clone, Debug, PartialEq)]
pub struct DiagReading {
    /// When the dump was asked for (monotonic clock, ns; the trace clock).
    pub time_ns: u64,
    pub saddr: Ipv4Addr,
    pub sport: u16,
    pub daddr: Ipv4Addr,
    pub dport: u16,
    /// `tcpi_pacing_rate` and `tcpi_delivery_rate`, payload bytes per second.
    pub pacing_rate: u64,
    pub delivery_rate: u64,
    pub bbr: Option<BbrInfo>,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// The request: every IPv4 TCP socket, with `tcp_info` and the controller's report
/// (`bbr_get_info` answers the Vegas bit as well as its own, which does not fit `idiag_ext`).
pub fn request(seq: u32) -> Vec<u8> {
    let mut m = Vec::with_capacity(NLMSG_HDR + 56);
    let len = (NLMSG_HDR + 56) as u32;
    m.extend_from_slice(&len.to_ne_bytes());
    m.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    m.extend_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16).to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    // struct inet_diag_req_v2: family, protocol, ext, pad, states, then a zeroed sockid.
    m.push(libc::AF_INET as u8);
    m.push(libc::IPPROTO_TCP as u8);
    m.push(
        (1 << (INET_DIAG_INFO - 1))
            | (1 << (INET_DIAG_VEGASINFO - 1))
            | (1 << (INET_DIAG_CONG - 1)),
    );
    m.push(0);
    m.extend_from_slice(&u32::MAX.to_ne_bytes());
    m.resize(NLMSG_HDR + 56, 0);
    m
}

/// What one `recv` of a dump holds: its sockets, and whether the dump is done
/// (`NLMSG_DONE`). A message that does not fit is an error.
pub fn parse(buf: &[u8], time_ns: u64) -> io::Result<(Vec<DiagReading>, bool)> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("sock_diag: {what}"));
    let mut out = Vec::new();
    let mut at = 0;
    while at + NLMSG_HDR <= buf.len() {
        let len = u32_at(buf, at) as usize;
        let kind = u16_at(buf, at + 4);
        if len < NLMSG_HDR || at + len > buf.len() {
            return Err(bad("truncated message"));
        }
        match kind as i32 {
            libc::NLMSG_DONE => return Ok((out, true)),
            libc::NLMSG_ERROR => {
                let errno = if len >= NLMSG_HDR + 4 {
                    -(u32_at(buf, at + NLMSG_HDR) as i32)
                } else {
                    0
                };
                return Err(io::Error::from_raw_os_error(errno));
            }
            _ if kind == SOCK_DIAG_BY_FAMILY => {
                let msg = &buf[at + NLMSG_HDR..at + len];
                if msg.len() < DIAG_MSG {
                    return Err(bad("short inet_diag_msg"));
                }
                // struct inet_diag_sockid at 4: sport, dport (big-endian), src[4], dst[4].
                let be16 = |o: usize| u16::from_be_bytes([msg[o], msg[o + 1]]);
                let addr = |o: usize| Ipv4Addr::new(msg[o], msg[o + 1], msg[o + 2], msg[o + 3]);
                let mut r = DiagReading {
                    time_ns,
                    sport: be16(4),
                    dport: be16(6),
                    saddr: addr(8),
                    daddr: addr(24),
                    pacing_rate: 0,
                    delivery_rate: 0,
                    bbr: None,
                };
                let mut a = DIAG_MSG;
                while a + 4 <= msg.len() {
                    let alen = u16_at(msg, a) as usize;
                    let atype = u16_at(msg, a + 2) & 0x3fff;
                    if alen < 4 || a + alen > msg.len() {
                        return Err(bad("truncated attribute"));
                    }
                    let data = &msg[a + 4..a + alen];
                    match atype {
                        INET_DIAG_INFO => {
                            let mut info = TcpInfo::default();
                            let n = data.len().min(std::mem::size_of::<TcpInfo>());
                            // SAFETY: TcpInfo is plain old data; at most its size is copied.
                            unsafe {
                                std::ptr::copy_nonoverlapping(
                                    data.as_ptr(),
                                    (&mut info as *mut TcpInfo).cast::<u8>(),
                                    n,
                                )
                            };
                            r.pacing_rate = info.pacing_rate;
                            r.delivery_rate = info.delivery_rate;
                        }
                        INET_DIAG_BBRINFO if data.len() >= 20 => {
                            let lo = u32_at(data, 0) as u64;
                            let hi = u32_at(data, 4) as u64;
                            r.bbr = Some(BbrInfo {
                                bw_bytes_per_s: hi << 32 | lo,
                                min_rtt_us: u32_at(data, 8),
                                pacing_gain: u32_at(data, 12),
                                cwnd_gain: u32_at(data, 16),
                            });
                        }
                        _ => {}
                    }
                    a += alen.div_ceil(4) * 4;
                }
                out.push(r);
            }
            _ => {}
        }
        at += len.div_ceil(4) * 4;
    }
    Ok((out, false))
}

/// A `NETLINK_SOCK_DIAG` socket of the calling thread's namespace.
fn open() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the descriptor is owned from here on.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is not owned elsewhere.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One dump of the namespace's IPv4 TCP sockets.
fn dump(fd: &OwnedFd, seq: u32, buf: &mut [u8]) -> io::Result<Vec<DiagReading>> {
    let time_ns = monotonic_ns();
    let req = request(seq);
    // SAFETY: sending a buffer of its own length.
    if unsafe { libc::send(fd.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    loop {
        // SAFETY: receiving into a buffer of its own length.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let (mut readings, done) = parse(&buf[..n as usize], time_ns)?;
        out.append(&mut readings);
        if done || n == 0 {
            return Ok(out);
        }
    }
}

/// Dumps a namespace's sockets every `period_ns` through the run, keeping the readings of the
/// sockets `keep` accepts (a dump costs a netlink round trip per few dozen sockets).
pub fn sample(
    host: &Host,
    period_ns: u64,
    keep: impl Fn(&DiagReading) -> bool + Send + 'static,
) -> Sampler<DiagReading> {
    let mut seq = 0u32;
    Sampler::start(
        host,
        period_ns,
        || Ok((open()?, vec![0u8; 1 << 16])),
        move |(fd, buf), readings| {
            seq = seq.wrapping_add(1);
            readings.extend(dump(fd, seq, buf)?.into_iter().filter(|r| keep(r)));
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dump as the kernel writes it: one socket 198.18.0.1:40000 -> 198.18.1.1:5201 with
    /// tcp_info (pacing 12 500 000 B/s, delivery 11 000 000 B/s) and BBR's report, then DONE.
    fn message() -> Vec<u8> {
        let mut diag = vec![0u8; DIAG_MSG];
        diag[0] = libc::AF_INET as u8;
        diag[1] = 1; // TCP_ESTABLISHED
        diag[4..6].copy_from_slice(&40000u16.to_be_bytes());
        diag[6..8].copy_from_slice(&5201u16.to_be_bytes());
        diag[8..12].copy_from_slice(&[198, 18, 0, 1]);
        diag[24..28].copy_from_slice(&[198, 18, 1, 1]);
        let info = TcpInfo {
            pacing_rate: 12_500_000,
            delivery_rate: 11_000_000,
            ..TcpInfo::default()
        };
        let bytes = unsafe {
            std::slice::from_raw_parts(
                (&info as *const TcpInfo).cast::<u8>(),
                std::mem::size_of::<TcpInfo>(),
            )
        };
        let mut attr = |kind: u16, data: &[u8]| {
            diag.extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
            diag.extend_from_slice(&kind.to_ne_bytes());
            diag.extend_from_slice(data);
            while !diag.len().is_multiple_of(4) {
                diag.push(0);
            }
        };
        attr(INET_DIAG_INFO, bytes);
        attr(INET_DIAG_CONG, b"bbr\0");
        // bbr_bw_lo, bbr_bw_hi, bbr_min_rtt, bbr_pacing_gain, bbr_cwnd_gain.
        let bbr: Vec<u8> = [7u32, 1, 60_000, 739, 739]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        attr(INET_DIAG_BBRINFO, &bbr);
        let mut m = Vec::new();
        let header = |m: &mut Vec<u8>, kind: u16, body: &[u8]| {
            m.extend_from_slice(&((NLMSG_HDR + body.len()) as u32).to_ne_bytes());
            m.extend_from_slice(&kind.to_ne_bytes());
            m.extend_from_slice(&[0; 10]);
            m.extend_from_slice(body);
        };
        header(&mut m, SOCK_DIAG_BY_FAMILY, &diag);
        header(&mut m, libc::NLMSG_DONE as u16, &0u32.to_ne_bytes());
        m
    }

    #[test]
    fn a_dump_gives_each_sockets_addresses_rates_and_bbr_report() {
        let (r, done) = parse(&message(), 42).unwrap();
        assert!(done);
        assert_eq!(r.len(), 1);
        let r = &r[0];
        assert_eq!((r.saddr, r.sport), (Ipv4Addr::new(198, 18, 0, 1), 40000));
        assert_eq!((r.daddr, r.dport), (Ipv4Addr::new(198, 18, 1, 1), 5201));
        assert_eq!((r.pacing_rate, r.delivery_rate), (12_500_000, 11_000_000));
        let bbr = r.bbr.unwrap();
        assert_eq!(bbr.bw_bytes_per_s, (1 << 32) | 7);
        assert_eq!((bbr.min_rtt_us, bbr.mode()), (60_000, Some("startup")));
    }

    #[test]
    fn truncated_dumps_are_refused() {
        let m = message();
        for cut in [NLMSG_HDR + 10, NLMSG_HDR + DIAG_MSG + 2] {
            let mut short = m[..cut].to_vec();
            // The header claims more than there is.
            short[0..4].copy_from_slice(&(m.len() as u32).to_ne_bytes());
            assert!(parse(&short, 0).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn gains_name_bbrs_mode() {
        let info = |p, c| BbrInfo {
            bw_bytes_per_s: 1,
            min_rtt_us: 0,
            pacing_gain: p,
            cwnd_gain: c,
        };
        assert_eq!(info(88, 739).mode(), Some("drain"));
        assert_eq!(info(320, 512).mode(), Some("probe-bw"));
        assert_eq!(info(256, 256).mode(), Some("probe-rtt"));
        assert_eq!(info(300, 300).mode(), None);
        let before_any_sample = BbrInfo {
            bw_bytes_per_s: 0,
            ..info(256, 256)
        };
        assert_eq!(before_any_sample.mode(), None);
    }
}
