//! The kernel memory a congestion control reads, as the simulator lays it out: one image for the
//! socket (`struct sock`, `inet_connection_sock` and `tcp_sock`, which in Linux are one object
//! seen through three types), one for `struct ack_sample` and one for `struct rate_sample`.
//!
//! A program's field accesses are CO-RE relocations (`.BTF.ext`): each names a root type and a
//! path of members in the program's own BTF. [`field`] resolves them against this table, which
//! plays the part of the kernel's BTF: fixed here, so results do not depend on the host. A field
//! not in the table is refused by name before a run. Writes are allowed only where Linux's
//! verifier allows them in a congestion control (`bpf_tcp_ca_btf_struct_access`).

/// Which image a field lives in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Image {
    Sock,
    AckSample,
    RateSample,
    /// A member of a struct inside the socket, relative to that struct (a program that takes
    /// `&tp->rx_opt` and reads through the pointer).
    Nested,
}

/// One field the simulator provides.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub root: &'static str,
    /// Member path from the root type (`snd_cwnd`, `__sk_common.skc_daddr`, `rtt_min.s[0].v`).
    pub path: &'static str,
    pub image: Image,
    pub offset: u32,
    /// Bytes.
    pub size: u32,
    /// For a bit field: its width in bits (at bit 0 of its byte); 0 otherwise.
    pub bits: u32,
    pub signed: bool,
    /// A congestion control may write it.
    pub writable: bool,
}

const fn f(root: &'static str, path: &'static str, image: Image, offset: u32, size: u32) -> Field {
    Field {
        root,
        path,
        image,
        offset,
        size,
        bits: 0,
        signed: false,
        writable: false,
    }
}

const fn w(mut x: Field) -> Field {
    x.writable = true;
    x
}

const fn signed(mut x: Field) -> Field {
    x.signed = true;
    x
}

const fn bits(mut x: Field, n: u32) -> Field {
    x.bits = n;
    x
}

use Image::{AckSample, Nested, RateSample, Sock};

/// Bytes of the socket image.
pub const SOCK_BYTES: usize = 512;
/// Where `icsk_ca_priv` (13 u64, the controller's private area) lies in it.
pub const CA_PRIV_OFFSET: u32 = 384;
pub const CA_PRIV_BYTES: u32 = 104;
pub const ACK_SAMPLE_BYTES: usize = 16;
pub const RATE_SAMPLE_BYTES: usize = 96;

