//! The tracer on a real kernel TCP transfer, over loopback in a network namespace of the test's
//! own. Needs root: `cargo test -p startlab-kernel -- --ignored kernel`.

use startlab_kernel::tcpinfo::tcp_info;
use startlab_kernel::trace::{Tracefs, Tracer, INFINITE_SSTHRESH};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::Command;

/// A namespace that is deleted when dropped.
struct Netns(String);

impl Netns {
    fn new(name: &str) -> Netns {
        let ok = Command::new("ip")
            .args(["netns", "add", name])
            .status()
            .unwrap()
            .success();
        assert!(ok, "ip netns add {name}");
        let ns = Netns(name.to_string());
        ns.exec(&["ip", "link", "set", "lo", "up"]);
        ns
    }
    fn exec(&self, args: &[&str]) {
        let ok = Command::new("ip")
            .args(["netns", "exec", &self.0])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "{args:?}");
    }
    /// Moves the calling thread into the namespace.
    fn enter(&self) {
        let f = std::fs::File::open(format!("/var/run/netns/{}", self.0)).unwrap();
        // SAFETY: a valid namespace file descriptor; only this thread changes namespace.
        assert_eq!(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) }, 0);
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn set_congestion(s: &TcpStream, name: &str) {
    // SAFETY: a valid socket and a buffer of the given length.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "TCP_CONGESTION {name}");
}

#[test]
#[ignore = "kernel: needs root, network namespaces and tracefs"]
fn kernel_tcp_probe_records_a_loopback_transfer() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: not root");
        return;
    }
    let fs = Tracefs::ensure().expect("tracefs");
    let ns = Netns::new(&format!("startlab-{}-trace", std::process::id()));
    let port = 45_000 + (std::process::id() % 1000) as u16;
    let mut tracer = Tracer::start(&fs.root, "trace-test", &[port], 4096).expect("trace instance");
    let instance = tracer.path().to_path_buf();
    const BYTES: usize = 4 << 20;
    let server = {
        let name = ns.0.clone();
        std::thread::spawn(move || {
            Netns(name.clone()).enter_only();
            let l = TcpListener::bind(("127.0.0.1", port)).unwrap();
            let (mut c, _) = l.accept().unwrap();
            let mut buf = vec![0u8; 1 << 16];
            let mut n = 0;
            while n < BYTES {
                let k = c.read(&mut buf).unwrap();
                if k == 0 {
                    break;
                }
                n += k;
            }
            n
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let client = {
        let name = ns.0.clone();
        std::thread::spawn(move || {
            Netns(name).enter_only();
            // The controller is chosen before connect(), so nothing is inherited from the
            // namespace's default (the pacing trap of docs/kernel.md).
            let s = socket_before_connect("cubic");
            let mut s = connect(s, port);
            s.write_all(&vec![7u8; BYTES]).unwrap();
            // Until everything is acknowledged.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            loop {
                let (info, _) = tcp_info(&s).unwrap();
                if info.unacked == 0 || std::time::Instant::now() > deadline {
                    return info;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
    };
    let info = client.join().unwrap();
    // TCP_INFO read the real counters: everything acknowledged, nothing retransmitted, and an
    // MSS and RTT that loopback gives.
    // Linux counts the SYN's sequence number in bytes_acked (tcp_snd_una_update from the ISN).
    assert_eq!(info.bytes_acked, BYTES as u64 + 1);
    assert_eq!(
        (info.unacked, info.total_retrans, info.total_rto),
        (0, 0, 0)
    );
    assert!(
        info.snd_mss > 1000 && info.rtt > 0 && info.min_rtt > 0,
        "{info:?}"
    );
    assert_eq!(info.ca_state, 0);
    assert_eq!(server.join().unwrap(), BYTES);
    let records = tracer.records().unwrap();
    drop(tracer);
    assert!(!instance.exists(), "the trace instance is removed");
    let sender: Vec<_> = records.probes.iter().filter(|r| r.dport == port).collect();
    assert!(sender.len() > 10, "{} records", sender.len());
    assert!(sender.iter().all(|r| r.cwnd >= 1));
    assert!(sender.iter().any(|r| r.srtt_us > 0));
    // Slow start opens with an unlimited ssthresh (HyStart may end it later, even on loopback).
    assert_eq!(sender[0].ssthresh, INFINITE_SSTHRESH);
}

impl Netns {
    /// Enters without owning (the namespace is deleted by its owner).
    fn enter_only(self) {
        self.enter();
        std::mem::forget(self);
    }
}

fn socket_before_connect(cc: &str) -> std::os::fd::OwnedFd {
    // SAFETY: plain socket creation.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
    assert!(fd >= 0);
    // SAFETY: fd is a new socket we own.
    let owned = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let stream = TcpStream::from(owned);
    set_congestion(&stream, cc);
    stream.into()
}

fn connect(fd: std::os::fd::OwnedFd, port: u16) -> TcpStream {
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: a valid socket and a sockaddr_in of the stated size.
    let rc = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "connect: {}", std::io::Error::last_os_error());
    TcpStream::from(fd)
}
