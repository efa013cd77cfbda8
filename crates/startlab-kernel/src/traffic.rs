//! The kernel world's traffic: TCP connections between hosts that live in network namespaces,
//! each opened at its start time with its congestion control chosen before `connect()`, sending
//! a finite size or until it is stopped, and measured by the kernel (`TCP_INFO`).
//!
//! Every sender and receiver is a thread that has moved itself into its host's namespace
//! (`setns` affects only the calling thread). Times are `CLOCK_MONOTONIC` nanoseconds, the clock
//! of the trace records, so both can be put on one time line.

use crate::tcpinfo::{tcp_info, TcpInfo};
use startlab_core::traffic::{RequestDraws, UdpSource};
use startlab_emu::clock::realtime_ns;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::Duration;

/// A host of the scenario: its name, the namespace it lives in and its address there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    /// A namespace file (`/var/run/netns/NAME` or `/proc/PID/ns/net`).
    pub netns: PathBuf,
    pub addr: Ipv4Addr,
}

/// `CLOCK_MONOTONIC` in ns (the trace's `mono` clock), the one clock of the kernel world.
pub use startlab_emu::clock::monotonic_ns;

/// Set (by a signal handler, or by a caller that was interrupted) to end every connection of
/// the run now: senders stop sending, receivers stop waiting, sleeps return.
pub static ABORT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the run was told to end now.
pub fn aborted() -> bool {
    ABORT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Sleeps until `CLOCK_MONOTONIC` reaches `deadline_ns`, or the run is aborted.
pub fn sleep_until(deadline_ns: u64) {
    loop {
        let now = monotonic_ns();
        if deadline_ns <= now || aborted() {
            return;
        }
        // Slices of at most 50 ms: an abort is seen within them, and a sleeping thread wakes
        // rarely.
        std::thread::sleep(Duration::from_nanos((deadline_ns - now).min(50_000_000)));
    }
}

/// Moves the calling thread into the network namespace of `host`.
pub fn enter(host: &Host) -> io::Result<()> {
    let f = std::fs::File::open(&host.netns)?;
    // SAFETY: a namespace file descriptor; only the calling thread changes namespace.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `Ok` if a libc call returned 0, else the OS error prefixed with `what`.
fn check(rc: libc::c_int, what: impl FnOnce() -> String) -> io::Result<()> {
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    Err(io::Error::new(e.kind(), format!("{}: {e}", what())))
}

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*a.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// Bytes of the TCP timestamp option (with its padding) in every segment.
pub const TIMESTAMP_OPTION_BYTES: u32 = 12;

/// A TCP socket bound to `local`, with congestion control `cc` chosen *before* `connect()`, so
/// that nothing of the namespace's default controller (its pacing status, for one) is inherited.
pub fn connect_with(cc: &str, local: SocketAddrV4, remote: SocketAddrV4) -> io::Result<TcpStream> {
    connect_with_mss(cc, None, local, remote)
}

/// The same, with `TCP_MAXSEG` set to `maxseg` before `connect()`: it caps the MSS announced and
/// used (tcp_sync_mss), counted with the TCP options, so a payload of `mss` bytes with
/// timestamps is `mss + 12` ([`TIMESTAMP_OPTION_BYTES`]).
pub fn connect_with_mss(
    cc: &str,
    maxseg: Option<u32>,
    local: SocketAddrV4,
    remote: SocketAddrV4,
) -> io::Result<TcpStream> {
    // SAFETY: plain socket creation; the descriptor is owned at once.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let raw = fd.as_raw_fd();
    let one: libc::c_int = 1;
    let int = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: each call gets a live buffer of the length it is given.
    unsafe {
        check(
            libc::setsockopt(
                raw,
                libc::SOL_SOCKET,
                libc::SO_REUSEADDR,
                (&one as *const libc::c_int).cast(),
                int,
            ),
            || "SO_REUSEADDR".into(),
        )?;
        check(
            libc::setsockopt(
                raw,
                libc::IPPROTO_TCP,
                libc::TCP_CONGESTION,
                cc.as_ptr().cast(),
                cc.len() as libc::socklen_t,
            ),
            || format!("TCP_CONGESTION \"{cc}\""),
        )?;
        if let Some(maxseg) = maxseg {
            let maxseg = maxseg as libc::c_int;
            check(
                libc::setsockopt(
                    raw,
                    libc::IPPROTO_TCP,
                    libc::TCP_MAXSEG,
                    (&maxseg as *const libc::c_int).cast(),
                    int,
                ),
                || format!("TCP_MAXSEG {maxseg}"),
            )?;
        }
        let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let (from, to) = (sockaddr(local), sockaddr(remote));
        check(
            libc::bind(raw, (&from as *const libc::sockaddr_in).cast(), size),
            || format!("bind {local}"),
        )?;
        check(
            libc::connect(raw, (&to as *const libc::sockaddr_in).cast(), size),
            || format!("connect {remote}"),
        )?;
    }
    Ok(TcpStream::from(fd))
}

/// One TCP connection to run.
#[derive(Clone, Debug)]
pub struct TcpJob {
    /// The flow id of the tables.
    pub flow: u32,
    pub src: Host,
    pub dst: Host,
    /// The sender's port (the trace filter and the series key) and the receiver's.
    pub src_port: u16,
    pub dst_port: u16,
    /// A congestion control the kernel has (`reno`, `cubic`, or a registered `struct_ops`).
    pub cc: String,
    /// The receiver's, set on its listening socket (`None`: the namespace's default).
    pub receiver_cc: Option<String>,
    /// When it opens and when the application closes it, on the monotonic clock; `bytes` to
    /// send, `None` for as much as it can until `stop`.
    pub start_ns: u64,
    pub stop_ns: u64,
    pub bytes: Option<u64>,
    /// An application that writes responses one at a time (then `bytes` is not used).
    pub requests: Option<RequestDraws>,
    /// Linux's internal pacing (`tcp.pacing = "linux"`): switched on by `SO_MAX_PACING_RATE`,
    /// which sets `sk_pacing_status` to `SK_PACING_NEEDED` for any rate but "unlimited".
    pub paced: bool,
    /// Initial Spreading of an initial window of this many segments of this many bytes: see
    /// [`spread_initial_window`].
    pub spread: Option<(u32, u32)>,
    /// `TCP_MAXSEG`: payload bytes per segment (`tcp.mss`) and TCP options.
    pub maxseg: u32,
    /// `net.ipv4.tcp_slow_start_after_idle` in the sender's namespace.
    pub slow_start_after_idle: bool,
    /// A completed connection closes with FINs (TIME_WAIT: Linux saves its TCP metrics, and a
    /// controller's `release` sees the connection's window), not with a reset (`tcp.metrics`,
    /// or a start-up algorithm that saves path state, `registry::SAVES_PATH_STATE`).
    pub graceful_close: bool,
}

/// What became of a connection.
#[derive(Clone, Debug, Default)]
pub struct TcpOutcome {
    pub flow: u32,
    /// When `connect()` was called and when it returned.
    pub opened_ns: u64,
    pub connected_ns: u64,
    /// When the last byte of a finite flow was acknowledged.
    pub completed_ns: Option<u64>,
    /// Bytes the receiving application read.
    pub received_bytes: u64,
    /// `TCP_INFO` of the sender when it finished or was stopped.
    pub info: TcpInfo,
    pub error: Option<String>,
    /// The responses of a request application, in order.
    pub requests: Vec<KernelRequest>,
}

/// One response of a request application, as the sender saw it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelRequest {
    pub bytes: u64,
    /// When the first byte was written, and when the last was acknowledged (`tcpi_unacked`
    /// and `tcpi_notsent_bytes` both 0).
    pub written_ns: u64,
    pub completed_ns: Option<u64>,
    /// `tcpi_snd_cwnd` and `tcpi_snd_ssthresh` after the first write returned (after any
    /// restart after idle, before an ACK could arrive).
    pub cwnd: u32,
    pub ssthresh: u32,
    /// `tcpi_last_data_sent` before the write, ms.
    pub idle_ms: u32,
    /// Whether `tcp_slow_start_after_idle_check` restarted the window, inferred: nothing was
    /// out and the idle time exceeded `tcpi_rto` (with the sysctl on).
    pub restarted: bool,
}

const CHUNK: usize = 64 * 1024;

/// A socket call that timed out or was interrupted: try again (after checking the clock).
fn retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}
/// How long after its stop time a receiver waits for a connection or its last bytes.
const GRACE_NS: u64 = 3_000_000_000;