/// Every field the simulator provides.
pub const FIELDS: &[Field] = &[
    // struct sock and its sock_common
    f("sock", "__sk_common.skc_daddr", Sock, 0, 4),
    f("sock", "__sk_common.skc_rcv_saddr", Sock, 4, 4),
    f("sock", "__sk_common.skc_dport", Sock, 8, 2),
    f("sock", "__sk_common.skc_num", Sock, 10, 2),
    f("sock", "__sk_common.skc_state", Sock, 12, 1),
    w(f("sock", "sk_pacing_rate", Sock, 16, 8)),
    f("sock", "sk_max_pacing_rate", Sock, 24, 8),
    w(f("sock", "sk_pacing_status", Sock, 32, 4)),
    // struct inet_connection_sock
    bits(f("inet_connection_sock", "icsk_ca_state", Sock, 36, 1), 5),
    w(f(
        "inet_connection_sock",
        "icsk_ca_priv",
        Sock,
        CA_PRIV_OFFSET,
        CA_PRIV_BYTES,
    )),
    // struct tcp_sock
    w(f("tcp_sock", "snd_cwnd", Sock, 40, 4)),
    w(f("tcp_sock", "snd_cwnd_cnt", Sock, 44, 4)),
    f("tcp_sock", "snd_cwnd_clamp", Sock, 48, 4),
    w(f("tcp_sock", "snd_cwnd_stamp", Sock, 52, 4)),
    w(f("tcp_sock", "snd_ssthresh", Sock, 56, 4)),
    f("tcp_sock", "prior_cwnd", Sock, 60, 4),
    f("tcp_sock", "mss_cache", Sock, 64, 4),
    f("tcp_sock", "srtt_us", Sock, 68, 4),
    f("tcp_sock", "mdev_us", Sock, 72, 4),
    f("tcp_sock", "rtt_min.s[0].t", Sock, 76, 4),
    f("tcp_sock", "rtt_min.s[0].v", Sock, 80, 4),
    f("tcp_sock", "snd_una", Sock, 100, 4),
    f("tcp_sock", "snd_nxt", Sock, 104, 4),
    f("tcp_sock", "packets_out", Sock, 108, 4),
    f("tcp_sock", "sacked_out", Sock, 112, 4),
    f("tcp_sock", "lost_out", Sock, 116, 4),
    f("tcp_sock", "retrans_out", Sock, 120, 4),
    f("tcp_sock", "max_packets_out", Sock, 124, 4),
    f("tcp_sock", "delivered", Sock, 128, 4),
    f("tcp_sock", "lost", Sock, 132, 4),
    w(f("tcp_sock", "app_limited", Sock, 136, 4)),
    f("tcp_sock", "tcp_mstamp", Sock, 144, 8),
    f("tcp_sock", "tcp_clock_cache", Sock, 152, 8),
    f("tcp_sock", "total_retrans", Sock, 160, 4),
    f("tcp_sock", "data_segs_out", Sock, 164, 4),
    f("tcp_sock", "snd_wnd", Sock, 168, 4),
    f("tcp_sock", "rcv_wnd", Sock, 172, 4),
    bits(f("tcp_sock", "is_cwnd_limited", Sock, 176, 1), 1),
    f("tcp_sock", "undo_marker", Sock, 180, 4),
    f("tcp_sock", "rx_opt", Sock, 184, 4),
    bits(f("tcp_sock", "rx_opt.sack_ok", Sock, 184, 1), 3),
    bits(f("tcp_options_received", "sack_ok", Nested, 0, 1), 3),
    f("sock", "__sk_common", Sock, 0, 16),
    f("sock_common", "skc_daddr", Nested, 0, 4),
    f("sock_common", "skc_rcv_saddr", Nested, 4, 4),
    f("sock_common", "skc_dport", Nested, 8, 2),
    f("sock_common", "skc_num", Nested, 10, 2),
    f("sock_common", "skc_state", Nested, 12, 1),
    f("sock_common", "skc_family", Nested, 14, 2),
    f("tcp_sock", "tcp_wstamp_ns", Sock, 192, 8),
    f("tcp_sock", "delivered_mstamp", Sock, 200, 8),
    w(f("tcp_sock", "ecn_flags", Sock, 208, 1)),
    f("tcp_sock", "delivered_ce", Sock, 212, 4),
    f("tcp_sock", "rcv_nxt", Sock, 216, 4),
    w(f("inet_connection_sock", "icsk_ack.pending", Sock, 220, 1)),
    f("tcp_sock", "lsndtime", Sock, 224, 4),
    f("tcp_sock", "prr_delivered", Sock, 228, 4),
    f("inet_connection_sock", "icsk_rto", Sock, 232, 4),
    f("inet_connection_sock", "icsk_backoff", Sock, 236, 1),
    f("sock", "sk_gso_max_size", Sock, 240, 4),
    f("tcp_sock", "bytes_acked", Sock, 248, 8),
    f("tcp_sock", "bytes_sent", Sock, 256, 8),
    f("tcp_sock", "bytes_retrans", Sock, 264, 8),
    f("tcp_sock", "reordering", Sock, 272, 4),
    f("tcp_sock", "rate_delivered", Sock, 276, 4),
    f("tcp_sock", "rate_interval_us", Sock, 280, 4),
    bits(f("tcp_sock", "rate_app_limited", Sock, 284, 1), 1),
    f("tcp_sock", "high_seq", Sock, 288, 4),
    f("tcp_sock", "rttvar_us", Sock, 292, 4),
    f("tcp_sock", "mdev_max_us", Sock, 296, 4),
    f("tcp_sock", "segs_in", Sock, 300, 4),
    f("tcp_sock", "segs_out", Sock, 304, 4),
    f("tcp_sock", "data_segs_in", Sock, 308, 4),
    f("tcp_sock", "tcp_header_len", Sock, 312, 2),
    f("inet_connection_sock", "icsk_pmtu_cookie", Sock, 316, 4),
    f("inet_connection_sock", "icsk_ext_hdr_len", Sock, 320, 2),
    f("sock", "__sk_common.skc_family", Sock, 14, 2),
    f("sock", "sk_protocol", Sock, 324, 2),
    f("sock", "sk_type", Sock, 326, 2),
    f("sock", "sk_pacing_shift", Sock, 328, 1),
    f("sock", "sk_gso_max_segs", Sock, 330, 2),
    f("sock", "sk_mark", Sock, 332, 4),
    f("sock", "sk_priority", Sock, 336, 4),
    f("inet_sock", "inet_saddr", Sock, 340, 4),
    f("inet_sock", "inet_sport", Sock, 344, 2),
    f("tcp_sock", "prior_ssthresh", Sock, 348, 4),
    f("tcp_sock", "rcv_tstamp", Sock, 352, 4),
    signed(f("tcp_sock", "undo_retrans", Sock, 356, 4)),
    f("tcp_sock", "retrans_stamp", Sock, 360, 4),
    f("inet_connection_sock", "icsk_retransmits", Sock, 364, 1),
    f("tcp_sock", "total_rto", Sock, 366, 2),
    f("tcp_sock", "total_rto_recoveries", Sock, 368, 2),
    f("tcp_sock", "advmss", Sock, 370, 2),
    f("tcp_sock", "tlp_high_seq", Sock, 372, 4),
    bits(f("tcp_sock", "tlp_retrans", Sock, 376, 1), 1),
    f("tcp_sock", "rtt_min", Sock, 76, 24),
    f("minmax", "s[0].t", Nested, 0, 4),
    f("minmax", "s[0].v", Nested, 4, 4),
    // struct ack_sample (pkts_acked)
    f("ack_sample", "pkts_acked", AckSample, 0, 4),
    signed(f("ack_sample", "rtt_us", AckSample, 4, 4)),
    f("ack_sample", "in_flight", AckSample, 8, 4),
    // struct rate_sample (cong_control)
    f("rate_sample", "prior_mstamp", RateSample, 0, 8),
    f("rate_sample", "prior_delivered", RateSample, 8, 4),
    f("rate_sample", "prior_delivered_ce", RateSample, 12, 4),
    signed(f("rate_sample", "delivered", RateSample, 16, 4)),
    signed(f("rate_sample", "delivered_ce", RateSample, 20, 4)),
    signed(f("rate_sample", "interval_us", RateSample, 24, 8)),
    f("rate_sample", "snd_interval_us", RateSample, 32, 4),
    f("rate_sample", "rcv_interval_us", RateSample, 36, 4),
    signed(f("rate_sample", "rtt_us", RateSample, 40, 8)),
    signed(f("rate_sample", "losses", RateSample, 48, 4)),
    f("rate_sample", "acked_sacked", RateSample, 52, 4),
    f("rate_sample", "prior_in_flight", RateSample, 56, 4),
    f("rate_sample", "last_end_seq", RateSample, 60, 4),
    f("rate_sample", "is_app_limited", RateSample, 64, 1),
    f("rate_sample", "is_retrans", RateSample, 65, 1),
    f("rate_sample", "is_ack_delayed", RateSample, 66, 1),
];

