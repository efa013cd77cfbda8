//! A kernel run is a guest on the machine: runs go one at a time, and a global setting a run
//! must change (the `tcp_cubic` module parameters) is written down before it is changed,
//! restored when the run ends, and restored by the next run if this one was killed first.
//!
//! Both live in one lock file, `/run/startlab-kernel.lock`: the run holds an exclusive `flock`
//! on it (released by the kernel when the process dies, however it dies), and it lists each
//! global setting changed with its original value.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

pub const LOCK_FILE: &str = "/run/startlab-kernel.lock";

#[derive(Debug)]
pub struct RunLock {
    file: File,
    /// (setting, original value), in the order changed.
    saved: Vec<(PathBuf, String)>,
}

/// Restores the settings a lock file lists; returns them.
fn restore(text: &str) -> Vec<(PathBuf, String)> {
    let mut restored = Vec::new();
    for line in text.lines().rev() {
        if let Some((path, value)) = line.split_once('\t') {
            if std::fs::write(path, value).is_ok() {
                restored.push((PathBuf::from(path), value.to_string()));
            }
        }
    }
    restored
}

impl RunLock {
    /// Takes the machine's kernel-run lock at `path`, or says which run holds it. Settings a
    /// killed run left changed are restored first (returned in `.1`).
    pub fn acquire(path: &Path) -> io::Result<(RunLock, Vec<(PathBuf, String)>)> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            let holder = text.lines().next().unwrap_or("another process").to_string();
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "another kernel run holds the machine ({holder}); kernel runs go one at a time"
                ),
            ));
        }
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        let restored = restore(&text);
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "pid {}", std::process::id())?;
        file.sync_data()?;
        Ok((
            RunLock {
                file,
                saved: Vec::new(),
            },
            restored,
        ))
    }

    /// Writes `value` into the global setting `path` (a sysfs or procfs file), after writing
    /// down its present value. Setting it to what it already is changes nothing.
    pub fn set_global(&mut self, path: &Path, value: &str) -> io::Result<()> {
        let old = std::fs::read_to_string(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let old = old.trim().to_string();
        if old == value {
            return Ok(());
        }
        writeln!(self.file, "{}\t{old}", path.display())?;
        self.file.sync_data()?;
        std::fs::write(path, value)
            .map_err(|e| io::Error::new(e.kind(), format!("{} = {value}: {e}", path.display())))?;
        self.saved.push((path.to_path_buf(), old));
        Ok(())
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        for (path, value) in self.saved.iter().rev() {
            let _ = std::fs::write(path, value);
        }
        let _ = self.file.set_len(0);
        // The flock goes with the descriptor.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_settings_come_back() {
        let dir = std::env::temp_dir().join(format!("startlab-guard-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lock = dir.join("lock");
        let setting = dir.join("setting");
        std::fs::write(&setting, "1\n").unwrap();
        {
            let (mut held, restored) = RunLock::acquire(&lock).unwrap();
            assert!(restored.is_empty());
            held.set_global(&setting, "0").unwrap();
            assert_eq!(std::fs::read_to_string(&setting).unwrap(), "0");
            // flock is per open file description: a second open in this process is refused.
            let e = RunLock::acquire(&lock).unwrap_err();
            assert!(
                e.to_string()
                    .contains("another kernel run holds the machine (pid "),
                "{e}"
            );
        }
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "1");
        // A run killed after changing a setting: the next one restores it.
        std::fs::write(&lock, format!("pid 1\n{}\t1\n", setting.display())).unwrap();
        std::fs::write(&setting, "0").unwrap();
        let (_held, restored) = RunLock::acquire(&lock).unwrap();
        assert_eq!(restored.len(), 1);
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "1");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
