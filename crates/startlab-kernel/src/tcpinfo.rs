//! `TCP_INFO`: the kernel's own counters of a connection (include/uapi/linux/tcp.h,
//! `struct tcp_info`, as of Linux 6.7 and later, which added the RTO totals).

use std::io;
use std::os::fd::AsRawFd;

/// `struct tcp_info` up to `tcpi_total_rto_time`. Fields the kernel does not fill (an older
/// kernel returns fewer bytes) stay zero; [`tcp_info`] says how many bytes it filled.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    pub state: u8,
    /// `TCP_CA_Open` 0, `Disorder` 1, `CWR` 2, `Recovery` 3, `Loss` 4.
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    /// `snd_wscale : 4, rcv_wscale : 4`.
    pub wscale: u8,
    /// `delivery_rate_app_limited : 1, fastopen_client_fail : 2`.
    pub flags: u8,
    /// µs.
    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    /// Segments.
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    /// Smoothed RTT and its variance, µs.
    pub rtt: u32,
    pub rttvar: u32,
    /// Segments; `TCP_INFINITE_SSTHRESH` while unlimited.
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt: u32,
    pub rcv_space: u32,
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u32,
    /// Bytes per second.
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    /// µs.
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    /// Bytes per second.
    pub delivery_rate: u64,
    /// µs busy sending, limited by the receive window, limited by the send buffer.
    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,
    pub rcv_ooopack: u32,
    pub snd_wnd: u32,
    pub rcv_wnd: u32,
    pub rehash: u32,
    /// Retransmission timeouts, SYN's included (Linux 6.7+).
    pub total_rto: u16,
    pub total_rto_recoveries: u16,
    /// ms.
    pub total_rto_time: u32,
}

/// The connection's `TCP_INFO` and how many bytes of it the kernel filled.
pub fn tcp_info(socket: &impl AsRawFd) -> io::Result<(TcpInfo, usize)> {
    let mut info = TcpInfo::default();
    let mut len = std::mem::size_of::<TcpInfo>() as libc::socklen_t;
    // SAFETY: `info` is a plain-old-data buffer of `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut TcpInfo).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((info, len as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_matches_the_kernel_header() {
        // Offsets of include/uapi/linux/tcp.h: tcpi_rto at 8, tcpi_total_retrans at 100,
        // tcpi_pacing_rate at 104 (8-aligned), tcpi_delivery_rate at 160, tcpi_total_rto at 240.
        let base = TcpInfo::default();
        let at = |f: *const u8| f as usize - (&base as *const TcpInfo as usize);
        assert_eq!(at((&base.rto as *const u32).cast()), 8);
        assert_eq!(at((&base.total_retrans as *const u32).cast()), 100);
        assert_eq!(at((&base.pacing_rate as *const u64).cast()), 104);
        assert_eq!(at((&base.delivery_rate as *const u64).cast()), 160);
        assert_eq!(at((&base.total_rto as *const u16).cast()), 240);
        assert_eq!(std::mem::size_of::<TcpInfo>(), 248);
    }
}