/// `TCP_CONGESTION` on `socket`.
fn set_congestion_control(socket: &impl AsRawFd, cc: &str) -> io::Result<()> {
    // SAFETY: the buffer is live for the call and its length is given.
    check(
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_CONGESTION,
                cc.as_ptr().cast(),
                cc.len() as libc::socklen_t,
            )
        },
        || format!("TCP_CONGESTION \"{cc}\" on the receiver"),
    )
}

/// Runs the receiving side: accepts one connection on `(dst.addr, dst_port)` and reads until
/// the sender closes. The listener is bound before this returns.
fn receiver(job: &TcpJob) -> io::Result<std::thread::JoinHandle<io::Result<u64>>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let job = job.clone();
    let handle = std::thread::spawn(move || -> io::Result<u64> {
        let bound = enter(&job.dst)
            .and_then(|_| TcpListener::bind(SocketAddrV4::new(job.dst.addr, job.dst_port)));
        // The receiver's congestion control, inherited by the connection it accepts
        // (tcp_ca_openreq_child); a listener's flags (TCP_CONG_NEEDS_ECN) also decide whether
        // it accepts ECN (tcp_ecn_create_request).
        let bound = bound.and_then(|l| match &job.receiver_cc {
            Some(cc) => set_congestion_control(&l, cc).map(|_| l),
            None => Ok(l),
        });
        let listener = match bound {
            Ok(l) => {
                let _ = tx.send(Ok(()));
                l
            }
            Err(e) => {
                let _ = tx.send(Err(io::Error::new(
                    e.kind(),
                    format!("listen on {}:{}: {e}", job.dst.addr, job.dst_port),
                )));
                return Ok(0);
            }
        };
        // Give up some time after the connection should have closed: a sender that could not
        // connect must not leave this thread waiting.
        let deadline = job.stop_ns + GRACE_NS;
        listener.set_nonblocking(true)?;
        let mut c = loop {
            match listener.accept() {
                Ok((c, _)) => break c,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if monotonic_ns() > deadline || aborted() {
                        return Ok(0);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(e),
            }
        };
        c.set_nonblocking(false)?;
        // If this side gives up first (the run ends or is interrupted), it must not linger;
        // a graceful close ends with the sender's FIN instead (below).
        if !job.graceful_close {
            abort_on_close(&c);
        }
        c.set_read_timeout(Some(Duration::from_millis(100)))?;
        let mut buf = vec![0u8; CHUNK];
        let mut total = 0u64;
        loop {
            match c.read(&mut buf) {
                // The sender's FIN: closing answers with ours (LAST_ACK), unless reset above.
                Ok(0) => return Ok(total),
                Ok(k) => total += k as u64,
                Err(e) if retry(&e) => {
                    if monotonic_ns() > deadline || aborted() {
                        return Ok(total);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(total),
                Err(e) => return Err(e),
            }
        }
    });
    rx.recv()
        .unwrap_or_else(|_| Err(io::Error::other("receiver thread ended")))?;
    Ok(handle)
}

/// Runs the sending side of `job` in the calling thread.
fn sender(job: &TcpJob) -> TcpOutcome {
    let mut out = TcpOutcome {
        flow: job.flow,
        ..TcpOutcome::default()
    };
    if let Err(e) = enter(&job.src) {
        out.error = Some(format!("enter {}: {e}", job.src.name));
        return out;
    }
    sleep_until(job.start_ns);
    if aborted() {
        out.error = Some("the run was interrupted".into());
        return out;
    }
    out.opened_ns = monotonic_ns();
    let local = SocketAddrV4::new(job.src.addr, job.src_port);
    let remote = SocketAddrV4::new(job.dst.addr, job.dst_port);
    let mut s = match connect_with_mss(&job.cc, Some(job.maxseg), local, remote) {
        Ok(s) => s,
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    out.connected_ns = monotonic_ns();
    if job.paced {
        // A ceiling no path reaches: the pacing rate is TCP's own (cwnd / srtt × ratio).
        let ceiling: u64 = u64::MAX >> 1;
        let _ = set_option(&s, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, &ceiling);
    }
    // Writes return at least every 20 ms, so that a stop time is kept.
    let _ = s.set_write_timeout(Some(Duration::from_millis(20)));
    let chunk = vec![0x5au8; CHUNK];
    if let Some(draws) = job.requests.clone() {
        send_requests(&mut s, job, draws, &chunk, &mut out);
        if let Ok((info, _)) = tcp_info(&s) {
            out.info = info;
        }
        close(&mut s, job, out.completed_ns.is_some());
        return out;
    }
    let mut sent = 0u64;
    let limit = job.bytes.unwrap_or(u64::MAX);
    if let Some((iw, mss)) = job.spread {
        sent = spread_initial_window(&mut s, iw, mss, limit, out.connected_ns, &chunk);
    }
    while sent < limit && monotonic_ns() < job.stop_ns && !aborted() {
        let n = (limit - sent).min(CHUNK as u64) as usize;
        match s.write(&chunk[..n]) {
            Ok(k) => sent += k as u64,
            Err(e) if retry(&e) => {}
            Err(e) => {
                out.error = Some(format!("write: {e}"));
                break;
            }
        }
    }
    // A finite flow completes when its last byte is acknowledged.
    if job.bytes.is_some() && sent == limit {
        out.completed_ns = wait_all_acked(&s, job.stop_ns);
    }
    if let Ok((info, _)) = tcp_info(&s) {
        out.info = info;
    }
    close(&mut s, job, out.completed_ns.is_some());
    out
}

/// Ends a sender's connection. Everything is measured: normally at once (a reset), so that no
/// orphaned socket outlives the run, retransmitting into a stopped emulator and leaving trace
/// events with this run's ports in the next run's trace. With `graceful_close` a completed
/// connection exchanges FINs instead and waits for the receiver's, reaching TIME_WAIT, where
/// Linux saves its TCP metrics (`tcp_time_wait` -> `tcp_update_metrics`).
fn close(s: &mut TcpStream, job: &TcpJob, completed: bool) {
    if !(job.graceful_close && completed) {
        abort_on_close(s);
        return;
    }
    let _ = s.shutdown(std::net::Shutdown::Write);
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    let deadline = job.stop_ns + GRACE_NS;
    let mut buf = [0u8; 1024];
    while monotonic_ns() < deadline && !aborted() {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if retry(&e) => {}
            Err(_) => break,
        }
    }
    abort_on_close(s);
}

/// Waits until everything written on `s` is acknowledged, or the stop time. Returns when.
fn wait_all_acked(s: &TcpStream, stop_ns: u64) -> Option<u64> {
    while monotonic_ns() < stop_ns && !aborted() {
        match tcp_info(s) {
            Ok((info, _)) if info.unacked == 0 && info.notsent_bytes == 0 => {
                return Some(monotonic_ns())
            }
            Ok(_) => std::thread::sleep(Duration::from_micros(200)),
            Err(_) => return None,
        }
    }
    None
}

/// A request application (`traffic::requests`): each response is written whole, the next a
/// think time after the previous one was acknowledged, with the simulator's draws.
fn send_requests(
    s: &mut TcpStream,
    job: &TcpJob,
    mut draws: RequestDraws,
    chunk: &[u8],
    out: &mut TcpOutcome,
) {
    while let Some(bytes) = draws.next_size() {
        if monotonic_ns() >= job.stop_ns || aborted() {
            return;
        }
        let before = tcp_info(s).map(|(i, _)| i).unwrap_or_default();
        let mut r = KernelRequest {
            bytes,
            written_ns: monotonic_ns(),
            idle_ms: before.last_data_sent,
            // tcp_slow_start_after_idle_check: nothing out, idle longer than the RTO (ms
            // against µs here, jiffies in the kernel).
            restarted: job.slow_start_after_idle
                && !out.requests.is_empty()
                && before.unacked == 0
                && before.last_data_sent as u64 * 1000 > before.rto as u64,
            ..KernelRequest::default()
        };
        let mut sent = 0u64;
        while sent < bytes && monotonic_ns() < job.stop_ns && !aborted() {
            let n = (bytes - sent).min(chunk.len() as u64) as usize;
            match s.write(&chunk[..n]) {
                Ok(k) => {
                    if sent == 0 {
                        if let Ok((info, _)) = tcp_info(s) {
                            (r.cwnd, r.ssthresh) = (info.snd_cwnd, info.snd_ssthresh);
                        }
                    }
                    sent += k as u64
                }
                Err(e) if retry(&e) => {}
                Err(e) => {
                    out.error = Some(format!("write: {e}"));
                    out.requests.push(r);
                    return;
                }
            }
        }
        if sent == bytes {
            r.completed_ns = wait_all_acked(s, job.stop_ns);
        }
        let completed = r.completed_ns;
        out.requests.push(r);
        if completed.is_none() {
            return;
        }
        if draws.drew_last() {
            // The connection completes with its last response.
            out.completed_ns = completed;
            return;
        }
        let think = draws.next_think();
        sleep_until(monotonic_ns() + think.as_nanos());
    }
}

/// Initial Spreading (Sallantin et al. 2013 §III.C: one segment every RTT / IW) from the
/// application: Linux never paces a connection's first 10 segments (tcp_update_skb_after_send:
/// internal pacing, like sch_fq, starts at `data_segs_out >= 10`), so the controller's pacing
/// rate cannot spread them. The first min(IW, 10) segments are written one at a time with
/// `TCP_NODELAY`, `srtt / IW` apart from the handshake's RTT sample; the eBPF controller paces
/// the rest of the window at the same rate and stops pacing at the first ACK of data. Returns
/// the bytes written.
fn spread_initial_window(
    s: &mut TcpStream,
    iw: u32,
    mss: u32,
    limit: u64,
    connected_ns: u64,
    chunk: &[u8],
) -> u64 {
    let Ok((info, _)) = tcp_info(s) else { return 0 };
    let nodelay: libc::c_int = 1;
    let _ = set_option(s, libc::IPPROTO_TCP, libc::TCP_NODELAY, &nodelay);
    let gap_ns = info.rtt as u64 * 1000 / iw.max(1) as u64;
    let mut sent = 0u64;
    for k in 0..iw.min(10) as u64 {
        sleep_until(connected_ns + k * gap_ns);
        let n = (limit - sent).min(mss as u64).min(chunk.len() as u64) as usize;
        if n == 0 || aborted() {
            break;
        }
        match s.write(&chunk[..n]) {
            Ok(w) => sent += w as u64,
            Err(_) => break,
        }
    }
    sleep_until(connected_ns + iw.min(10) as u64 * gap_ns);
    let off: libc::c_int = 0;
    let _ = set_option(s, libc::IPPROTO_TCP, libc::TCP_NODELAY, &off);
    sent
}

/// Makes closing `socket` abortive (`SO_LINGER` on with a zero timeout: a reset, and the socket
/// is gone at once instead of lingering in FIN-WAIT or LAST-ACK).
fn abort_on_close(socket: &impl AsRawFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let _ = set_option(socket, libc::SOL_SOCKET, libc::SO_LINGER, &linger);
}

/// Runs every job: receivers listen first, then each sender opens at its start time. Returns
/// one outcome per job, in the order given.
pub fn run_tcp(jobs: &[TcpJob]) -> Vec<TcpOutcome> {
    // Threads are started shortly before each connection opens, in start order, so that a run
    // of many short connections (Poisson arrivals) has only the live ones' threads, not
    // thousands of sleeping ones waking the CPUs the emulator needs.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| jobs[i].start_ns);
    let mut started: Vec<Option<Started>> = (0..jobs.len()).map(|_| None).collect();
    for i in order {
        let job = &jobs[i];
        sleep_until(job.start_ns.saturating_sub(LAUNCH_LEAD_NS));
        if aborted() {
            break; // the run ends without its tables; nothing more to start
        }
        let receiver = receiver(job);
        let sending = job.clone();
        let sender = std::thread::spawn(move || sender(&sending));
        started[i] = Some(Started { sender, receiver });
    }
    let mut outcomes = Vec::with_capacity(jobs.len());
    for s in started.into_iter().flatten() {
        let mut out = s.sender.join().unwrap_or_else(|_| TcpOutcome {
            error: Some("the sender thread panicked".into()),
            ..TcpOutcome::default()
        });
        match s.receiver {
            Ok(handle) => match handle.join() {
                Ok(Ok(bytes)) => out.received_bytes = bytes,
                Ok(Err(e)) => out.error = out.error.or(Some(format!("receive: {e}"))),
                Err(_) => out.error = out.error.or(Some("the receiver thread panicked".into())),
            },
            Err(e) => out.error = out.error.or(Some(e.to_string())),
        }
        outcomes.push(out);
    }
    outcomes
}

/// How long before its start a connection's threads are started.
const LAUNCH_LEAD_NS: u64 = 50_000_000;

/// The threads of one connection.
struct Started {
    sender: std::thread::JoinHandle<TcpOutcome>,
    receiver: io::Result<std::thread::JoinHandle<io::Result<u64>>>,
}

/// One UDP source to run: the simulator's [`UdpSource`] says when each packet leaves.
#[derive(Clone, Debug)]
pub struct UdpJob {
    pub flow: u32,
    pub src: Host,
    pub dst: Host,
    pub src_port: u16,
    pub dst_port: u16,
    pub source: UdpSource,
    /// Time 0 of the source's schedule on the monotonic clock.
    pub t0_ns: u64,
}

/// What became of a UDP source.
#[derive(Clone, Debug)]
pub struct UdpOutcome {
    pub flow: u32,
    /// The source after the run: `sent_packets` counts what was handed to the socket,
    /// `delivered_packets` / `delivered_bytes` (whole IP packets) what the receiver got.
    pub source: UdpSource,
    /// Sends the host refused (its socket or device queue full).
    pub send_errors: u64,
    /// Packets the emulator delivered that the receiving socket dropped, its buffer full (the
    /// receiving thread did not get the CPU in time).
    pub socket_drops: u64,
    /// When the receiver got its first and last packet (monotonic ns).
    pub first_ns: Option<u64>,
    /// The first packet received a quarter into the source's active time: (when, bytes
    /// received before it).
    pub settled: Option<(u64, u64)>,
    pub last_ns: Option<u64>,
    /// Bytes (whole IP packets) received in each 100 ms from the run's start, by the kernel's
    /// stamps (`startlab kernel accuracy --trace`).
    pub bins: Vec<u64>,
    pub error: Option<String>,
}

/// The span of one bin of [`UdpOutcome::bins`].
pub const RECEIVE_BIN_NS: u64 = 100_000_000;

/// What a UDP receiver counted (times on the monotonic clock, from the kernel's stamps).
#[derive(Default)]
struct UdpReceived {
    packets: u64,
    /// Whole IP packets.
    bytes: u64,
    first: Option<u64>,
    last: Option<u64>,
    settled: Option<(u64, u64)>,
    overflowed: u64,
    bins: Vec<u64>,
}

/// The bytes of IP and UDP headers around a datagram's payload.
const UDP_HEADERS: usize = 28;

fn udp_socket(host: &Host, port: u16) -> io::Result<std::net::UdpSocket> {
    enter(host)?;
    std::net::UdpSocket::bind(SocketAddrV4::new(host.addr, port))
        .map_err(|e| io::Error::new(e.kind(), format!("bind {}:{port}: {e}", host.addr)))
}

/// Runs every UDP source (receivers bound first) and returns their outcomes in order.
pub fn run_udp(jobs: &[UdpJob]) -> Vec<UdpOutcome> {
    let receivers: Vec<_> = jobs
        .iter()
        .map(|job| {
            let job = job.clone();
            let (tx, rx) = std::sync::mpsc::channel();
            let handle = std::thread::spawn(move || -> io::Result<UdpReceived> {
                let socket = match udp_socket(&job.dst, job.dst_port) {
                    Ok(s) => {
                        let _ = tx.send(Ok(()));
                        s
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return Ok(UdpReceived::default());
                    }
                };
                socket.set_read_timeout(Some(Duration::from_millis(20)))?;
                // A receive buffer that holds a second at 400 Mbit/s, so that a receiver thread
                // that runs late loses nothing (root may exceed net.core.rmem_max); what it
                // loses all the same is counted (SO_RXQ_OVFL).
                let size: libc::c_int = 64 << 20;
                let one: libc::c_int = 1;
                let _ = set_option(&socket, libc::SOL_SOCKET, libc::SO_RXQ_OVFL, &one);
                let _ = set_option(&socket, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &size);
                stamp_receptions(&socket);
                // Kernel receive stamps are on the realtime clock: the offset to the monotonic.
                let offset = realtime_ns() as i128 - monotonic_ns() as i128;
                let deadline = job.t0_ns + job.source.stop.as_nanos() + 1_000_000_000;
                let mut buf = vec![0u8; 65536];
                let (mut packets, mut bytes, mut first, mut last) = (0, 0, None, None);
                let mut overflowed = 0u64;
                // A quarter into the source's active time: where a rate measurement starts, the
                // queue of a saturated link having built by then.
                let (on, off) = (job.source.start.as_nanos(), job.source.stop.as_nanos());
                let settle_at = job.t0_ns + on + off.saturating_sub(on) / 4;
                let mut settled: Option<(u64, u64)> = None;
                // Bins up to the deadline: bounded by the run's length.
                let mut bins = vec![0u64; ((deadline - job.t0_ns) / RECEIVE_BIN_NS + 1) as usize];
                let fd = socket.as_fd().try_clone_to_owned()?;
                while monotonic_ns() < deadline && !aborted() {
                    // A timeout comes back as None; the kernel's stamp of each arrival is
                    // taken, so that a receiver thread that runs late does not skew the rate.
                    if let Some((n, at, dropped)) = recv_counted(&fd, &mut buf) {
                        overflowed = dropped.map_or(overflowed, u64::from);
                        let at = (at as i128 - offset).max(0) as u64;
                        if settled.is_none() && at >= settle_at {
                            settled = Some((at, bytes));
                        }
                        packets += 1;
                        bytes += (n + UDP_HEADERS) as u64;
                        let bin = (at.saturating_sub(job.t0_ns) / RECEIVE_BIN_NS) as usize;
                        if let Some(b) = bins.get_mut(bin) {
                            *b += (n + UDP_HEADERS) as u64;
                        }
                        first.get_or_insert(at);
                        last = Some(at);
                    }
                }
                Ok(UdpReceived {
                    packets,
                    bytes,
                    first,
                    last,
                    settled,
                    overflowed,
                    bins,
                })
            });
            rx.recv()
                .unwrap_or_else(|_| Err(io::Error::other("receiver thread ended")))
                .map(|_| handle)
        })
        .collect();
    let senders: Vec<_> = jobs
        .iter()
        .cloned()
        .map(|mut job| {
            std::thread::spawn(move || -> (UdpSource, u64, Option<String>) {
                let socket = match udp_socket(&job.src, job.src_port).and_then(|s| {
                    s.connect(SocketAddrV4::new(job.dst.addr, job.dst_port))
                        .map(|_| s)
                }) {
                    Ok(s) => s,
                    Err(e) => return (job.source, 0, Some(e.to_string())),
                };
                let payload =
                    vec![0x5au8; (job.source.packet_bytes as usize).saturating_sub(UDP_HEADERS)];
                let mut errors = 0;
                let mut out = Vec::new();
                let mut at = Some(job.source.start);
                while let Some(t) = at {
                    sleep_until(job.t0_ns + t.as_nanos());
                    if aborted() {
                        break;
                    }
                    at = job.source.on_tick(t, &mut out);
                    for _ in out.drain(..) {
                        if socket.send(&payload).is_err() {
                            errors += 1;
                        }
                    }
                }
                (job.source, errors, None)
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for ((job, sender), receiver) in jobs.iter().zip(senders).zip(receivers) {
        let (mut source, send_errors, mut error) = sender.join().unwrap_or_else(|_| {
            (
                job.source.clone(),
                0,
                Some("the sender thread panicked".into()),
            )
        });
        let (mut first_ns, mut last_ns, mut socket_drops, mut settled) = (None, None, 0, None);
        let mut bins = Vec::new();
        match receiver.map(|h| h.join()) {
            Ok(Ok(Ok(got))) => {
                source.delivered_packets = got.packets;
                source.delivered_bytes = got.bytes;
                (first_ns, last_ns) = (got.first, got.last);
                socket_drops = got.overflowed;
                settled = got.settled;
                bins = got.bins;
            }
            Ok(Ok(Err(e))) | Err(e) => error = error.or(Some(format!("receive: {e}"))),
            Ok(Err(_)) => error = error.or(Some("the receiver thread panicked".into())),
        }
        outcomes.push(UdpOutcome {
            flow: job.flow,
            source,
            send_errors,
            socket_drops,
            settled,
            first_ns,
            last_ns,
            bins,
            error,
        });
    }
    outcomes
}

/// ICMP echo requests from one host to another while a run goes on, to measure the round-trip
/// time the emulated path gives (`startlab kernel accuracy`).
#[derive(Clone, Debug)]
pub struct PingJob {
    pub src: Host,
    pub dst: Ipv4Addr,
    pub count: u32,
    /// The first request's time, and the pause between a reply and the next request
    /// (monotonic ns): one request is out at a time.
    pub start_ns: u64,
    pub interval_ns: u64,
    /// ICMP payload bytes (the IP packet is 28 bytes more).
    pub payload: usize,
}

/// The Internet checksum (RFC 1071).
fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Sets the socket option `name` at `level` of `socket` to `value`.
fn set_option<T>(
    socket: &impl AsRawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: a live value of its size.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    check(rc, || format!("setsockopt {name}"))
}

/// Asks the kernel to stamp every packet `socket` receives (`SO_TIMESTAMPNS`).
fn stamp_receptions(socket: &impl AsRawFd) {
    let one: libc::c_int = 1;
    let _ = set_option(socket, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &one);
}

/// Receives one packet with its kernel receive time (`SO_TIMESTAMPNS`, realtime ns), or
/// `None` on a timeout.
fn recv_stamped(fd: &OwnedFd, buf: &mut [u8]) -> Option<(usize, u64)> {
    recv_counted(fd, buf).map(|(n, at, _)| (n, at))
}

/// [`recv_stamped`], with the socket's count of packets dropped for a full receive buffer so
/// far (`SO_RXQ_OVFL`, if it was asked for).
fn recv_counted(fd: &OwnedFd, buf: &mut [u8]) -> Option<(usize, u64, Option<u32>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 16];
    // SAFETY: a zeroed msghdr is valid; its pointers are set to live buffers below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: the msghdr points at live buffers of the given sizes.
    let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return None;
    }
    let mut stamp = realtime_ns();
    let mut dropped = None;
    // SAFETY: walking the control messages the kernel wrote into `control`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                stamp = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
            } else if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_RXQ_OVFL {
                dropped = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<u32>()));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Some((n as usize, stamp, dropped))
}

/// Sends `job.count` echo requests one at a time and returns each round-trip time (ns), `None`
/// for a request without a reply within 1 s. A round trip runs from just before the request is
/// sent to the kernel's receive stamp of the reply.
pub fn ping(job: &PingJob) -> io::Result<Vec<Option<u64>>> {
    let job = job.clone();
    std::thread::spawn(move || -> io::Result<Vec<Option<u64>>> {
        enter(&job.src)?;
        // SAFETY: a raw ICMP socket (root), owned at once.
        let fd = unsafe {
            libc::socket(
                libc::AF_INET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::IPPROTO_ICMP,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 5_000,
        };
        let _ = set_option(&fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, &tv);
        // The kernel stamps each reply when it reaches the socket, so the ping thread's own
        // wake-up is not in the round-trip time.
        stamp_receptions(&fd);
        let to = sockaddr(SocketAddrV4::new(job.dst, 0));
        let id = (std::process::id() & 0xffff) as u16;
        let mut rtts = Vec::with_capacity(job.count as usize);
        let mut buf = [0u8; 2048];
        let mut next = job.start_ns;
        for seq in 0..job.count {
            sleep_until(next);
            if aborted() {
                break;
            }
            let mut req = vec![0u8; 8 + job.payload];
            req[0] = 8; // echo request
            req[4..6].copy_from_slice(&id.to_be_bytes());
            req[6..8].copy_from_slice(&(seq as u16).to_be_bytes());
            let c = checksum(&req);
            req[2..4].copy_from_slice(&c.to_be_bytes());
            let sent = realtime_ns();
            // SAFETY: a live buffer and address of their sizes.
            let rc = unsafe {
                libc::sendto(
                    fd.as_raw_fd(),
                    req.as_ptr().cast(),
                    req.len(),
                    0,
                    (&to as *const libc::sockaddr_in).cast(),
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                )
            };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
            let give_up = monotonic_ns() + 1_000_000_000;
            let mut rtt = None;
            while monotonic_ns() < give_up && !aborted() {
                let Some((n, at)) = recv_stamped(&fd, &mut buf) else {
                    continue;
                };
                if n < 28 {
                    continue;
                }
                let ihl = usize::from(buf[0] & 0x0f) * 4;
                let icmp = &buf[ihl..n];
                if icmp.len() >= 8
                    && icmp[0] == 0
                    && icmp[4..6] == id.to_be_bytes()
                    && icmp[6..8] == (seq as u16).to_be_bytes()
                {
                    rtt = Some(at.saturating_sub(sent));
                    break;
                }
            }
            rtts.push(rtt);
            // One request at a time: the next leaves an interval after this reply.
            next = next.max(monotonic_ns()) + job.interval_ns;
        }
        Ok(rtts)
    })
    .join()
    .unwrap_or_else(|_| Err(io::Error::other("the ping thread panicked")))
}
