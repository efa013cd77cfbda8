//! Per-ACK state of the kernel's own TCP senders, from the `tcp:tcp_probe` tracepoint.
//!
//! A [`Tracer`] owns a trace instance of its own (`instances/<name>`, never the top-level
//! buffer other tools may be using), with `tcp_probe` enabled and filtered on the run's ports,
//! and the `mono` trace clock so that times compare with `CLOCK_MONOTONIC`. Dropping it disables
//! the event and removes the instance; [`remove_stale`] removes the instances of runs whose
//! process is gone.
//!
//! What `tcp_probe` reports (include/trace/events/tcp.h, `TRACE_EVENT(tcp_probe)`): on every
//! incoming segment of a socket, `snd_cwnd` (segments), `ssthresh` as `tcp_current_ssthresh()`
//! — max(ssthresh, 3/4 cwnd) outside recovery, not the raw value — `srtt` in µs (the kernel keeps
//! 8 × srtt in `srtt_us`; the event shifts it), `snd_nxt`/`snd_una` (bytes, wrapping) and
//! `data_len`.

use std::fs;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// One `tcp_probe` event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeRecord {
    /// Trace timestamp: `CLOCK_MONOTONIC` with the `mono` clock, in ns.
    pub time_ns: u64,
    pub src: String,
    pub dst: String,
    pub sport: u16,
    pub dport: u16,
    /// Payload of the incoming segment (0 for a pure ACK).
    pub data_len: u32,
    pub snd_nxt: u32,
    pub snd_una: u32,
    /// Congestion window, segments.
    pub cwnd: u32,
    /// `tcp_current_ssthresh()`, segments; `u32::MAX >> 1` or more means unlimited
    /// (`TCP_INFINITE_SSTHRESH` = 0x7fffffff).
    pub ssthresh: u32,
    pub snd_wnd: u32,
    /// Smoothed RTT, µs (0 before the first sample).
    pub srtt_us: u32,
    pub rcv_wnd: u32,
}

/// One `tcp_cong_state_set` event: the socket's `icsk_ca_state` is about to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CongStateRecord {
    pub time_ns: u64,
    /// The socket's local address (IPv4), as the event prints it.
    pub src: String,
    pub sport: u16,
    pub dport: u16,
    /// The new state: `TCP_CA_Open` 0, `Disorder` 1, `CWR` 2, `Recovery` 3, `Loss` 4.
    pub state: u8,
}

/// What a trace instance recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Records {
    pub probes: Vec<ProbeRecord>,
    pub cong_states: Vec<CongStateRecord>,
}

/// Linux `TCP_INFINITE_SSTHRESH`.
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let start = text.find(key)? + key.len();
    let rest = &text[start..];
    Some(rest.split_whitespace().next().unwrap_or(""))
}

