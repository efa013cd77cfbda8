//! The application above a sender that writes responses one at a time
//! ([`crate::traffic::RequestDraws`]): when each is written, with what window it starts, and
//! when its last byte is acknowledged.

use crate::time::{Duration, Time};
use crate::traffic::RequestDraws;

/// One response of a connection's application: a row of the `requests` table.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestRecord {
    /// 0 for the first response of the connection.
    pub index: u32,
    pub bytes: u64,
    /// When the application wrote it.
    pub written_at: Time,
    /// When its last byte was acknowledged.
    pub completed_at: Option<Time>,
    /// The window it started with, segments: after any restart (`tcp_cwnd_restart`).
    pub cwnd: f64,
    pub ssthresh: f64,
    /// How long the connection had sent nothing when it was written (zero for the first).
    pub idle: Duration,
    /// The window was restarted after idle when it was written.
    pub restarted: bool,
}

/// The application's state.
#[derive(Clone, Debug)]
pub(in crate::tcp) struct RequestApp {
    pub draws: RequestDraws,
    /// Every response written so far, the one in progress last.
    pub records: Vec<RequestRecord>,
    /// One past the last segment of the response in progress.
    pub end: u32,
    /// When the next response is written.
    pub next_write: Option<Time>,
}

impl RequestApp {
    pub fn new(draws: RequestDraws) -> Self {
        RequestApp {
            draws,
            records: Vec::new(),
            end: 0,
            next_write: None,
        }
    }

    /// The response in progress, if it is not complete.
    pub fn in_progress(&mut self) -> Option<&mut RequestRecord> {
        self.records.last_mut().filter(|r| r.completed_at.is_none())
    }
}
