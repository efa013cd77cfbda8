//! The emulator: the scenario's network, driven by the real clock, between real hosts.
//!
//! Every host of the scenario is attached by a datagram descriptor (its TUN device) and sits on
//! one of two sides (a dumbbell's senders and receivers). One thread per side reads the IPv4
//! packets its hosts write, offers each to the first link of its route at the instant it was
//! read, and walks it along the route: the simulator's [`Link`] computes at admission when the
//! packet arrives at the far end (start = max(arrival, link free), + size × 8 / rate, + delay;
//! the queue discipline and the random loss are the simulator's own), and the thread writes
//! the packet into the destination's TUN device at that instant. A thread sleeps until
//! `spin` before its next departure and then polls, so that departures are late by
//! microseconds; how late each packet left is recorded ([`Lateness`]).
//!
//! The two sides' routes use disjoint links (checked at start), so each link is only ever
//! offered packets by one thread, in time order: a thread handles every departure that is due
//! before it reads, and stamps a packet with the time it read it. Writing into a TUN device
//! runs the receiving host's TCP synchronously; one thread per side keeps a slow write (a long
//! SACK scoreboard walk) from delaying the other direction.

use crate::clock::{self, monotonic_ns, poll_readable, WakeLatency};
use crate::lateness::Lateness;
use startlab_core::measure::Recorder;
use startlab_core::net::{Admission, Ecn, LinkId, Network, NodeId, Packet};
use startlab_core::time::{Duration, Time};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// A host of the network attached to the emulator.
#[derive(Debug)]
pub struct Attachment {
    pub node: NodeId,
    pub addr: Ipv4Addr,
    /// A datagram descriptor carrying bare IPv4 packets (a TUN device, or one end of a
    /// `SOCK_DGRAM` socket pair in tests); made non-blocking by the emulator.
    pub fd: OwnedFd,
    /// 0 or 1: the thread that reads this host's packets.
    pub side: usize,
}

#[derive(Clone, Debug)]
pub struct EmulatorConfig {
    /// Poll without sleeping for the last `spin` before a departure (a sleep wakes late).
    pub spin: Duration,
    /// Run the forwarding threads under `SCHED_FIFO` at this priority. On a 2-vCPU VM busy
    /// with a build, this took the p99 lateness at 100 Mbit/s from 4 ms to 41 µs
    /// (docs/kernel.md).
    pub realtime: Option<i32>,
    /// Pin side k's thread to CPU k (modulo the CPUs there are).
    pub pin: bool,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            spin: Duration::from_micros(30),
            realtime: Some(50),
            pin: true,
        }
    }
}

/// What one side's thread did.
#[derive(Clone, Debug, Default)]
pub struct SideReport {
    /// Packets read from this side's hosts.
    pub read_packets: u64,
    /// Packets written into the other side's hosts, and how late each left.
    pub delivered_packets: u64,
    pub lateness: Lateness,
    /// Packets refused by a queue or lost on the wire, on this side's links.
    pub dropped_packets: u64,
    pub lost_packets: u64,
    /// Packets that were not IPv4, or not between a pair that sends to each other (dropped).
    pub foreign_packets: u64,
    pub write_errors: u64,
    /// The first error that ended the thread early, if any.
    pub error: Option<String>,
}

/// A finished emulation: the links with their counters, the recorder with the queue series and
/// the windows, and each side's report.
pub struct EmulatorReport {
    pub network: Network,
    pub recorder: Recorder,
    pub sides: Vec<SideReport>,
    /// Hypervisor steal over the emulation, summed over CPUs (`/proc/stat`).
    pub steal_ns: Option<u64>,
    /// Whether `/dev/cpu_dma_latency` was held at 0 during the emulation.
    pub wake_latency_held: bool,
}

impl EmulatorReport {
    /// Every side's lateness in one histogram.
    pub fn lateness(&self) -> Lateness {
        let mut all = Lateness::default();
        for s in &self.sides {
            all.merge(&s.lateness);
        }
        all
    }
}

/// What both threads share: the links, the recorder, the utilization windows' marks.
struct Shared {
    net: Network,
    recorder: Recorder,
    /// Per link, the window marks (time, window) not yet told, in time order.
    marks: Vec<VecDeque<(Time, u32)>>,
}

impl Shared {
    fn empty() -> Shared {
        Shared {
            net: Network::default(),
            recorder: Recorder::new(Default::default(), 0, Time::ZERO),
            marks: Vec::new(),
        }
    }

