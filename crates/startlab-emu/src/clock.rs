//! The clock of the kernel world and what limits its accuracy on a virtual machine.
//!
//! Times are `CLOCK_MONOTONIC` nanoseconds, the clock of the kernel's trace records (the
//! `mono` trace clock), so packets, ACK records and connection events share one time line.

use std::io::{self, Write};
use std::os::fd::RawFd;

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC`, ns.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// `CLOCK_REALTIME`, ns (the clock of socket receive stamps, `SO_TIMESTAMPNS`).
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// Waits until one of `fds` is readable or `timeout_ns` has passed (`ppoll`, ns resolution).
/// Returns whether a descriptor is readable.
pub fn poll_readable(fds: &mut [libc::pollfd], timeout_ns: u64) -> io::Result<bool> {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    for p in fds.iter_mut() {
        p.revents = 0;
    }
    // SAFETY: `fds` is a live array of its length; no signal mask change.
    let rc = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(rc > 0)
}

/// Holds `/dev/cpu_dma_latency` at 0 µs while alive: the CPUs stay out of deep idle states, so
/// a timer wake-up is ~17 µs late instead of ~100 µs on this kind of VM (the PM QoS interface;
/// the request ends when the file is closed).
pub struct WakeLatency {
    _file: Option<std::fs::File>,
}

impl WakeLatency {
    /// Best effort: without the file (or the right to open it) nothing is held.
    pub fn hold_zero() -> WakeLatency {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/cpu_dma_latency")
            .and_then(|mut f| f.write_all(&0i32.to_ne_bytes()).map(|_| f))
            .ok();
        WakeLatency { _file: file }
    }

    pub fn held(&self) -> bool {
        self._file.is_some()
    }
}

/// Time the hypervisor ran something else while this machine's CPUs wanted to run, summed
/// over the CPUs (`steal` of the `cpu` line of `/proc/stat`), ns.
pub fn steal_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: u64 = line.split_whitespace().nth(8)?.parse().ok()?;
    // SAFETY: sysconf has no side effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(ticks * 1_000_000_000 / hz)
}

/// Pins the calling thread to `cpu` (best effort; false if the machine refuses).
pub fn pin_to_cpu(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Runs the calling thread under `SCHED_FIFO` at `priority` (best effort).
pub fn realtime(priority: i32) -> bool {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: the calling thread's own scheduling parameters.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

/// Sets `O_NONBLOCK` on `fd`.
pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_moves_forward_and_steal_is_readable() {
        let a = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = monotonic_ns();
        assert!(b - a >= 2_000_000, "{}", b - a);
        // Every Linux has the steal column (0 on bare metal).
        assert!(steal_ns().is_some());
    }

    #[test]
    fn poll_times_out_at_the_requested_time() {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: a pipe into a live array of two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let mut p = [libc::pollfd {
            fd: fds[0],
            events: libc::POLLIN,
            revents: 0,
        }];
        let t0 = monotonic_ns();
        assert!(!poll_readable(&mut p, 3_000_000).unwrap());
        assert!(monotonic_ns() - t0 >= 3_000_000);
        // SAFETY: closing the pipe's two ends, owned here.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }
}
