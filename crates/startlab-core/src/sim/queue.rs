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

    /// A queue, a sorted list: any interleaving of pushes and pops leaves both in the same order,
    /// equal times by scheduling order, reserved numbers where they were reserved.
    mod against_a_sorted_list {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Op {
            Push(u64),
            Reserve,
            PushReserved(u64),
            Pop,
        }

        fn op() -> impl Strategy<Value = Op> {
            // Few distinct times, so that equal times are common.
            prop_oneof![
                4 => (0u64..40).prop_map(Op::Push),
                1 => Just(Op::Reserve),
                1 => (0u64..40).prop_map(Op::PushReserved),
                3 => Just(Op::Pop),
            ]
        }

        proptest! {
            #[test]
            fn pops_in_time_then_sequence_order(ops in proptest::collection::vec(op(), 0..600)) {
                let mut q = EventQueue::new();
                let mut reference: Vec<(u64, u64, usize)> = Vec::new();
                let mut reserved = Vec::new();
                let mut seq = 0u64;
                for (id, op) in ops.into_iter().enumerate() {
                    match op {
                        Op::Push(t) => {
                            q.push(Time::from_nanos(t), id);
                            reference.push((t, seq, id));
                            seq += 1;
                        }
                        Op::Reserve => {
                            reserved.push(q.reserve_seq());
                            seq += 1;
                        }
                        Op::PushReserved(t) => {
                            if let Some(s) = reserved.pop() {
                                q.push_reserved(Time::from_nanos(t), s, id);
                                reference.push((t, s, id));
                            }
                        }
                        Op::Pop => {
                            reference.sort_unstable();
                            let expected = (!reference.is_empty()).then(|| reference.remove(0));
                            prop_assert_eq!(
                                q.pop(),
                                expected.map(|(t, _, id)| (Time::from_nanos(t), id))
                            );
                        }
                    }
                    prop_assert_eq!(q.len(), reference.len());
                    reference.sort_unstable();
                    prop_assert_eq!(q.peek_time(), reference.first().map(|r| Time::from_nanos(r.0)));
                }
                while let Some((t, id)) = q.pop() {
                    let (rt, _, rid) = reference.remove(0);
                    prop_assert_eq!((t, id), (Time::from_nanos(rt), rid));
                }
                prop_assert!(reference.is_empty());
            }
        }
    }
}