fn hex_u32(s: &str) -> Option<u32> {
    u32::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// `addr:port` → (addr, port); IPv6 addresses come in brackets.
fn split_addr(s: &str) -> Option<(String, u16)> {
    let (addr, port) = s.rsplit_once(':')?;
    Some((
        addr.trim_matches(|c| c == '[' || c == ']').to_string(),
        port.parse().ok()?,
    ))
}

fn timestamp(head: &str) -> Option<u64> {
    // The timestamp is the last field of the head: "12.345678".
    let stamp = head.split_whitespace().last()?;
    let (secs, frac) = stamp.split_once('.')?;
    let frac_ns = format!("{frac:0<9}");
    Some(secs.parse::<u64>().ok()? * 1_000_000_000 + frac_ns[..9].parse::<u64>().ok()?)
}

/// Parses a `tcp_cong_state_set` line; `None` for anything else.
pub fn parse_cong_state(line: &str) -> Option<CongStateRecord> {
    let (head, body) = line.split_once(": tcp_cong_state_set: ")?;
    Some(CongStateRecord {
        time_ns: timestamp(head)?,
        src: field(body, "saddr=")?.to_string(),
        sport: field(body, "sport=")?.parse().ok()?,
        dport: field(body, "dport=")?.parse().ok()?,
        state: field(body, "cong_state=")?.parse().ok()?,
    })
}

/// Parses a `tcp_probe` line; `None` for lines of other events and comments.
///
/// ```text
///   iperf-123 [001] ..s1. 12.345678: tcp_probe: family=AF_INET src=198.18.0.1:40000 dest=198.18.1.1:5201 mark=0 data_len=0 snd_nxt=0x1 snd_una=0x1 snd_cwnd=10 ssthresh=2147483647 snd_wnd=65535 srtt=1000 rcv_wnd=65535 sock_cookie=1 skbaddr=0 skaddr=0
/// ```
pub fn parse_probe(line: &str) -> Option<ProbeRecord> {
    let (head, body) = line.split_once(": tcp_probe: ")?;
    let time_ns = timestamp(head)?;
    let (src, sport) = split_addr(field(body, "src=")?)?;
    let (dst, dport) = split_addr(field(body, "dest=")?)?;
    Some(ProbeRecord {
        time_ns,
        src,
        dst,
        sport,
        dport,
        data_len: field(body, "data_len=")?.parse().ok()?,
        snd_nxt: hex_u32(field(body, "snd_nxt=")?)?,
        snd_una: hex_u32(field(body, "snd_una=")?)?,
        cwnd: field(body, "snd_cwnd=")?.parse().ok()?,
        ssthresh: field(body, "ssthresh=")?.parse().ok()?,
        snd_wnd: field(body, "snd_wnd=")?.parse().ok()?,
        srtt_us: field(body, "srtt=")?.parse().ok()?,
        rcv_wnd: field(body, "rcv_wnd=")?.parse().ok()?,
    })
}

/// Where tracefs is mounted, from `/proc/self/mountinfo`.
pub fn tracefs_mount() -> Option<PathBuf> {
    let info = fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        if right.split_whitespace().next()? != "tracefs" {
            return None;
        }
        left.split_whitespace().nth(4).map(PathBuf::from)
    })
}

/// The prefix of every trace instance a run creates: `startlab-<pid>-<run>`.
pub const INSTANCE_PREFIX: &str = "startlab-";

/// The events a [`Tracer`] enables.
const EVENTS: [&str; 2] = ["events/tcp/tcp_probe", "events/tcp/tcp_cong_state_set"];

/// A trace instance recording `tcp_probe` and `tcp_cong_state_set` for some ports.
///
/// A reader thread consumes `trace_pipe` while the run goes on, so a long run at a high ACK
/// rate does not overwrite its own beginning in the ring buffer.
#[derive(Debug)]
pub struct Tracer {
    instance: PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    reader: Option<std::thread::JoinHandle<io::Result<Records>>>,
}

impl Tracer {
    /// Creates `instances/startlab-<pid>-<run>` under the tracefs mount `root`, filtered on
    /// `ports` (source or destination), with the `mono` clock and `buffer_kb` KiB per CPU.
    pub fn start(root: &Path, run: &str, ports: &[u16], buffer_kb: u32) -> io::Result<Self> {
        let name = format!("{INSTANCE_PREFIX}{}-{run}", std::process::id());
        let instance = root.join("instances").join(name);
        fs::create_dir(&instance)?;
        let mut tracer = Tracer {
            instance,
            stop: Default::default(),
            reader: None,
        };
        fs::write(tracer.instance.join("trace_clock"), "mono")?;
        fs::write(
            tracer.instance.join("buffer_size_kb"),
            buffer_kb.to_string(),
        )?;
        for event in EVENTS {
            let event = tracer.instance.join(event);
            if !ports.is_empty() {
                fs::write(event.join("filter"), port_filter(ports))?;
            }
            fs::write(event.join("enable"), "1")?;
        }
        let pipe = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(tracer.instance.join("trace_pipe"))?;
        let stop = tracer.stop.clone();
        tracer.reader = Some(std::thread::spawn(move || read_pipe(pipe, &stop)));
        Ok(tracer)
    }

