//! Two network namespaces joined by a veth pair, for the kernel tests: 198.18.0.1 and
//! 198.18.0.2, removed (with the pair) when dropped.

#![allow(dead_code)]

use startlab_kernel::traffic::Host;
use std::path::PathBuf;
use std::process::Command;

pub fn is_root() -> bool {
    // SAFETY: no arguments, no side effects.
    unsafe { libc::geteuid() == 0 }
}

pub struct Pair {
    pub names: [String; 2],
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Pair {
    pub fn new(tag: &str) -> Pair {
        let base = format!("startlab-{}-{tag}", std::process::id());
        let names = [format!("{base}-a"), format!("{base}-b")];
        let pair = Pair { names };
        for n in &pair.names {
            ip(&["netns", "add", n]);
            ip(&["-n", n, "link", "set", "lo", "up"]);
        }
        let [a, b] = &pair.names;
        ip(&[
            "-n", a, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1", "netns", b,
        ]);
        ip(&["-n", a, "addr", "add", "198.18.0.1/24", "dev", "veth0"]);
        ip(&["-n", b, "addr", "add", "198.18.0.2/24", "dev", "veth1"]);
        ip(&["-n", a, "link", "set", "veth0", "up"]);
        ip(&["-n", b, "link", "set", "veth1", "up"]);
        pair
    }

    pub fn host(&self, i: usize) -> Host {
        Host {
            name: format!("h{i}"),
            netns: PathBuf::from(format!("/var/run/netns/{}", self.names[i])),
            addr: format!("198.18.0.{}", i + 1).parse().unwrap(),
        }
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// `run`, waiting up to fifteen minutes while another kernel run (another test of this binary, or
/// another process) holds the machine.
pub fn run_waiting(
    s: &startlab_core::scenario::ResolvedScenario,
    options: &startlab_kernel::run::RunOptions,
) -> Result<startlab_kernel::run::KernelRun, startlab_kernel::run::KernelError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(900);
    loop {
        match startlab_kernel::run::run(s, options) {
            Err(startlab_kernel::run::KernelError::Unavailable(m))
                if m.contains("another kernel run holds the machine")
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            other => return other,
        }
    }
}