/// In Linux a `tcp_sock` begins with its `inet_connection_sock`, which begins with an
/// `inet_sock`, which begins with its `sock`: a path through those is the same field.
const EMBEDDED: &[(&str, &str, &str)] = &[
    ("tcp_sock", "inet_conn.", "inet_connection_sock"),
    ("inet_connection_sock", "icsk_inet.", "inet_sock"),
    ("inet_sock", "sk.", "sock"),
];

/// The field at `path` from `root`, if the simulator provides it.
pub fn field(root: &str, path: &str) -> Option<&'static Field> {
    let (mut root, mut path) = (root.to_string(), path.to_string());
    while let Some((_, prefix, inner)) = EMBEDDED
        .iter()
        .find(|(r, p, _)| *r == root && path.starts_with(p))
    {
        path = path[prefix.len()..].to_string();
        root = inner.to_string();
    }
    // A tcp_sock or inet_connection_sock pointer sees the sock's fields at the same place.
    FIELDS
        .iter()
        .find(|f| f.path == path && (f.root == root || reaches(&root, f.root)))
}

/// Whether `outer` contains `inner` at its start (tcp_sock ⊃ inet_connection_sock ⊃ sock).
fn reaches(outer: &str, inner: &str) -> bool {
    let order = ["tcp_sock", "inet_connection_sock", "inet_sock", "sock"];
    match (
        order.iter().position(|r| *r == outer),
        order.iter().position(|r| *r == inner),
    ) {
        (Some(o), Some(i)) => o < i,
        _ => false,
    }
}

