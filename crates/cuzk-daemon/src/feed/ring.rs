//! A bounded ring with cursors: the newest `capacity` items, each numbered in push order, so a
//! reader that polls asks for what came after the last number it saw and learns what it missed.

use std::collections::VecDeque;

/// The newest `capacity` items pushed, numbered 1, 2, 3, … in push order. Pushing onto a full
/// ring drops its oldest item, so it never holds more than it was made for however long it runs.
#[derive(Debug)]
pub struct Ring<T> {
    items: VecDeque<T>,
    capacity: usize,
    /// How many items were ever pushed: the newest one's number.
    pushed: u64,
}

/// What came after a cursor.
#[derive(Debug, PartialEq)]
pub struct Since<T> {
    /// Oldest first.
    pub items: Vec<T>,
    /// The newest item's number: the cursor for the next call.
    pub next: u64,
    /// Items after the cursor that were dropped before this call (the reader polled too late).
    pub missed: u64,
    /// The cursor was past the newest item, so it was not one this ring handed out (another
    /// instance's): `items` is everything held, to start over from.
    pub reset: bool,
}

impl<T> Ring<T> {
    /// A ring of at most `capacity` items (at least one), its room taken at once.
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Ring {
            items: VecDeque::with_capacity(capacity),
            capacity,
            pushed: 0,
        }
    }

    pub fn push(&mut self, item: T) {
        if self.items.len() == self.capacity {
            self.items.pop_front();
        }
        self.items.push_back(item);
        self.pushed += 1;
    }

    /// The items held, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> {
        self.items.iter()
    }
}

impl<T: Clone> Ring<T> {
    /// The items numbered after `cursor` (0: everything held).
    pub fn since(&self, cursor: u64) -> Since<T> {
        let oldest = self.pushed - self.items.len() as u64 + 1;
        let reset = cursor > self.pushed;
        let from = if reset { 0 } else { cursor.max(oldest - 1) };
        let skip = usize::try_from(from.saturating_sub(oldest - 1)).unwrap_or(usize::MAX);
        Since {
            items: self.items.iter().skip(skip).cloned().collect(),
            next: self.pushed,
            missed: if reset { 0 } else { from - cursor },
            reset,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_ring_pushed_far_past_its_capacity_holds_only_its_capacity() {
        let mut ring = Ring::new(100);
        let room = ring.items.capacity();
        let first = Arc::new(0u64);
        ring.push(Arc::clone(&first));
        for n in 1..100_000u64 {
            ring.push(Arc::new(n));
        }
        assert_eq!(ring.items.len(), 100);
        // Its storage never grew, and what it dropped is freed, not kept aside.
        assert_eq!(ring.items.capacity(), room);
        assert_eq!(Arc::strong_count(&first), 1);
        let held: Vec<u64> = ring.iter().map(|n| **n).collect();
        assert_eq!(held, (99_900..100_000).collect::<Vec<_>>());
    }

    #[test]
    fn cursors_give_what_came_after_them() {
        let mut ring = Ring::new(5);
        assert_eq!(
            ring.since(0),
            Since {
                items: vec![],
                next: 0,
                missed: 0,
                reset: false
            }
        );
        for n in 1..=3 {
            ring.push(n);
        }
        // Items are numbered from 1: cursor 0 is "nothing seen", cursor 3 is "all seen".
        assert_eq!(ring.since(0).items, [1, 2, 3]);
        assert_eq!(ring.since(1).items, [2, 3]);
        let caught_up = ring.since(3);
        assert_eq!((caught_up.items.len(), caught_up.next), (0, 3));
        ring.push(4);
        assert_eq!(ring.since(caught_up.next).items, [4]);
    }

    #[test]
    fn a_stale_cursor_learns_what_it_missed() {
        let mut ring = Ring::new(5);
        for n in 1..=12 {
            ring.push(n);
        }
        // 8..=12 held; a reader at 2 missed 3..=7.
        let late = ring.since(2);
        assert_eq!(late.items, [8, 9, 10, 11, 12]);
        assert_eq!((late.next, late.missed, late.reset), (12, 5, false));
        // At the edge of what is held nothing is missed.
        let edge = ring.since(7);
        assert_eq!((edge.items.len(), edge.missed), (5, 0));
        assert_eq!(ring.since(0).missed, 7);
    }

    #[test]
    fn a_cursor_past_the_end_starts_over() {
        let mut ring = Ring::new(5);
        for n in 1..=3 {
            ring.push(n);
        }
        // A cursor from a daemon that had run longer than this one.
        let other = ring.since(40);
        assert_eq!(other.items, [1, 2, 3]);
        assert_eq!((other.next, other.missed, other.reset), (3, 0, true));
        let empty: Ring<u8> = Ring::new(0);
        let other = empty.since(u64::MAX);
        assert!(other.reset && other.items.is_empty() && other.next == 0);
    }
}