    /// The instance's directory.
    pub fn path(&self) -> &Path {
        &self.instance
    }

    /// Stops recording and returns everything recorded, in time order.
    pub fn records(&mut self) -> io::Result<Records> {
        fs::write(self.instance.join("tracing_on"), "0")?;
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        match self.reader.take() {
            Some(reader) => reader
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the trace reader panicked"))),
            None => Ok(Records::default()),
        }
    }

    /// Whether the per-CPU buffers overflowed (events were lost).
    pub fn overruns(&self) -> io::Result<u64> {
        let mut total = 0;
        for cpu in fs::read_dir(self.instance.join("per_cpu"))? {
            let stats = fs::read_to_string(cpu?.path().join("stats"))?;
            total += stats
                .lines()
                .find_map(|l| l.strip_prefix("overrun: "))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0);
        }
        Ok(total)
    }
}

/// Reads `trace_pipe` (opened non-blocking) until `stop` is set and the pipe is empty.
fn read_pipe(mut pipe: fs::File, stop: &std::sync::atomic::AtomicBool) -> io::Result<Records> {
    use std::io::Read;
    let mut out = Records::default();
    let mut pending = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => {}
            Ok(n) => {
                pending.extend_from_slice(&buf[..n]);
                // Parse every complete line; keep a partial one for the next read.
                let end = pending
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                for line in String::from_utf8_lossy(&pending[..end]).lines() {
                    if let Some(r) = parse_probe(line) {
                        out.probes.push(r);
                    } else if let Some(r) = parse_cong_state(line) {
                        out.cong_states.push(r);
                    }
                }
                pending.drain(..end);
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(out);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        for event in EVENTS {
            let _ = fs::write(self.instance.join(event).join("enable"), "0");
        }
        let _ = fs::remove_dir(&self.instance);
    }
}

/// A trace filter for the events of `ports` (as source or destination): runs of consecutive
/// ports become ranges, so a run with thousands of connections still has a short filter.
pub fn port_filter(ports: &[u16]) -> String {
    let mut sorted = ports.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut ranges: Vec<(u16, u16)> = Vec::new();
    for p in sorted {
        match ranges.last_mut() {
            Some((_, hi)) if *hi + 1 == p => *hi = p,
            _ => ranges.push((p, p)),
        }
    }
    ranges
        .iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                format!("sport == {lo} || dport == {lo}")
            } else {
                format!("(sport >= {lo} && sport <= {hi}) || (dport >= {lo} && dport <= {hi})")
            }
        })
        .collect::<Vec<_>>()
        .join(" || ")
}

