use crate::time::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A priority queue of events keyed by `(time, sequence number)`.
///
/// Every event gets a sequence number from one counter when it is *scheduled*; two events at the
/// same instant are popped in the order they were scheduled (as SimPy's counter does), so runs are
/// reproducible. A caller that schedules on behalf of something created earlier (a packet whose
/// arrival is known when it enters a link) may reserve the number at that moment with
/// [`EventQueue::reserve_seq`] and schedule later with [`EventQueue::push_reserved`].
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
}

struct Entry<E> {
    time: Time,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest (time, seq) is on top.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            next_seq: 0,
        }
    }

    /// Schedules `event` at `time`.
    pub fn push(&mut self, time: Time, event: E) {
        let seq = self.reserve_seq();
        self.push_reserved(time, seq, event);
    }

    /// Takes the next sequence number without scheduling anything yet.
    pub fn reserve_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Schedules `event` at `time` with a number obtained from [`EventQueue::reserve_seq`].
    pub fn push_reserved(&mut self, time: Time, seq: u64, event: E) {
        self.heap.push(Entry { time, seq, event });
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.heap.pop().map(|e| (e.time, e.event))
    }

    /// Time of the earliest event.
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.time)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut q = EventQueue::new();
        let t = Time::from_nanos(5);
        for i in 0..100 {
            q.push(t, i);
        }
        q.push(Time::from_nanos(1), -1);
        assert_eq!(q.pop(), Some((Time::from_nanos(1), -1)));
        for i in 0..100 {
            assert_eq!(q.pop(), Some((t, i)));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn reserved_numbers_keep_their_place() {
        let mut q = EventQueue::new();
        let early = q.reserve_seq();
        q.push(Time::from_nanos(7), "late");
        q.push_reserved(Time::from_nanos(7), early, "early");
        assert_eq!(q.pop().unwrap().1, "early");
        assert_eq!(q.pop().unwrap().1, "late");
    }
}
