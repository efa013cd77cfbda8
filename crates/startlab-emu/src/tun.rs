//! TUN devices created inside a network namespace.
//!
//! A device is created by opening `/dev/net/tun` from a thread that has entered the namespace
//! (`setns` moves only the calling thread), so it exists only there and only while its file
//! descriptor is open: a run that dies, even by SIGKILL, leaves no device behind. It carries
//! bare IPv4 packets (`IFF_TUN | IFF_NO_PI`, no vnet header, hence no TSO), and GSO and GRO
//! are switched off (`ETHTOOL_SGSO`, `ETHTOOL_SGRO`) so that every packet TCP hands it is one
//! segment.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

/// `_IOW('T', 202, int)`: attach to (create) a TUN device (`linux/if_tun.h`).
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
/// `linux/ethtool.h`: set generic segmentation / generic receive offload.
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_SGRO: u32 = 0x2c;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    /// `ifr_flags` or `ifr_data`, depending on the request.
    data: [u8; 24],
}

impl IfReq {
    fn new(name: &str) -> io::Result<IfReq> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("device name \"{name}\": 1 to 15 bytes"),
            ));
        }
        let mut r = IfReq {
            name: [0; libc::IFNAMSIZ],
            data: [0; 24],
        };
        r.name[..name.len()].copy_from_slice(name.as_bytes());
        Ok(r)
    }
}

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

fn os_error(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Switches one ethtool feature of `name` off (the socket is in the device's namespace).
fn feature_off(sock: &OwnedFd, name: &str, cmd: u32) -> io::Result<()> {
    let mut value = EthtoolValue { cmd, data: 0 };
    let mut req = IfReq::new(name)?;
    let ptr = (&mut value as *mut EthtoolValue) as usize;
    req.data[..std::mem::size_of::<usize>()].copy_from_slice(&ptr.to_ne_bytes());
    // SAFETY: SIOCETHTOOL reads an ifreq whose data points at a live ethtool_value.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL, &mut req) } != 0 {
        return Err(os_error(&format!("ethtool {name} {cmd:#x} off")));
    }
    Ok(())
}

/// Creates the TUN device `name` in the namespace `netns` (a file such as
/// `/var/run/netns/NAME`), with GSO and GRO off; it is non-blocking and lives as long as the
/// returned descriptor.
pub fn create(netns: &Path, name: &str) -> io::Result<OwnedFd> {
    let netns = netns.to_path_buf();
    let name = name.to_string();
    // A thread of its own enters the namespace, so the caller's stays where it is.
    std::thread::spawn(move || -> io::Result<OwnedFd> {
        let ns = std::fs::File::open(&netns)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", netns.display())))?;
        // SAFETY: a namespace descriptor; only this thread changes namespace.
        if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(os_error(&format!("setns {}", netns.display())));
        }
        // SAFETY: a plain open of a device node; the descriptor is owned at once.
        let fd = unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(os_error("open /dev/net/tun"));
        }
        // SAFETY: `fd` is a new descriptor nothing else owns.
        let tun = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut req = IfReq::new(&name)?;
        req.data[..2].copy_from_slice(&(IFF_TUN | IFF_NO_PI).to_ne_bytes());
        // SAFETY: TUNSETIFF reads the ifreq it is given.
        if unsafe { libc::ioctl(tun.as_raw_fd(), TUNSETIFF, &mut req) } != 0 {
            return Err(os_error(&format!("TUNSETIFF {name}")));
        }
        // SAFETY: a datagram socket for the ethtool requests, owned at once.
        let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if sock < 0 {
            return Err(os_error("socket"));
        }
        // SAFETY: as above.
        let sock = unsafe { OwnedFd::from_raw_fd(sock) };
        feature_off(&sock, &name, ETHTOOL_SGSO)?;
        // GRO matters only to NAPI devices; a kernel that refuses it for TUN is fine.
        let _ = feature_off(&sock, &name, ETHTOOL_SGRO);
        Ok(tun)
    })
    .join()
    .map_err(|_| io::Error::other("the TUN thread panicked"))?
}
