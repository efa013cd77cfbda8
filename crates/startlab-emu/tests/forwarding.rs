//! The emulator between socket pairs (no root needed): packets leave at the instants the
//! simulator's link computes, a DropTail queue drops exactly what overflows, and the queue
//! series and windows are recorded. Real-time: the tolerances are the timing error allowed.

use startlab_core::measure::recorder::MeasureSpec;
use startlab_core::measure::Recorder;
use startlab_core::net::{Discipline, DropTail, Limit, LinkParams, Network, NodeKind};
use startlab_core::time::{Duration, Time};
use startlab_core::units::Rate;
use startlab_emu::clock::monotonic_ns;
use startlab_emu::{Attachment, Emulator, EmulatorConfig};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

fn socket_pair() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: a socket pair into a live array of two descriptors, owned at once.
    unsafe {
        assert_eq!(
            libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM, 0, fds.as_mut_ptr()),
            0
        );
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    }
}

/// A bare IPv4 header for `dst` padded to `len` bytes.
fn ipv4(dst: [u8; 4], len: usize, id: u16) -> Vec<u8> {
    let mut p = vec![0u8; len];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[16..20].copy_from_slice(&dst);
    p
}

fn send(fd: &OwnedFd, p: &[u8]) {
    // SAFETY: a live buffer of its length.
    let n = unsafe { libc::write(fd.as_raw_fd(), p.as_ptr().cast(), p.len()) };
    assert_eq!(n, p.len() as isize);
}

/// Receives until `count` packets came or `timeout_ns` passed: (monotonic time, packet id).
/// A blocking receive, so that the time is taken when the packet is handed over (plus one
/// wake-up).
fn receive(fd: &OwnedFd, count: usize, timeout_ns: u64) -> Vec<(u64, u16)> {
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 10_000,
    };
    // SAFETY: a live timeval of its size.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    let deadline = monotonic_ns() + timeout_ns;
    let mut got = Vec::new();
    let mut buf = [0u8; 2048];
    while got.len() < count && monotonic_ns() < deadline {
        // SAFETY: a live buffer of its length.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n > 0 {
            got.push((monotonic_ns(), u16::from_be_bytes([buf[4], buf[5]])));
        }
    }
    got
}

/// Host a (198.18.0.1) → router → host b (198.18.0.2): 8 Mbit/s (1000 B in 1 ms) and 10 ms
/// to the router with a DropTail queue of `limit` packets, then 1 Gbit/s and 5 ms.
fn network(limit: u32) -> Network {
    let mut net = Network::default();
    let a = net.add_node("a", NodeKind::Host);
    let b = net.add_node("b", NodeKind::Host);
    let r = net.add_node("r", NodeKind::Router);
    let params = |mbps: u64, ms: u64, limit: u32| LinkParams {
        rate: Rate::from_mbps(mbps),
        delay: Duration::from_millis(ms),
        discipline: Discipline::DropTail(DropTail {
            limit: Limit::Packets(limit),
        }),
        loss: 0.0,
        variation: None,
    };
    net.add_link(
        a,
        r,
        params(8, 10, limit),
        params(8, 10, limit),
        "bottleneck",
        1,
    );
    net.add_link(r, b, params(1000, 5, 1000), params(1000, 5, 1000), "", 1);
    net.compute_routes();
    net
}

/// An emulator over `net` between hosts 0 (198.18.0.1, side 0) and 1 (198.18.0.2, side 1),
/// recording `spec` until `end`; returns it and the hosts' ends of their socket pairs.
fn two_hosts(net: Network, spec: MeasureSpec, end: Time) -> (Emulator, OwnedFd, OwnedFd) {
    let recorder = Recorder::new(spec, net.links.len(), end);
    let (a_emu, a_host) = socket_pair();
    let (b_emu, b_host) = socket_pair();
    let hosts = vec![
        Attachment {
            node: 0,
            addr: "198.18.0.1".parse().unwrap(),
            fd: a_emu,
            side: 0,
        },
        Attachment {
            node: 1,
            addr: "198.18.0.2".parse().unwrap(),
            fd: b_emu,
            side: 1,
        },
    ];
    let pairs = [(0, 1), (1, 0)];
    let config = EmulatorConfig::default();
    let emu = Emulator::start(net, recorder, hosts, &pairs, config, monotonic_ns(), end).unwrap();
    (emu, a_host, b_host)
}

