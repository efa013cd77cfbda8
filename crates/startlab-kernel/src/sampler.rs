//! Readings of a namespace taken every period by a thread that entered it, for the whole run
//! (HyStart's counters, `counters`; the sockets' sock_diag reports, `diag`).

use crate::traffic::{aborted, enter, Host};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A thread in `host`'s namespace that opens what it reads once (`open`), then reads every
/// `period_ns` until finished, and once more after (so that the last event of the run has a
/// reading after it). Dropped without `finish` (a run that failed), it stops its thread all the
/// same, so that nothing holds the namespace.
pub struct Sampler<T> {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<Vec<T>>>>,
}

impl<T: Send + 'static> Sampler<T> {
    pub fn start<S>(
        host: &Host,
        period_ns: u64,
        open: impl FnOnce() -> io::Result<S> + Send + 'static,
        mut read: impl FnMut(&mut S, &mut Vec<T>) -> io::Result<()> + Send + 'static,
    ) -> Sampler<T> {
        let stop = Arc::new(AtomicBool::new(false));
        let host = host.clone();
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || -> io::Result<Vec<T>> {
            enter(&host)?;
            let mut source = open()?;
            let mut readings = Vec::new();
            loop {
                let last = stopped.load(Ordering::Relaxed) || aborted();
                read(&mut source, &mut readings)?;
                if last {
                    return Ok(readings);
                }
                std::thread::sleep(std::time::Duration::from_nanos(period_ns));
            }
        });
        Sampler {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the readings and returns them in time order.
    pub fn finish(mut self) -> io::Result<Vec<T>> {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take().expect("finished once");
        thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("a sampling thread panicked")))
    }
}

impl<T> Drop for Sampler<T> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
