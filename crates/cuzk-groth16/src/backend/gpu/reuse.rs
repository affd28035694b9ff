//! Large buffers handed back for the next proof, never more of them than were out at once.

use std::sync::{Mutex, PoisonError};

/// A buffer's length in elements, as [`Reusable`] compares it with what is asked.
pub(super) trait Len {
    fn len(&self) -> usize;
}

/// Buffers returned for reuse. A request that none of them can hold drops the largest of them
/// before a new one is made: the new one takes its place. So however the requested lengths vary
/// (a packed witness's size differs from partition to partition), the buffers alive are never
/// more than were taken at once: with page-locked buffers of 13 GB each, keeping every size
/// ever asked for ran a 128 GiB host out of memory.
#[derive(Debug)]
pub(super) struct Reusable<T> {
    returned: Mutex<Vec<T>>,
}

impl<T> Default for Reusable<T> {
    fn default() -> Self {
        Reusable {
            returned: Mutex::new(Vec::new()),
        }
    }
}

impl<T: Len> Reusable<T> {
    /// A buffer of at least `len` elements: the smallest returned one that holds it, else
    /// `make(len)` once the largest returned one is dropped.
    pub(super) fn take<E>(
        &self,
        len: usize,
        make: impl FnOnce(usize) -> Result<T, E>,
    ) -> Result<T, E> {
        let replaced = {
            let mut returned = self.returned.lock().unwrap_or_else(PoisonError::into_inner);
            let fitting = (0..returned.len())
                .filter(|&i| returned[i].len() >= len)
                .min_by_key(|&i| returned[i].len());
            if let Some(i) = fitting {
                return Ok(returned.swap_remove(i));
            }
            let largest = (0..returned.len()).max_by_key(|&i| returned[i].len());
            largest.map(|i| returned.swap_remove(i))
        };
        // Freed outside the lock: releasing gigabytes of page-locked memory takes a while.
        drop(replaced);
        make(len)
    }

    pub(super) fn give_back(&self, buffer: T) {
        self.returned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(buffer);
    }

    /// How many buffers are waiting to be taken again.
    #[cfg(test)]
    fn returned(&self) -> usize {
        self.returned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::convert::Infallible;

    impl Len for Vec<u8> {
        fn len(&self) -> usize {
            Vec::len(self)
        }
    }

    fn make(len: usize) -> Result<Vec<u8>, Infallible> {
        Ok(vec![0; len])
    }

    #[test]
    fn growing_requests_keep_no_more_buffers_than_were_out() {
        let pool = Reusable::default();
        let mut rng = rand::rngs::StdRng::seed_from_u64(rand::random());
        let mut made = 0;
        // Two holders at a time, each asking a little more or less than the last.
        for round in 0..200 {
            let lens = [1000 + round * 3, 1000 + rng.gen_range(0..round * 3 + 1)];
            let taken: Vec<_> = lens
                .iter()
                .map(|&len| {
                    let buffer = pool.take(len, |len| {
                        made += 1;
                        make(len)
                    });
                    let Ok(buffer) = buffer;
                    assert!(
                        buffer.len() >= len,
                        "a buffer of {} for {len}",
                        buffer.len()
                    );
                    buffer
                })
                .collect();
            assert_eq!(
                pool.returned(),
                0,
                "round {round}: a buffer outlived its place"
            );
            taken.into_iter().for_each(|b| pool.give_back(b));
            assert_eq!(pool.returned(), 2);
        }
        assert!(made > 2, "requests that grow need new buffers");
    }

    #[test]
    fn the_smallest_buffer_that_holds_a_request_is_reused() {
        let pool = Reusable::default();
        for len in [10, 30, 20] {
            pool.give_back(vec![0u8; len]);
        }
        let Ok(buffer) = pool.take(15, make);
        assert_eq!(buffer.len(), 20);
        assert_eq!(pool.returned(), 2);
        // Nothing holds 40: the largest (30) goes, a new one comes.
        let Ok(buffer) = pool.take(40, make);
        assert_eq!(buffer.len(), 40);
        assert_eq!(pool.returned(), 1);
    }
}