#[test]
fn packets_leave_when_the_link_says_and_droptail_drops_the_overflow() {
    let net = network(3);
    let end = Time::ZERO + Duration::from_millis(400);
    let spec = MeasureSpec {
        interval: None,
        links: vec![0],
        windows: vec![(0, Time::ZERO, end)],
        ..MeasureSpec::default()
    };
    let (emu, a_host, b_host) = two_hosts(net, spec, end);
    // A burst of 10 packets of 1000 B at 50 ms: one is sent at once, three wait, six are dropped.
    std::thread::sleep(std::time::Duration::from_millis(50));
    let sent_at = monotonic_ns();
    for id in 0..10 {
        send(&a_host, &ipv4([198, 18, 0, 2], 1000, id));
    }
    // A packet to nobody is not forwarded.
    send(&a_host, &ipv4([10, 0, 0, 1], 100, 99));
    let got = receive(&b_host, 4, 300_000_000);
    let report = emu.finish().unwrap();
    assert_eq!(
        got.iter().map(|g| g.1).collect::<Vec<_>>(),
        [0, 1, 2, 3],
        "{got:?}"
    );
    // Packet k arrives after (k + 1) serializations of 1 ms on the first link, 10 ms, 8 µs on
    // the second and 5 ms: 16.008 + k ms after it was written (+ read and write latency).
    for (k, &(t, _)) in got.iter().enumerate() {
        let expected = sent_at + 16_008_000 + k as u64 * 1_000_000;
        let error = t as i64 - expected as i64;
        assert!(
            (-200_000..2_000_000).contains(&error),
            "packet {k}: {error} ns off"
        );
    }
    // Spacing is the serialization time: exact in the schedule, so within the emulator's and
    // this receiver's wake-up noise here (the machine may be busy with other tests).
    for w in got.windows(2) {
        let gap = (w[1].0 - w[0].0) as i64;
        assert!((gap - 1_000_000).abs() < 500_000, "gap {gap} ns");
    }
    // The emulator's own account: every packet left within 2 ms of its schedule.
    assert!(report.lateness().max_ns() < 2_000_000);
    let side = &report.sides[0];
    assert_eq!(
        (
            side.read_packets,
            side.dropped_packets,
            side.foreign_packets
        ),
        (11, 6, 1)
    );
    assert_eq!(report.network.links[0].stats.drops, 6);
    assert_eq!(report.sides[0].delivered_packets, 4);
    assert_eq!(report.lateness().count(), 4);
    // A queue row per packet offered to the sampled link; the window saw 4 ms of busy time.
    let (_, queue, windows) = report.recorder.finish(&report.network);
    assert_eq!(queue.time_ns.len(), 10);
    assert_eq!(*queue.queue_packets.iter().max().unwrap(), 3);
    let u = windows.utilization[0];
    assert!((u - 4.0 / 400.0).abs() < 1e-9, "{u}");
}