    /// Tells the windows of `link` every mark up to `now` (before anything is admitted later).
    fn marks_until(&mut self, link: LinkId, now: Time) {
        while let Some(&(t, i)) = self.marks[link as usize].front() {
            if t > now {
                break;
            }
            self.marks[link as usize].pop_front();
            self.recorder.on_window_mark(i, t, &mut self.net);
        }
    }
}

pub struct Emulator {
    threads: Vec<JoinHandle<SideReport>>,
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<Shared>>,
    /// The attachments' descriptors, closed after the threads have ended.
    _fds: Vec<OwnedFd>,
    steal_at_start: Option<u64>,
    wake: WakeLatency,
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // A poisoned lock means a forwarding thread panicked; its state is still consistent enough
    // to report (the panic is reported by the join).
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// The side whose packets each link carries, given the hosts' sides and the pairs (source,
/// destination) that send to each other; or the first link both sides' routes would cross.
fn ownership(
    net: &Network,
    sides: &[(NodeId, usize)],
    pairs: &[(NodeId, NodeId)],
) -> Result<Vec<usize>, String> {
    const NONE: usize = usize::MAX;
    let side_of: HashMap<NodeId, usize> = sides.iter().copied().collect();
    let mut owner = vec![NONE; net.links.len()];
    for &(a, b) in pairs {
        let (Some(&side), Some(&other)) = (side_of.get(&a), side_of.get(&b)) else {
            return Err(format!(
                "{} and {} must both be attached to the emulator",
                net.nodes[a as usize].name, net.nodes[b as usize].name
            ));
        };
        if side == other {
            return Err(format!(
                "{} and {} are on the same side; the emulator forwards between its two sides",
                net.nodes[a as usize].name, net.nodes[b as usize].name
            ));
        }
        for l in net.path(a, b).unwrap_or_default() {
            let o = &mut owner[l as usize];
            if *o != NONE && *o != side {
                return Err(format!(
                    "link {} is on routes of both sides; the emulator needs the two directions on disjoint links",
                    net.link_names[l as usize]
                ));
            }
            *o = side;
        }
    }
    // Links no route crosses carry nothing; their windows are told by side 0.
    Ok(owner
        .into_iter()
        .map(|o| if o == NONE { 0 } else { o })
        .collect())
}

/// Whether the emulator can forward between the hosts `sides` (node, side 0 or 1) over `net`
/// for the pairs that send to each other: no link may be on routes of both sides. The error
/// says which link is.
pub fn check_sides(
    net: &Network,
    sides: &[(NodeId, usize)],
    pairs: &[(NodeId, NodeId)],
) -> Result<(), String> {
    ownership(net, sides, pairs).map(|_| ())
}

impl Emulator {
    /// Starts forwarding between `hosts` over `net`, for the `pairs` (source, destination) that
    /// send to each other (a packet between any other two hosts is dropped). Time 0 of the
    /// links and the recorder is `t0_ns` on the monotonic clock; the threads stop by themselves
    /// at `end`.
    pub fn start(
        net: Network,
        recorder: Recorder,
        hosts: Vec<Attachment>,
        pairs: &[(NodeId, NodeId)],
        config: EmulatorConfig,
        t0_ns: u64,
        end: Time,
    ) -> io::Result<Emulator> {
        if let Some(h) = hosts.iter().find(|h| h.side > 1) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "host {} is on side {}; there are sides 0 and 1",
                    h.addr, h.side
                ),
            ));
        }
        let sides: Vec<(NodeId, usize)> = hosts.iter().map(|h| (h.node, h.side)).collect();
        let owner = ownership(&net, &sides, pairs)
            .map_err(|m| io::Error::new(io::ErrorKind::InvalidInput, m))?;
        let allowed: std::collections::HashSet<(NodeId, NodeId)> = pairs.iter().copied().collect();
        for h in &hosts {
            clock::set_nonblocking(h.fd.as_raw_fd())?;
        }
        let mut marks = vec![VecDeque::new(); net.links.len()];
        let mut all_marks = recorder.window_marks();
        all_marks.sort_by_key(|&(t, i)| (t, i));
        for (t, i) in all_marks {
            marks[recorder.window_link(i) as usize].push_back((t, i));
        }
        let mut out = vec![None; net.nodes.len()];
        let mut by_addr = HashMap::new();
        for h in &hosts {
            out[h.node as usize] = Some((h.fd.as_raw_fd(), h.side));
            by_addr.insert(u32::from(h.addr), h.node);
        }
        let interval = recorder.interval();
        let sampled: Vec<Vec<LinkId>> = (0..2)
            .map(|side| {
                (0..net.links.len() as LinkId)
                    .filter(|&l| owner[l as usize] == side && recorder.samples_queue(l))
                    .collect()
            })
            .collect();
        let owned: Vec<Vec<LinkId>> = (0..2)
            .map(|side| {
                (0..net.links.len() as LinkId)
                    .filter(|&l| owner[l as usize] == side)
                    .collect()
            })
            .collect();
        let links = net.links.len();
        let shared = Arc::new(Mutex::new(Shared {
            net,
            recorder,
            marks,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let wake = WakeLatency::hold_zero();
        let steal_at_start = clock::steal_ns();
        let mut threads = Vec::new();
        for side in 0..2 {
            let mut s = Side {
                index: side,
                shared: Arc::clone(&shared),
                stop: Arc::clone(&stop),
                config: config.clone(),
                t0_ns,
                end,
                ports: hosts
                    .iter()
                    .filter(|h| h.side == side)
                    .map(|h| (h.node, h.fd.as_raw_fd()))
                    .collect(),
                out: out.clone(),
                by_addr: by_addr.clone(),
                allowed: allowed.clone(),
                owned: owned[side].clone(),
                next_due: vec![None; links],
                frames: HashMap::new(),
                interval,
                // As the simulator does: at 0, then every interval up to the end.
                next_sample: interval.map(|_| Time::ZERO),
                sampled: sampled[side].clone(),
                seq: 0,
                report: SideReport::default(),
            };
            threads.push(
                std::thread::Builder::new()
                    .name(format!("startlab-emu-{side}"))
                    .spawn(move || {
                        s.run();
                        s.report
                    })?,
            );
        }
        Ok(Emulator {
            threads,
            stop,
            shared,
            _fds: hosts.into_iter().map(|h| h.fd).collect(),
            steal_at_start,
            wake,
        })
    }

    /// Stops the threads (if they have not reached the end) and returns what they recorded.
    pub fn finish(mut self) -> io::Result<EmulatorReport> {
        self.stop.store(true, Ordering::Relaxed);
        let mut sides = Vec::new();
        for t in std::mem::take(&mut self.threads) {
            sides.push(
                t.join()
                    .map_err(|_| io::Error::other("a forwarding thread panicked"))?,
            );
        }
        let steal_ns = match (self.steal_at_start, clock::steal_ns()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        let shared = std::mem::replace(&mut self.shared, Arc::new(Mutex::new(Shared::empty())));
        let shared = Arc::try_unwrap(shared)
            .map_err(|_| io::Error::other("the forwarding threads still hold the links"))?;
        let mut shared = shared.into_inner().unwrap_or_else(|e| e.into_inner());
        // Windows whose marks no thread reached (a run stopped early) are told now.
        for l in 0..shared.marks.len() {
            shared.marks_until(l as LinkId, Time::MAX);
        }
        Ok(EmulatorReport {
            network: shared.net,
            recorder: shared.recorder,
            sides,
            steal_ns,
            wake_latency_held: self.wake.held(),
        })
        // The descriptors close when `self` is dropped, after the threads have ended.
    }
}

impl Drop for Emulator {
    /// An emulator dropped without [`Emulator::finish`] (a run that failed half-way) stops its
    /// threads before their descriptors close.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in std::mem::take(&mut self.threads) {
            let _ = t.join();
        }
    }
}

