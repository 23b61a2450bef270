//! Named points in the commit protocol where tests can stop the store (with the `test-support`
//! feature) to check what a crash at that point leaves behind.

/// A step of the commit protocol, reached in this order by a PUT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    /// The body was written and synced and renamed from `tmp/` into `data/`; the metadata commit that
    /// makes it visible has not happened.
    DataRenamed,
    /// The metadata commit happened; the data file of the replaced version (if any) is not removed yet.
    MetadataCommitted,
}

/// Callback invoked at each [`FaultPoint`].
#[cfg(feature = "test-support")]
#[derive(Clone)]
pub struct FaultHook(pub std::sync::Arc<dyn Fn(FaultPoint) + Send + Sync>);

#[cfg(feature = "test-support")]
impl std::fmt::Debug for FaultHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FaultHook")
    }
}