/// The field `root.path` for the simulator's own writes (panics on a name not in the table:
/// a programming error of the caller). Looked up by name; see [`sock`] for the fields written
/// on every hook.
pub fn known(root: &str, path: &str) -> &'static Field {
    field(root, path).unwrap_or_else(|| panic!("{root}.{path} is not in the layout"))
}

/// The fields the simulator fills and reads on every hook, looked up once.
pub struct SockFields {
    pub snd_cwnd: &'static Field,
    pub snd_cwnd_cnt: &'static Field,
    pub snd_ssthresh: &'static Field,
    pub snd_cwnd_clamp: &'static Field,
    pub prior_cwnd: &'static Field,
    pub mss_cache: &'static Field,
    pub srtt_us: &'static Field,
    pub min_rtt_us: &'static Field,
    pub snd_una: &'static Field,
    pub snd_nxt: &'static Field,
    pub packets_out: &'static Field,
    pub sacked_out: &'static Field,
    pub lost_out: &'static Field,
    pub retrans_out: &'static Field,
    pub total_retrans: &'static Field,
    pub data_segs_out: &'static Field,
    pub bytes_acked: &'static Field,
    pub bytes_sent: &'static Field,
    pub bytes_retrans: &'static Field,
    pub reordering: &'static Field,
    pub rate_delivered: &'static Field,
    pub rate_interval_us: &'static Field,
    pub rate_app_limited: &'static Field,
    pub high_seq: &'static Field,
    pub prr_delivered: &'static Field,
    pub mdev_us: &'static Field,
    pub icsk_rto: &'static Field,
    pub icsk_backoff: &'static Field,
    pub sk_gso_max_size: &'static Field,
    pub skc_rcv_saddr: &'static Field,
    pub skc_daddr: &'static Field,
    pub skc_num: &'static Field,
    pub skc_dport: &'static Field,
    pub max_packets_out: &'static Field,
    pub is_cwnd_limited: &'static Field,
    pub lsndtime: &'static Field,
    pub delivered: &'static Field,
    pub delivered_ce: &'static Field,
    pub ecn_flags: &'static Field,
    pub tcp_mstamp: &'static Field,
    pub tcp_clock_cache: &'static Field,
    pub tcp_wstamp_ns: &'static Field,
    pub delivered_mstamp: &'static Field,
    pub lost: &'static Field,
    pub app_limited: &'static Field,
    pub sk_pacing_rate: &'static Field,
    pub sk_max_pacing_rate: &'static Field,
    pub sk_pacing_status: &'static Field,
    pub skc_state: &'static Field,
    pub skc_family: &'static Field,
    pub rttvar_us: &'static Field,
    pub mdev_max_us: &'static Field,
    pub segs_in: &'static Field,
    pub segs_out: &'static Field,
    pub tcp_header_len: &'static Field,
    pub icsk_pmtu_cookie: &'static Field,
    pub sk_protocol: &'static Field,
    pub sk_type: &'static Field,
    pub sk_pacing_shift: &'static Field,
    pub sk_gso_max_segs: &'static Field,
    pub inet_saddr: &'static Field,
    pub inet_sport: &'static Field,
    pub prior_ssthresh: &'static Field,
    pub rcv_tstamp: &'static Field,
    pub undo_retrans: &'static Field,
    pub retrans_stamp: &'static Field,
    pub icsk_retransmits: &'static Field,
    pub total_rto: &'static Field,
    pub total_rto_recoveries: &'static Field,
    pub advmss: &'static Field,
    pub tlp_high_seq: &'static Field,
    pub tlp_retrans: &'static Field,
    pub snd_wnd: &'static Field,
    pub undo_marker: &'static Field,
    pub sack_ok: &'static Field,
    pub ca_state: &'static Field,
    pub pkts_acked: &'static Field,
    pub rtt_us: &'static Field,
    pub in_flight: &'static Field,
    pub rs_prior_mstamp: &'static Field,
    pub rs_prior_delivered: &'static Field,
    pub rs_prior_delivered_ce: &'static Field,
    pub rs_delivered_ce: &'static Field,
    pub rs_delivered: &'static Field,
    pub rs_interval_us: &'static Field,
    pub rs_snd_interval_us: &'static Field,
    pub rs_rcv_interval_us: &'static Field,
    pub rs_losses: &'static Field,
    pub rs_is_app_limited: &'static Field,
    pub rs_is_retrans: &'static Field,
    pub rs_rtt_us: &'static Field,
    pub rs_acked_sacked: &'static Field,
    pub rs_prior_in_flight: &'static Field,
}