/// One side's forwarding thread.
struct Side {
    index: usize,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    config: EmulatorConfig,
    t0_ns: u64,
    end: Time,
    /// The hosts this thread reads: (node, descriptor).
    ports: Vec<(NodeId, RawFd)>,
    /// Per node: its descriptor and side, if it is an attached host.
    out: Vec<Option<(RawFd, usize)>>,
    by_addr: HashMap<u32, NodeId>,
    /// The (source, destination) pairs that may send to each other.
    allowed: std::collections::HashSet<(NodeId, NodeId)>,
    /// The links only this thread offers packets to.
    owned: Vec<LinkId>,
    /// Per link: when its first packet in flight arrives at the far end, and its event-order
    /// number (the link's `next_arrival`, kept here so that waiting needs no lock: only this
    /// thread changes these links' heads).
    next_due: Vec<Option<(Time, u64)>>,
    /// The bytes of every packet on this thread's links (queued or in flight), by its
    /// event-order number.
    frames: HashMap<u64, Box<[u8]>>,
    interval: Option<Duration>,
    next_sample: Option<Time>,
    sampled: Vec<LinkId>,
    /// Event-order numbers for the links (they only matter to the simulator's event queue).
    seq: u64,
    report: SideReport,
}

/// How much of the last 100 ms a forwarding thread slept, to keep it from being RT-throttled.
#[derive(Default)]
struct SpinBudget {
    window_start: Time,
    slept_ns: u64,
}

