//! Work that waits for the disk (an `O_DIRECT` write, an fsync, a metadata transaction), run off
//! the worker's other tasks. A leaf: the handlers, the body writer and the server all use it.

/// Runs a closure that may block for a while (fsync, metadata transactions) without stalling the
/// other tasks of a multi-thread runtime's worker; on a current-thread runtime it just runs.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}