/// See [`SockFields`].
pub fn sock() -> &'static SockFields {
    static FIELDS: std::sync::OnceLock<SockFields> = std::sync::OnceLock::new();
    FIELDS.get_or_init(|| {
        let t = |p| known("tcp_sock", p);
        SockFields {
            snd_cwnd: t("snd_cwnd"),
            snd_cwnd_cnt: t("snd_cwnd_cnt"),
            snd_ssthresh: t("snd_ssthresh"),
            snd_cwnd_clamp: t("snd_cwnd_clamp"),
            prior_cwnd: t("prior_cwnd"),
            mss_cache: t("mss_cache"),
            srtt_us: t("srtt_us"),
            min_rtt_us: t("rtt_min.s[0].v"),
            snd_una: t("snd_una"),
            snd_nxt: t("snd_nxt"),
            packets_out: t("packets_out"),
            sacked_out: t("sacked_out"),
            lost_out: t("lost_out"),
            retrans_out: t("retrans_out"),
            total_retrans: t("total_retrans"),
            data_segs_out: t("data_segs_out"),
            bytes_acked: t("bytes_acked"),
            bytes_sent: t("bytes_sent"),
            bytes_retrans: t("bytes_retrans"),
            reordering: t("reordering"),
            rate_delivered: t("rate_delivered"),
            rate_interval_us: t("rate_interval_us"),
            rate_app_limited: t("rate_app_limited"),
            high_seq: t("high_seq"),
            prr_delivered: t("prr_delivered"),
            mdev_us: t("mdev_us"),
            icsk_rto: known("inet_connection_sock", "icsk_rto"),
            icsk_backoff: known("inet_connection_sock", "icsk_backoff"),
            sk_gso_max_size: known("sock", "sk_gso_max_size"),
            skc_rcv_saddr: known("sock", "__sk_common.skc_rcv_saddr"),
            skc_daddr: known("sock", "__sk_common.skc_daddr"),
            skc_num: known("sock", "__sk_common.skc_num"),
            skc_dport: known("sock", "__sk_common.skc_dport"),
            max_packets_out: t("max_packets_out"),
            is_cwnd_limited: t("is_cwnd_limited"),
            lsndtime: t("lsndtime"),
            delivered: t("delivered"),
            delivered_ce: t("delivered_ce"),
            ecn_flags: t("ecn_flags"),
            tcp_mstamp: t("tcp_mstamp"),
            tcp_clock_cache: t("tcp_clock_cache"),
            tcp_wstamp_ns: t("tcp_wstamp_ns"),
            delivered_mstamp: t("delivered_mstamp"),
            lost: t("lost"),
            app_limited: t("app_limited"),
            sk_pacing_rate: known("sock", "sk_pacing_rate"),
            sk_max_pacing_rate: known("sock", "sk_max_pacing_rate"),
            sk_pacing_status: known("sock", "sk_pacing_status"),
            skc_state: known("sock", "__sk_common.skc_state"),
            skc_family: known("sock", "__sk_common.skc_family"),
            rttvar_us: t("rttvar_us"),
            mdev_max_us: t("mdev_max_us"),
            segs_in: t("segs_in"),
            segs_out: t("segs_out"),
            tcp_header_len: t("tcp_header_len"),
            icsk_pmtu_cookie: known("inet_connection_sock", "icsk_pmtu_cookie"),
            sk_protocol: known("sock", "sk_protocol"),
            sk_type: known("sock", "sk_type"),
            sk_pacing_shift: known("sock", "sk_pacing_shift"),
            sk_gso_max_segs: known("sock", "sk_gso_max_segs"),
            inet_saddr: known("inet_sock", "inet_saddr"),
            inet_sport: known("inet_sock", "inet_sport"),
            prior_ssthresh: t("prior_ssthresh"),
            rcv_tstamp: t("rcv_tstamp"),
            undo_retrans: t("undo_retrans"),
            retrans_stamp: t("retrans_stamp"),
            icsk_retransmits: known("inet_connection_sock", "icsk_retransmits"),
            total_rto: t("total_rto"),
            total_rto_recoveries: t("total_rto_recoveries"),
            advmss: t("advmss"),
            tlp_high_seq: t("tlp_high_seq"),
            tlp_retrans: t("tlp_retrans"),
            snd_wnd: t("snd_wnd"),
            undo_marker: t("undo_marker"),
            sack_ok: t("rx_opt.sack_ok"),
            ca_state: known("inet_connection_sock", "icsk_ca_state"),
            pkts_acked: known("ack_sample", "pkts_acked"),
            rtt_us: known("ack_sample", "rtt_us"),
            in_flight: known("ack_sample", "in_flight"),
            rs_prior_mstamp: known("rate_sample", "prior_mstamp"),
            rs_prior_delivered: known("rate_sample", "prior_delivered"),
            rs_prior_delivered_ce: known("rate_sample", "prior_delivered_ce"),
            rs_delivered_ce: known("rate_sample", "delivered_ce"),
            rs_delivered: known("rate_sample", "delivered"),
            rs_interval_us: known("rate_sample", "interval_us"),
            rs_snd_interval_us: known("rate_sample", "snd_interval_us"),
            rs_rcv_interval_us: known("rate_sample", "rcv_interval_us"),
            rs_losses: known("rate_sample", "losses"),
            rs_is_app_limited: known("rate_sample", "is_app_limited"),
            rs_is_retrans: known("rate_sample", "is_retrans"),
            rs_rtt_us: known("rate_sample", "rtt_us"),
            rs_acked_sacked: known("rate_sample", "acked_sacked"),
            rs_prior_in_flight: known("rate_sample", "prior_in_flight"),
        }
    })
}