impl SpinBudget {
    const WINDOW_NS: u64 = 100_000_000;

    /// Whether the thread may spin now: it has slept at least a fifth of the window so far (or
    /// the window is young).
    fn may_spin(&mut self, now: Time) -> bool {
        let elapsed = now.saturating_since(self.window_start).as_nanos();
        if elapsed >= Self::WINDOW_NS {
            self.window_start = now;
            self.slept_ns = 0;
            return true;
        }
        elapsed < Self::WINDOW_NS / 5 || self.slept_ns * 5 >= elapsed
    }

    fn slept(&mut self, ns: u64) {
        self.slept_ns += ns;
    }
}

/// The IPv4 destination of a packet, if it is one.
/// A hash of an IPv4 packet's addresses, protocol and (for TCP and UDP) ports: the flow
/// FQ-CoDel classifies it by.
fn flow_key(packet: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5; // FNV-1a
    let mut eat = |b: &[u8]| {
        for &x in b {
            h = (h ^ x as u32).wrapping_mul(0x0100_0193);
        }
    };
    if packet.len() < 20 {
        eat(packet);
        return h;
    }
    eat(&packet[12..20]);
    eat(&packet[9..10]);
    let ihl = (packet[0] & 0x0f) as usize * 4;
    if matches!(packet[9], 6 | 17) && packet.len() >= ihl + 4 {
        eat(&packet[ihl..ihl + 4]);
    }
    h
}

/// Sets CE in an IPv4 packet whose ECN field is ECT(0) or ECT(1), updating the header checksum
/// incrementally (RFC 1624 eqn. 3), as the kernel's `IP_ECN_set_ce` does.
fn set_ce(packet: &mut [u8]) {
    if packet.len() < 20 || packet[0] >> 4 != 4 {
        return;
    }
    let tos = packet[1];
    if !matches!(Ecn::from_bits(tos), Ecn::Ect0 | Ecn::Ect1) {
        return;
    }
    let old = u16::from_be_bytes([packet[0], tos]);
    packet[1] = tos | 3;
    let new = u16::from_be_bytes([packet[0], packet[1]]);
    let check = u16::from_be_bytes([packet[10], packet[11]]);
    // HC' = ~(~HC + ~m + m')
    let mut sum = (!check) as u32 + (!old) as u32 + new as u32;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    let check = !(sum as u16);
    packet[10..12].copy_from_slice(&check.to_be_bytes());
}

fn ipv4_destination(packet: &[u8]) -> Option<u32> {
    (packet.len() >= 20 && packet[0] >> 4 == 4)
        .then(|| u32::from_be_bytes([packet[16], packet[17], packet[18], packet[19]]))
}

impl Side {
    fn now(&self) -> Time {
        Time::from_nanos(monotonic_ns().saturating_sub(self.t0_ns))
    }

