//! A download's file writer: one thread of the blocking pool that makes the positioned writes the
//! download's workers send it, in turn ([`start_file_writer`]).

use std::sync::Arc;

use brisk_mem::PooledBlock;

use crate::error::Error;

/// What the file writer gives back for one write: the block, or why it was not written.
pub(super) type Written = std::io::Result<PooledBlock>;

/// One positioned write for a download's file writer; the block comes back through `done`, the
/// sending worker's reply channel.
pub(super) struct FileWrite {
    pub(super) block: PooledBlock,
    pub(super) offset: u64,
    pub(super) len: usize,
    pub(super) done: tokio::sync::mpsc::Sender<Written>,
}

/// Starts a download's file writer: one thread of the blocking pool that makes the writes sent to
/// it, in turn, until every sender is dropped. The queue (allocated once, here) has `slots`: as
/// many as writes can be queued at once (each worker has at most one), so it never fills and a
/// send never waits or allocates.
///
/// One writer, not one blocking task per write: concurrent writes to one file contend for its
/// inode lock, which the kernel spins on (a fifth of a 4-way download's CPU to tmpfs), and a task
/// per write cost about seven futex calls per 1 MiB written (scheduling it, the turn it waited
/// for, waking its awaiter) where a queue costs two.
pub(super) fn start_file_writer(
    file: Arc<std::fs::File>,
    slots: usize,
) -> (
    std::sync::mpsc::SyncSender<FileWrite>,
    tokio::task::JoinHandle<()>,
) {
    let (writes, queue) = std::sync::mpsc::sync_channel::<FileWrite>(slots.max(1));
    let writer = tokio::task::spawn_blocking(move || {
        use std::os::unix::fs::FileExt;
        for write in queue {
            let written = file
                .write_all_at(&write.block[..write.len], write.offset)
                .map(|()| write.block);
            // The worker's reply channel holds one, and it has no other write out, so this never
            // finds it full; a worker that has gone (its attempt failed) no longer wants its block.
            let _ = write.done.try_send(written);
        }
    });
    (writes, writer)
}

pub(super) fn stopped() -> Error {
    Error::UnexpectedResponse {
        what: "the download's file writer has stopped".into(),
    }
}
