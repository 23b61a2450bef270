//! Exact-size buffers: one allocation of exactly the bytes a transfer will hold, for reading a whole
//! object of known length (a GET of `Content-Length` bytes) into memory.
//!
//! The buffer is allocated with `vec![0u8; n]`, which asks the allocator for zeroed memory (calloc):
//! for large sizes that is fresh zero pages from the OS (mmap), resident only once written, so zeroing
//! costs no page touches and the object's bytes are copied into the buffer once, by the socket read.
//!
//! One exception, measured with glibc (`benches/pool.rs`): glibc's mmap threshold rises to the size of
//! the last mmapped chunk freed, up to 32 MiB, so once a buffer between 128 KiB and 32 MiB has been
//! freed, later buffers up to that size may come from the heap and calloc zeroes them with memset
//! (about 0.6 ms per 16 MiB, against 19 µs for an untouched 64 MiB buffer). Those pages are written by
//! the read right after, so the cost is one extra pass over memory, not extra resident memory.

use std::fmt;
use std::ops::{Deref, DerefMut};

use crate::budget::{BudgetError, MemoryBudget, Reservation};

/// A buffer of exactly `len` bytes, paid for by a [`Reservation`] of `len` bytes that is given back
/// after the buffer is freed.
pub struct ExactBuf {
    // Declared before `reservation`: fields drop in order, so the memory is freed before the budget
    // hands the bytes to someone else.
    buf: Vec<u8>,
    reservation: Reservation,
}

impl ExactBuf {
    /// Reserve `len` bytes from `budget` (waiting, FIFO, until they are free) and allocate them.
    ///
    /// Fails at once with [`BudgetError::ExceedsCapacity`] if `len` is larger than the whole budget.
    pub async fn new(budget: &MemoryBudget, len: usize) -> Result<Self, BudgetError> {
        let reservation = budget.acquire(len).await?;
        Ok(Self::from_reservation(reservation))
    }

    /// Like [`new`](ExactBuf::new) but never waits.
    pub fn try_new(budget: &MemoryBudget, len: usize) -> Result<Self, BudgetError> {
        let reservation = budget.try_acquire(len)?;
        Ok(Self::from_reservation(reservation))
    }

    /// Allocate a buffer of exactly `reservation.size()` bytes, paid for by a reservation taken
    /// earlier (at schedule time).
    pub fn from_reservation(reservation: Reservation) -> Self {
        let buf = vec![0u8; reservation.size()];
        ExactBuf { buf, reservation }
    }

    /// The buffer's length in bytes (fixed at creation).
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether the buffer holds zero bytes.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes reserved for this buffer (equal to its length).
    pub fn reservation(&self) -> &Reservation {
        &self.reservation
    }

    /// The buffer as a `Vec<u8>` with `len() == capacity()`, without copying.
    ///
    /// The reservation is released here: from this point the vector is the caller's and no longer
    /// counts against the budget. Use [`into_parts`](ExactBuf::into_parts) to keep it accounted.
    pub fn into_vec(self) -> Vec<u8> {
        let ExactBuf { buf, reservation } = self;
        drop(reservation);
        buf
    }

    /// The buffer and the reservation that pays for it, so the caller can keep the bytes accounted for
    /// as long as it holds the vector (drop the vector before the reservation).
    pub fn into_parts(self) -> (Vec<u8>, Reservation) {
        (self.buf, self.reservation)
    }
}

impl Deref for ExactBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.buf
    }
}

impl DerefMut for ExactBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }
}

impl AsRef<[u8]> for ExactBuf {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl AsMut<[u8]> for ExactBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }
}

impl fmt::Debug for ExactBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExactBuf")
            .field("len", &self.buf.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_exactly_the_reserved_bytes() {
        let budget = MemoryBudget::new(1000);
        let mut buf = ExactBuf::try_new(&budget, 600).unwrap();
        assert_eq!(buf.len(), 600);
        assert!(buf.iter().all(|&b| b == 0));
        buf[599] = 7;
        assert_eq!(buf.reservation().size(), 600);
        assert_eq!(budget.reserved(), 600);
        assert!(matches!(
            ExactBuf::try_new(&budget, 401),
            Err(BudgetError::WouldWait { .. })
        ));
        drop(buf);
        assert_eq!(budget.reserved(), 0);
    }

    #[test]
    fn into_vec_hands_over_the_allocation_and_leaves_the_budget() {
        let budget = MemoryBudget::new(1000);
        let mut buf = ExactBuf::try_new(&budget, 300).unwrap();
        buf[0] = 1;
        let address = buf.as_ptr();
        let vec = buf.into_vec();
        assert_eq!((vec.len(), vec.capacity()), (300, 300));
        assert_eq!(vec.as_ptr(), address, "no copy");
        assert_eq!(vec[0], 1);
        assert_eq!(budget.reserved(), 0);
    }

    #[test]
    fn into_parts_keeps_the_bytes_accounted() {
        let budget = MemoryBudget::new(1000);
        let (vec, reservation) = ExactBuf::try_new(&budget, 300).unwrap().into_parts();
        assert_eq!(vec.len(), 300);
        assert_eq!(budget.reserved(), 300);
        drop(vec);
        drop(reservation);
        assert_eq!(budget.reserved(), 0);
    }

    #[test]
    fn a_buffer_can_be_paid_for_by_an_earlier_reservation() {
        let budget = MemoryBudget::new(1000);
        let reservation = budget.try_acquire(123).unwrap();
        let buf = ExactBuf::from_reservation(reservation);
        assert_eq!(buf.len(), 123);
        assert_eq!(budget.reserved(), 123);
        let empty = ExactBuf::try_new(&budget, 0).unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn too_large_is_an_error() {
        let budget = MemoryBudget::new(1000);
        assert_eq!(
            ExactBuf::try_new(&budget, 1001).unwrap_err(),
            BudgetError::ExceedsCapacity {
                requested: 1001,
                capacity: 1000
            }
        );
    }
}