    fn run(&mut self) {
        if self.config.pin {
            // SAFETY: sysconf has no side effects.
            let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
            clock::pin_to_cpu(self.index % cpus);
        }
        if let Some(p) = self.config.realtime {
            clock::realtime(p);
        }
        let mut pollfds: Vec<libc::pollfd> = self
            .ports
            .iter()
            .map(|&(_, fd)| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let mut buf = vec![0u8; 65536];
        let spin = self.config.spin.as_nanos();
        let mut budget = SpinBudget::default();
        loop {
            let now = self.now();
            if now >= self.end || self.stop.load(Ordering::Relaxed) {
                break;
            }
            self.depart_until(now);
            self.sample_until(now);
            let next = self
                .next_departure()
                .unwrap_or(Time::MAX)
                .min(self.next_sample.unwrap_or(Time::MAX))
                .min(self.end);
            let now = self.now();
            let wait = next.saturating_since(now).as_nanos();
            // Spinning is allowed while this thread has slept for a fifth of the current
            // window: a SCHED_FIFO thread that never sleeps is stopped for 50 ms a second by
            // the kernel's RT throttling (sched_rt_runtime_us), which is far worse than
            // waking a few microseconds late.
            let spin = if budget.may_spin(now) { spin } else { 0 };
            if wait > spin {
                // At most 10 ms, to see a stop request.
                let timeout = (wait - spin).min(10_000_000);
                let slept_from = monotonic_ns();
                if pollfds.is_empty() {
                    std::thread::sleep(std::time::Duration::from_nanos(timeout));
                } else if let Err(e) = poll_readable(&mut pollfds, timeout) {
                    self.report.error = Some(format!("poll: {e}"));
                    break;
                }
                budget.slept(monotonic_ns() - slept_from);
            }
            if let Err(e) = self.read_all(&mut buf) {
                self.report.error = Some(e.to_string());
                break;
            }
        }
        // Marks and samples up to where this thread got, for the links it owns.
        let until = self.now().min(self.end);
        let shared = Arc::clone(&self.shared);
        let mut sh = lock(&shared);
        for &l in &self.owned {
            sh.marks_until(l, until);
        }
        self.sample_before(&mut sh, until);
    }

    /// The earliest departure on this side's links.
    fn next_departure(&self) -> Option<Time> {
        self.owned
            .iter()
            .filter_map(|&l| self.next_due[l as usize].map(|p| p.0))
            .min()
    }

    /// Moves every packet due by `now`: on to its next link, or out into its destination.
    fn depart_until(&mut self, now: Time) {
        loop {
            let Some((t, l)) = self
                .owned
                .iter()
                .filter_map(|&l| self.next_due[l as usize].map(|p| (p.0, l)))
                .min()
            else {
                return;
            };
            if t > now {
                return;
            }
            let (_, seq) = self.next_due[l as usize].expect("a due packet");
            let shared = Arc::clone(&self.shared);
            let mut sh = lock(&shared);
            let link = &mut sh.net.links[l as usize];
            let delivered = link.head_delivered();
            let packet = link.pop_arrival(t);
            self.next_due[l as usize] = link.next_arrival();
            let at = link.to;
            self.discard(&mut sh, l);
            if !delivered {
                continue; // lost on the wire: its frame went with `discard` when it was sent
            }
            let mut frame = self
                .frames
                .remove(&seq)
                .expect("the frame of a packet in flight");
            if packet.ecn == Ecn::Ce {
                set_ce(&mut frame);
            }
            if at == packet.dst {
                drop(sh);
                self.deliver(at, t, &frame);
            } else {
                let next = sh.net.route(at, packet.dst);
                self.admit(&mut sh, next, t, packet, frame);
            }
        }
    }

    /// Forgets the frames of the packets an AQM on `link` dropped, or sent and the wire lost.
    fn discard(&mut self, sh: &mut Shared, link: LinkId) {
        let link = &mut sh.net.links[link as usize];
        if !link.has_discarded() {
            return;
        }
        let (frames, report) = (&mut self.frames, &mut self.report);
        link.take_discarded(|_, _, seq| {
            frames.remove(&seq);
            report.dropped_packets += 1;
        });
    }

    fn deliver(&mut self, node: NodeId, due: Time, frame: &[u8]) {
        let Some((fd, _)) = self.out[node as usize] else {
            self.report.foreign_packets += 1;
            return;
        };
        let late = self.now().saturating_since(due).as_nanos();
        // SAFETY: writing a live buffer of its length to a descriptor the emulator holds.
        let rc = unsafe { libc::write(fd, frame.as_ptr().cast(), frame.len()) };
        if rc < 0 {
            self.report.write_errors += 1;
        } else {
            self.report.delivered_packets += 1;
            self.report.lateness.record(late);
        }
    }

    /// Offers a packet to `link` at `at` (its arrival there).
    fn admit(&mut self, sh: &mut Shared, link: LinkId, at: Time, packet: Packet, frame: Box<[u8]>) {
        sh.marks_until(link, at);
        self.sample_before(sh, at);
        self.seq += 1;
        let l = &mut sh.net.links[link as usize];
        match l.enqueue(at, packet, self.seq) {
            Admission::Scheduled { .. } | Admission::Queued { .. } => {
                self.frames.insert(self.seq, frame);
                self.next_due[link as usize] = l.next_arrival();
            }
            Admission::Dropped => self.report.dropped_packets += 1,
            Admission::Lost => self.report.lost_packets += 1,
        }
        self.discard(sh, link);
        if sh.recorder.samples_every_packet(link) {
            let Shared { net, recorder, .. } = sh;
            recorder.record_queue(at, link, &mut net.links[link as usize]);
        }
    }

    /// A packet read from host `src` at `at`.
    fn ingress(&mut self, src: NodeId, bytes: &[u8], at: Time) {
        let dst = ipv4_destination(bytes).and_then(|a| self.by_addr.get(&a).copied());
        let Some(dst) = dst.filter(|&d| self.allowed.contains(&(src, d))) else {
            self.report.foreign_packets += 1;
            return;
        };
        // The link serializes the whole IP packet; FQ-CoDel's flow is the 5-tuple's hash (the
        // kernel's skb_get_hash, in spirit).
        let packet = Packet {
            ecn: Ecn::from_bits(bytes[1]),
            ..Packet::datagram(flow_key(bytes), src, dst, bytes.len() as u32, 0, at)
        };
        let shared = Arc::clone(&self.shared);
        let mut sh = lock(&shared);
        let first = sh.net.route(src, dst);
        self.admit(&mut sh, first, at, packet, bytes.into());
    }

    /// Reads every packet this side's hosts have written, each stamped when it was read.
    fn read_all(&mut self, buf: &mut [u8]) -> io::Result<()> {
        for i in 0..self.ports.len() {
            let (node, fd) = self.ports[i];
            loop {
                // SAFETY: reading into a live buffer of its length.
                let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
                if n < 0 {
                    let e = io::Error::last_os_error();
                    match e.kind() {
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => break,
                        _ => return Err(io::Error::new(e.kind(), format!("read: {e}"))),
                    }
                }
                if n == 0 {
                    break;
                }
                let at = self.now();
                // Everything due before this packet was read leaves first.
                self.depart_until(at);
                self.report.read_packets += 1;
                self.ingress(node, &buf[..n as usize], at);
            }
        }
        Ok(())
    }

    /// Records the queues of this side's sampled links at every sampling instant up to `t`.
    /// Called before anything is admitted to this side's links after `t` (and when the thread
    /// wakes), so that the occupancy at each instant is exact, as in the simulator.
    fn sample_before(&mut self, sh: &mut Shared, t: Time) {
        let Some(interval) = self.interval else {
            return;
        };
        while let Some(tick) = self.next_sample.filter(|&tick| tick <= t) {
            let Shared { net, recorder, .. } = sh;
            for &l in &self.sampled {
                recorder.record_queue(tick, l, &mut net.links[l as usize]);
            }
            let next = tick + interval;
            self.next_sample = (next <= self.end).then_some(next);
        }
    }

    fn sample_until(&mut self, now: Time) {
        if self.next_sample.is_some_and(|tick| tick <= now) {
            let shared = Arc::clone(&self.shared);
            let mut sh = lock(&shared);
            self.sample_before(&mut sh, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IPv4 header checksum computed from scratch (RFC 791).
    fn checksum(h: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for (i, pair) in h[..20].chunks(2).enumerate() {
            if i != 5 {
                sum += u16::from_be_bytes([pair[0], pair[1]]) as u32;
            }
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    fn header(tos: u8) -> Vec<u8> {
        let mut h = vec![
            0x45, tos, 0x05, 0xdc, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0, 0, 198, 18, 0, 1, 198,
            18, 4, 1, 0x9c, 0x40, 0x13, 0x88,
        ];
        let c = checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    }

    #[test]
    fn set_ce_marks_ect_packets_and_keeps_the_checksum_valid() {
        for tos in [0x01u8, 0x02, 0xb9, 0xba] {
            let mut h = header(tos);
            set_ce(&mut h);
            assert_eq!(h[1], tos | 3, "tos {tos:#x}");
            assert_eq!(
                u16::from_be_bytes([h[10], h[11]]),
                checksum(&h),
                "tos {tos:#x}"
            );
        }
        // Not-ECT and CE packets are left alone.
        for tos in [0x00u8, 0x03, 0xb8] {
            let mut h = header(tos);
            let before = h.clone();
            set_ce(&mut h);
            assert_eq!(h, before);
        }
    }

    #[test]
    fn the_flow_key_follows_the_five_tuple() {
        let a = header(0);
        let mut other_port = a.clone();
        other_port[21] ^= 1;
        let mut other_tos = a.clone();
        other_tos[1] = 0x02;
        assert_eq!(flow_key(&a), flow_key(&other_tos));
        assert_ne!(flow_key(&a), flow_key(&other_port));
    }
}
