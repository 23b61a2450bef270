//! Waiting on the budget with real tasks on a tokio runtime: requests past the cap wait for a release,
//! are served first come first served, and give up their place cleanly when cancelled.
//!
//! Every wait is bounded by [`LIMIT`], so a broken budget fails the test instead of hanging it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use brisk_mem::{BudgetError, BufferPool, ExactBuf, MemoryBudget};
use tokio::time::{sleep, timeout};

const LIMIT: Duration = Duration::from_secs(10);
const MIB: usize = 1024 * 1024;

/// Wait (bounded) until `budget` has `n` queued requests.
async fn until_waiting(budget: &MemoryBudget, n: usize) {
    timeout(LIMIT, async {
        while budget.waiting() != n {
            sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("expected {n} waiting requests, have {}", budget.waiting()));
}

#[tokio::test]
async fn an_acquire_past_the_cap_waits_for_a_release() {
    let budget = MemoryBudget::new(100);
    let held = budget.acquire(100).await.unwrap();
    let task = tokio::spawn({
        let budget = budget.clone();
        async move { budget.acquire(50).await.map(|r| r.size()) }
    });
    until_waiting(&budget, 1).await;
    sleep(Duration::from_millis(20)).await;
    assert!(!task.is_finished(), "served while the budget was full");
    drop(held);
    let size = timeout(LIMIT, task)
        .await
        .expect("not served after the release");
    assert_eq!(size.unwrap().unwrap(), 50);
    assert_eq!(budget.reserved(), 0);
    assert_eq!(budget.metrics().waits, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_are_served_in_arrival_order() {
    let budget = MemoryBudget::new(100);
    let mut held = budget.acquire(100).await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    // No two neighbours fit together, so each is granted only after the one before it is done and
    // the recorded order is the grant order. The small requests would fit sooner if they could
    // overtake the large ones.
    let sizes = [90, 20, 90, 20, 100];
    let mut tasks = Vec::new();
    for (index, size) in sizes.into_iter().enumerate() {
        let (task_budget, order) = (budget.clone(), Arc::clone(&order));
        tasks.push(tokio::spawn(async move {
            let reservation = task_budget.acquire(size).await.unwrap();
            order.lock().unwrap().push(index);
            sleep(Duration::from_millis(2)).await;
            drop(reservation);
        }));
        until_waiting(&budget, index + 1).await;
    }
    // 30 bytes free: enough for the 20-byte requests, but a 90-byte request is ahead of them.
    held.shrink_to(70);
    sleep(Duration::from_millis(20)).await;
    assert!(
        tasks.iter().all(|t| !t.is_finished()),
        "a later request overtook an earlier one"
    );
    assert_eq!(budget.waiting(), sizes.len());
    drop(held);
    for task in tasks {
        timeout(LIMIT, task)
            .await
            .expect("waiter never served")
            .unwrap();
    }
    assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3, 4]);
    assert_eq!(budget.reserved(), 0);
    assert_eq!(budget.metrics().peak_reserved_bytes, 100);
}

#[tokio::test]
async fn a_timed_out_acquire_leaves_no_trace() {
    let budget = MemoryBudget::new(100);
    let held = budget.acquire(80).await.unwrap();
    let gave_up = timeout(Duration::from_millis(20), budget.acquire(50)).await;
    assert!(gave_up.is_err(), "should have had to wait");
    assert_eq!(budget.waiting(), 0);
    assert_eq!(budget.reserved(), 80);
    // The queue is not wedged: a request that fits is served at once.
    let fits = timeout(LIMIT, budget.acquire(20)).await.unwrap().unwrap();
    drop((held, fits));
    assert_eq!(budget.reserved(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_task_gives_up_its_place() {
    let budget = MemoryBudget::new(100);
    let held = budget.acquire(100).await.unwrap();
    let aborted = tokio::spawn({
        let budget = budget.clone();
        async move { budget.acquire(100).await.map(drop) }
    });
    until_waiting(&budget, 1).await;
    let behind = tokio::spawn({
        let budget = budget.clone();
        async move { budget.acquire(30).await.map(|r| r.size()) }
    });
    until_waiting(&budget, 2).await;
    aborted.abort();
    assert!(
        timeout(LIMIT, aborted)
            .await
            .unwrap()
            .unwrap_err()
            .is_cancelled()
    );
    until_waiting(&budget, 1).await;
    drop(held);
    assert_eq!(timeout(LIMIT, behind).await.unwrap().unwrap(), Ok(30));
    assert_eq!(budget.reserved(), 0);
}

#[tokio::test]
async fn too_large_requests_fail_instead_of_waiting() {
    let budget = MemoryBudget::new(MIB);
    let pool = BufferPool::new(budget.clone());
    let held = budget.acquire(MIB).await.unwrap();
    let exceeds = BudgetError::ExceedsCapacity {
        requested: MIB + 1,
        capacity: MIB,
    };
    let result = timeout(LIMIT, budget.acquire(MIB + 1)).await.unwrap();
    assert_eq!(result.unwrap_err(), exceeds);
    let result = timeout(LIMIT, ExactBuf::new(&budget, MIB + 1))
        .await
        .unwrap();
    assert_eq!(result.unwrap_err(), exceeds);
    let result = timeout(LIMIT, pool.get(2 * MIB)).await.unwrap();
    assert!(
        matches!(result, Err(BudgetError::ExceedsCapacity { requested, .. }) if requested == 2 * MIB)
    );
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_get_waits_for_a_block_to_come_back() {
    let budget = MemoryBudget::new(2 * MIB);
    let pool = BufferPool::new(budget.clone());
    let first = pool.get(MIB).await.unwrap();
    let second = pool.get(MIB).await.unwrap();
    let task = tokio::spawn({
        let pool = pool.clone();
        async move { pool.get(2 * MIB).await.map(|b| b.capacity()) }
    });
    until_waiting(&budget, 1).await;
    drop(first);
    sleep(Duration::from_millis(10)).await;
    assert!(!task.is_finished());
    assert_eq!(
        pool.cached_bytes(),
        0,
        "a block returned while someone waits is freed"
    );
    drop(second);
    assert_eq!(timeout(LIMIT, task).await.unwrap().unwrap(), Ok(2 * MIB));
    let metrics = pool.metrics();
    assert_eq!(metrics.pool_blocks_allocated, 3);
    assert_eq!(metrics.pool_blocks_freed, 2);
    assert!(metrics.peak_reserved_bytes <= 2 * MIB);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_blocks_never_keep_a_waiter_waiting() {
    let budget = MemoryBudget::new(8 * MIB);
    let pool = BufferPool::new(budget.clone());
    // Fill the budget with small blocks in use, then return them while an 8 MiB request waits.
    let small: Vec<_> = (0..128).map(|_| pool.try_get(64 * 1024).unwrap()).collect();
    let task = tokio::spawn({
        let pool = pool.clone();
        async move { pool.get(8 * MIB).await.map(|b| b.capacity()) }
    });
    until_waiting(&budget, 1).await;
    drop(small);
    assert_eq!(timeout(LIMIT, task).await.unwrap().unwrap(), Ok(8 * MIB));
    assert_eq!(pool.cached_bytes(), 8 * MIB);
}
