//! The tracer on a real kernel TCP transfer, over loopback in a network namespace of the test's
//! own. Needs root: `make test-kernel`.

mod common;

use common::is_root;
use startlab_kernel::tcpinfo::tcp_info;
use startlab_kernel::trace::{Tracefs, Tracer, INFINITE_SSTHRESH};
use startlab_kernel::traffic::{connect_with, enter, Host};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::path::PathBuf;
use std::process::Command;

/// A namespace with only loopback, deleted when dropped.
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
        let ok = Command::new("ip")
            .args(["-n", name, "link", "set", "lo", "up"])
            .status()
            .unwrap()
            .success();
        assert!(ok, "lo up");
        ns
    }

    fn host(&self) -> Host {
        Host {
            name: "lo".into(),
            netns: PathBuf::from(format!("/var/run/netns/{}", self.0)),
            addr: Ipv4Addr::LOCALHOST,
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

#[test]
#[ignore = "kernel: needs root, network namespaces and tracefs"]
fn kernel_tcp_probe_records_a_loopback_transfer() {
    if !is_root() {
        eprintln!("skipped: not root");
        return;
    }
    let fs = Tracefs::ensure().expect("tracefs");
    let ns = Netns::new(&format!("startlab-{}-trace", std::process::id()));
    let port = 45_000 + (std::process::id() % 1000) as u16;
    let mut tracer = Tracer::start(&fs.root, "trace-test", &[port], 4096).expect("trace instance");
    let instance = tracer.path().to_path_buf();
    const BYTES: usize = 4 << 20;
    let (listening, ready) = std::sync::mpsc::channel();
    let server = {
        let host = ns.host();
        std::thread::spawn(move || {
            enter(&host).unwrap();
            let l = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).unwrap();
            listening.send(()).unwrap();
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
    ready.recv().unwrap();
    let client = {
        let host = ns.host();
        std::thread::spawn(move || {
            enter(&host).unwrap();
            let local = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port + 1);
            let remote = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
            let mut s = connect_with("cubic", local, remote).unwrap();
            s.write_all(&vec![7u8; BYTES]).unwrap();
            // Until everything is acknowledged: all the bytes, not only what is out (nothing
            // may be out for a moment while the rest still waits in the send queue).
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            loop {
                let (info, _) = tcp_info(&s).unwrap();
                let all_acked = info.bytes_acked > BYTES as u64 && info.unacked == 0;
                if all_acked || std::time::Instant::now() > deadline {
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
    // The sender's records: from its port to the server's.
    let sender: Vec<_> = records.probes.iter().filter(|r| r.dport == port).collect();
    assert!(sender.len() > 10, "{} records", sender.len());
    assert!(sender.iter().all(|r| r.cwnd >= 1));
    assert!(sender.iter().any(|r| r.srtt_us > 0));
    // Slow start opens with an unlimited ssthresh (HyStart may end it later, even on loopback).
    assert_eq!(sender[0].ssthresh, INFINITE_SSTHRESH);
}