/// Removes the trace instances left by runs whose process no longer exists (a run killed with
/// SIGKILL cannot remove its own). Returns the names removed.
pub fn remove_stale(root: &Path) -> io::Result<Vec<String>> {
    let mut removed = Vec::new();
    for entry in fs::read_dir(root.join("instances"))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(INSTANCE_PREFIX) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let path = root.join("instances").join(&name);
        for event in EVENTS {
            let _ = fs::write(path.join(event).join("enable"), "0");
        }
        fs::remove_dir(&path)?;
        removed.push(name);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_filters_use_ranges() {
        assert_eq!(port_filter(&[7]), "sport == 7 || dport == 7");
        assert_eq!(
            port_filter(&[12, 10, 11, 20]),
            "(sport >= 10 && sport <= 12) || (dport >= 10 && dport <= 12) || sport == 20 || dport == 20"
        );
    }

    #[test]
    fn a_probe_line_is_read_field_by_field() {
        let line = "          <idle>-0       [001] ..s1.  1234.000567: tcp_probe: family=AF_INET src=198.18.0.1:40000 dest=198.18.1.1:5201 mark=0x0 data_len=0 snd_nxt=0x2da1 snd_una=0x16d1 snd_cwnd=10 ssthresh=2147483647 snd_wnd=64256 srtt=20345 rcv_wnd=65160 sock_cookie=4 skbaddr=00000000a1 skaddr=00000000b2";
        let r = parse_probe(line).unwrap();
        assert_eq!(r.time_ns, 1_234_000_567_000);
        assert_eq!((r.src.as_str(), r.sport), ("198.18.0.1", 40000));
        assert_eq!((r.dst.as_str(), r.dport), ("198.18.1.1", 5201));
        assert_eq!((r.snd_nxt, r.snd_una), (0x2da1, 0x16d1));
        assert_eq!(
            (r.cwnd, r.ssthresh, r.srtt_us),
            (10, INFINITE_SSTHRESH, 20345)
        );
        assert_eq!((r.snd_wnd, r.rcv_wnd, r.data_len), (64256, 65160, 0));
    }

    #[test]
    fn ipv6_addresses_and_other_events_are_handled() {
        let line = "x-1 [000] ..... 5.5: tcp_probe: family=AF_INET6 src=[fd00::1]:1 dest=[fd00::2]:2 mark=0x0 data_len=1448 snd_nxt=0x1 snd_una=0x1 snd_cwnd=4 ssthresh=7 snd_wnd=1 srtt=9 rcv_wnd=1 sock_cookie=1 skbaddr=0 skaddr=0";
        let r = parse_probe(line).unwrap();
        assert_eq!((r.src.as_str(), r.dst.as_str()), ("fd00::1", "fd00::2"));
        assert_eq!(r.time_ns, 5_500_000_000);
        assert_eq!(r.data_len, 1448);
        assert!(parse_probe("x-1 [000] ..... 5.5: tcp_retransmit_skb: skbaddr=0").is_none());
        assert!(parse_probe("# tracer: nop").is_none());
    }

    #[test]
    fn a_cong_state_line_is_read() {
        let line = "  x-1 [000] ..s2. 7.000001: tcp_cong_state_set: family=AF_INET sport=40000 dport=5201 saddr=198.18.0.1 daddr=198.18.1.1 saddrv6=::ffff:198.18.0.1 daddrv6=::ffff:198.18.1.1 cong_state=3";
        let r = parse_cong_state(line).unwrap();
        assert_eq!(
            (r.time_ns, r.src.as_str(), r.sport, r.dport, r.state),
            (7_000_001_000, "198.18.0.1", 40000, 5201, 3)
        );
        assert!(parse_cong_state("x-1 [000] ..... 5.5: tcp_probe: family=AF_INET").is_none());
    }
}

/// tracefs, mounted for the run if it was not.
#[derive(Debug)]
pub struct Tracefs {
    pub root: PathBuf,
    /// Whether this process mounted it (and unmounts it when dropped).
    mounted_here: bool,
}

impl Tracefs {
    /// The existing tracefs mount, or a new one at `/sys/kernel/tracing` that is unmounted again
    /// when the value is dropped, leaving the machine as it was. (The kernel runner calls this
    /// in a mount namespace of its own, where the mount is private to it anyway.)
    pub fn ensure() -> io::Result<Self> {
        if let Some(root) = tracefs_mount() {
            return Ok(Tracefs {
                root,
                mounted_here: false,
            });
        }
        let root = PathBuf::from("/sys/kernel/tracing");
        let target = std::ffi::CString::new("/sys/kernel/tracing").unwrap();
        let fstype = std::ffi::CString::new("tracefs").unwrap();
        // SAFETY: the strings are valid and NUL-terminated; no data argument.
        let rc = unsafe {
            libc::mount(
                fstype.as_ptr(),
                target.as_ptr(),
                fstype.as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Tracefs {
            root,
            mounted_here: true,
        })
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if self.mounted_here {
            let target = std::ffi::CString::new(self.root.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
        }
    }
}