#[test]
fn routes_that_share_a_link_in_both_directions_are_refused() {
    // a - r1 - r2 - b, with x at r1 and y at r2: side 0 is {a, y}, side 1 is {b, x}.
    let mut net = Network::default();
    let host = |net: &mut Network, n: &str| net.add_node(n, NodeKind::Host);
    let (a, b, x, y) = (
        host(&mut net, "a"),
        host(&mut net, "b"),
        host(&mut net, "x"),
        host(&mut net, "y"),
    );
    let r1 = net.add_node("r1", NodeKind::Router);
    let r2 = net.add_node("r2", NodeKind::Router);
    let p = || LinkParams {
        rate: Rate::from_mbps(10),
        delay: Duration::from_millis(1),
        discipline: Discipline::DropTail(DropTail {
            limit: Limit::Packets(10),
        }),
        loss: 0.0,
        variation: None,
    };
    for (u, v) in [(a, r1), (r1, r2), (r2, b), (x, r1), (y, r2)] {
        net.add_link(u, v, p(), p(), "", 1);
    }
    net.compute_routes();
    let end = Time::ZERO + Duration::from_millis(10);
    let recorder = Recorder::new(MeasureSpec::default(), net.links.len(), end);
    let attach = |node, side, i: u8| Attachment {
        node,
        addr: std::net::Ipv4Addr::new(198, 18, 0, i),
        fd: socket_pair().0,
        side,
    };
    let hosts = || {
        vec![
            attach(a, 0, 1),
            attach(y, 0, 2),
            attach(b, 1, 3),
            attach(x, 1, 4),
        ]
    };
    let start = |pairs: &[(u32, u32)]| {
        Emulator::start(
            net.clone(),
            recorder.clone(),
            hosts(),
            pairs,
            EmulatorConfig::default(),
            monotonic_ns(),
            end,
        )
    };
    // a and b talking: each direction on its own links.
    let emu = start(&[(a, b), (b, a)]).expect("disjoint");
    emu.finish().unwrap();
    // y sending to x and b sending to a both cross r2→r1.
    let err = start(&[(y, x), (x, y), (b, a), (a, b)])
        .err()
        .expect("refused");
    assert!(
        err.to_string()
            .starts_with("link r2->r1 is on routes of both sides"),
        "{err}"
    );
}

/// A single link a → b of `rate` / 1 ms with `discipline` and random `loss`.
fn one_link(discipline: Discipline, loss: f64, rate: Rate) -> Network {
    let mut net = Network::default();
    let a = net.add_node("a", NodeKind::Host);
    let b = net.add_node("b", NodeKind::Host);
    let p = |discipline: Discipline, loss: f64| LinkParams {
        rate,
        delay: Duration::from_millis(1),
        discipline,
        loss,
        variation: None,
    };
    let back = Discipline::DropTail(DropTail {
        limit: Limit::Packets(1000),
    });
    net.add_link(a, b, p(discipline, loss), p(back, 0.0), "bottleneck", 7);
    net.compute_routes();
    net
}

/// Sends `n` packets of 1000 B from a to b, `gap_us` apart, through a fresh emulator over
/// `net`; returns the emulator's report and the ids b received.
fn blast(net: Network, n: u16, gap_us: u64) -> (startlab_emu::EmulatorReport, Vec<u16>) {
    let end = Time::ZERO + Duration::from_secs(10);
    let spec = MeasureSpec {
        interval: None,
        links: vec![0],
        ..MeasureSpec::default()
    };
    let (emu, a_host, b_host) = two_hosts(net, spec, end);
    let receiver = std::thread::spawn(move || receive(&b_host, n as usize, 3_000_000_000));
    let t0 = monotonic_ns();
    for id in 0..n {
        while monotonic_ns() < t0 + id as u64 * gap_us * 1000 {
            std::hint::spin_loop();
        }
        send(&a_host, &ipv4([198, 18, 0, 2], 1000, id));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let got = receiver.join().unwrap();
    (
        emu.finish().unwrap(),
        got.into_iter().map(|g| g.1).collect(),
    )
}

/// Replays the arrivals the emulator recorded (one queue row per packet offered, at the time
/// it was read) into a fresh core link built the same way, and returns the drop and loss
/// counters after each arrival.
fn replay(mut net: Network, times: &[i64]) -> Vec<(u64, u64)> {
    use startlab_core::net::{Packet, PacketKind, SackBlocks};
    let link = &mut net.links[0];
    times
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let p = Packet {
                flow: 0,
                src: 0,
                dst: 1,
                wire_bytes: 1000,
                kind: PacketKind::Datagram,
                seq: 0,
                rwnd_segments: 0,
                ts: Time::ZERO,
                sack: SackBlocks::default(),
                ecn: Default::default(),
                ece: false,
                cwr: false,
            };
            link.enqueue(Time::from_nanos(t as u64), p, i as u64);
            (link.stats.drops, link.stats.losses)
        })
        .collect()
}