/// Writes `v` into `image` at `f` (little-endian, truncated to the field).
#[inline]
pub fn put(image: &mut [u8], f: &Field, v: u64) {
    let at = f.offset as usize;
    // Fixed sizes, so that no call to memcpy is made on every hook.
    match f.size {
        1 => image[at] = v as u8,
        2 => image[at..at + 2].copy_from_slice(&(v as u16).to_le_bytes()),
        4 => image[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes()),
        8 => image[at..at + 8].copy_from_slice(&v.to_le_bytes()),
        n => {
            let n = n.min(8) as usize;
            image[at..at + n].copy_from_slice(&v.to_le_bytes()[..n])
        }
    }
}

/// Reads `f` from `image`.
#[inline]
pub fn get(image: &[u8], f: &Field) -> u64 {
    let at = f.offset as usize;
    match f.size {
        1 => image[at] as u64,
        2 => u16::from_le_bytes([image[at], image[at + 1]]) as u64,
        4 => u32::from_le_bytes(image[at..at + 4].try_into().unwrap()) as u64,
        8 => u64::from_le_bytes(image[at..at + 8].try_into().unwrap()),
        n => {
            let n = n.min(8) as usize;
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(&image[at..at + n]);
            u64::from_le_bytes(b)
        }
    }
}

/// The writable byte ranges of an image.
pub fn writable(image: Image) -> Vec<(u32, u32)> {
    FIELDS
        .iter()
        .filter(|f| f.image == image && f.writable)
        .map(|f| (f.offset, f.offset + f.size))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_do_not_overlap_and_fit_their_image() {
        for image in [Sock, AckSample, RateSample] {
            let limit = match image {
                Sock => SOCK_BYTES,
                AckSample => ACK_SAMPLE_BYTES,
                RateSample => RATE_SAMPLE_BYTES,
                Nested => unreachable!(),
            } as u32;
            // Structs inside the socket overlap their own members by design.
            let mut fields: Vec<_> = FIELDS
                .iter()
                .filter(|f| {
                    f.image == image && !["rx_opt", "__sk_common", "rtt_min"].contains(&f.path)
                })
                .collect();
            fields.sort_by_key(|f| f.offset);
            for pair in fields.windows(2) {
                assert!(
                    pair[0].offset + pair[0].size <= pair[1].offset,
                    "{} overlaps {}",
                    pair[0].path,
                    pair[1].path
                );
            }
            assert!(fields.iter().all(|f| f.offset + f.size <= limit));
        }
    }

    #[test]
    fn embedded_structs_reach_the_same_field() {
        let direct = field("sock", "sk_pacing_rate").unwrap();
        assert_eq!(
            field("tcp_sock", "inet_conn.icsk_inet.sk.sk_pacing_rate"),
            Some(direct)
        );
        assert_eq!(field("tcp_sock", "sk_pacing_rate"), Some(direct));
        assert_eq!(
            field("inet_connection_sock", "icsk_ca_state").unwrap().bits,
            5
        );
        assert_eq!(field("tcp_sock", "srtt"), None);
        // A sock pointer does not see tcp_sock's fields.
        assert_eq!(field("sock", "snd_cwnd"), None);
    }
}