#[test]
fn red_and_random_loss_decide_as_the_simulators_link_does_on_the_same_arrivals() {
    use startlab_core::net::{Red, RedParams};
    use startlab_core::rng::Rng;
    // 8 Mbit/s (1 ms per packet) fed at one packet per 700 µs: the queue grows, and RED starts
    // dropping early; 5 % of what it admits is lost on the wire.
    let rate = Rate::from_mbps(8);
    let red = || {
        Discipline::Red(Red::new(
            RedParams {
                limit: Limit::Packets(60),
                min_th: 5.0,
                max_th: 15.0,
                max_p: 0.1,
                w_q: 0.02,
                gentle: true,
            },
            Duration::from_millis(1),
            Rng::stream(7, 99),
        ))
    };
    let (report, got) = blast(one_link(red(), 0.05, rate), 400, 700);
    let (_, queue, _) = report.recorder.finish(&report.network);
    assert_eq!(queue.time_ns.len(), 400, "one row per packet offered");
    let emulated: Vec<(u64, u64)> = queue
        .drops
        .iter()
        .zip(&queue.losses)
        .map(|(&d, &l)| (d, l))
        .collect();
    let replayed = replay(one_link(red(), 0.05, rate), &queue.time_ns);
    assert_eq!(emulated, replayed);
    let (drops, losses) = *emulated.last().unwrap();
    assert!(drops > 10, "RED dropped {drops}");
    assert!(losses > 3, "{losses} lost on the wire");
    // Everything neither dropped nor lost arrived, in order.
    assert_eq!(got.len() as u64, 400 - drops - losses);
    assert!(got.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn periodic_queue_samples_fall_on_the_simulators_grid() {
    // Sampled every 5 ms from 0 to the end (60 ms), as the simulator samples: rows at exactly
    // 0, 5, ..., 60 ms, whatever moment the thread noticed each instant.
    let net = network(3);
    let end = Time::ZERO + Duration::from_millis(60);
    let spec = MeasureSpec {
        interval: Some(Duration::from_millis(5)),
        links: vec![0],
        ..MeasureSpec::default()
    };
    let (emu, a_host, _b_host) = two_hosts(net, spec, end);
    std::thread::sleep(std::time::Duration::from_millis(12));
    for id in 0..5 {
        send(&a_host, &ipv4([198, 18, 0, 2], 1000, id));
    }
    // Let the threads reach the end by themselves.
    std::thread::sleep(std::time::Duration::from_millis(80));
    let report = emu.finish().unwrap();
    let (_, queue, _) = report.recorder.finish(&report.network);
    let times: Vec<i64> = queue.time_ns.clone();
    let grid: Vec<i64> = (0..=12).map(|k| k * 5_000_000).collect();
    assert_eq!(times, grid);
    // The burst of 5 at 12 ms: 1 on the wire, 3 waiting, 1 dropped; a packet leaves every 1 ms,
    // so the queue is empty again by 17 ms, and before the burst it was empty.
    assert_eq!(queue.queue_packets[0..3], [0, 0, 0]);
    assert!(queue.queue_packets[3] <= 3, "{:?}", queue.queue_packets);
    assert_eq!(queue.queue_packets[5..], [0; 8]);
    assert_eq!(*queue.drops.last().unwrap(), 1);
}
