//! Writing a received body to its file past the page cache (`O_DIRECT`), when the bytes must reach
//! the disk before the answer anyway.
//!
//! # Why
//!
//! A buffered `write` copies every payload byte into a page-cache page the kernel has just
//! allocated, so each store misses the CPU's caches. Receiving a 1 GiB boto3 upload with
//! `--no-md5-etag` and fsync on, that copy (`copy_folio_from_iter_atomic`) was 36 % of the server's
//! CPU samples, as much as verifying the payload's SHA-256 (perf; `BENCHMARKS-log.md`, "The server's
//! CPU per received GiB"). With fsync on (the default) a body is synced before its PUT is answered,
//! so keeping it in the page cache buys nothing: it is written with `O_DIRECT` instead, the device
//! takes the bytes from our buffer, and the fsync at commit finds no dirty pages to write back.
//! With fsync off the page cache is the point (the write returns before the disk is touched), so
//! those bodies are written as before.
//!
//! # How
//!
//! `O_DIRECT` wants the buffer's address, the length and the file offset aligned to the device's
//! logical block. The stage is the aligned part of the connection's scratch buffer, one block longer
//! than the read buffer. A body without aws-chunked framing is read from the socket straight into the
//! stage's free part ([`BodyWriter::spare`]) and hashed there; once less than a read buffer is free,
//! the whole blocks staged are written and the partial one moves to the front, so every write is
//! whole blocks and offsets stay aligned. aws-chunked payload, whose framing is stripped from the
//! read buffer, is copied into the stage ([`BodyWriter::write`]): a cache-hot copy where the page
//! cache's was cold. At the end the whole blocks left are written directly, `O_DIRECT` is switched
//! off and the last partial block goes through the page cache. A file system that refuses `O_DIRECT` (at `fcntl` or at the
//! first write) gets buffered writes from wherever that happens, so no byte is lost or doubled.

use std::fs::File;
use std::io::{self, Write};

/// Alignment of the stage's address, of every direct write's length and of its file offset: 4 KiB,
/// the largest logical block size of common disks (512-byte devices accept it too).
pub const ALIGN: usize = 4096;

/// Writes a body to `file`, directly when it was asked and the file system allows it.
#[derive(Debug)]
pub struct BodyWriter<'a> {
    file: &'a mut File,
    /// The aligned stage; `None` writes every slice through the page cache as it comes.
    stage: Option<&'a mut [u8]>,
    filled: usize,
    direct: bool,
}

impl<'a> BodyWriter<'a> {
    /// A writer into `file` (empty, at offset 0). With `direct`, `scratch` (at least [`ALIGN`] bytes
    /// longer than one stage of `ALIGN` multiples) holds the stage; without, it is not touched.
    pub fn new(file: &'a mut File, scratch: &'a mut [u8], direct: bool) -> Self {
        let start = scratch.as_ptr().align_offset(ALIGN).min(scratch.len());
        let usable = (scratch.len() - start) / ALIGN * ALIGN;
        let direct = direct && usable > 0 && set_direct(file, true).is_ok();
        let stage = direct.then(|| &mut scratch[start..start + usable]);
        Self {
            file,
            stage,
            filled: 0,
            direct,
        }
    }

    /// Whether payload is staged (it may still fall back to buffered writes).
    pub fn is_staged(&self) -> bool {
        self.stage.is_some()
    }

    /// Whether bytes are (still) going to the disk directly.
    #[cfg(test)]
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Appends `data`.
    pub fn write(&mut self, mut data: &[u8]) -> io::Result<()> {
        let size = match &self.stage {
            None => return self.file.write_all(data),
            Some(stage) => stage.len(),
        };
        while !data.is_empty() {
            let n = (size - self.filled).min(data.len());
            let stage = self.stage.as_deref_mut().expect("staged");
            stage[self.filled..self.filled + n].copy_from_slice(&data[..n]);
            self.filled += n;
            data = &data[n..];
            if self.filled == size {
                self.drain(size)?;
            }
        }
        Ok(())
    }

    /// The stage's free part, for reading payload straight into it (then [`advance`](Self::advance));
    /// `None` when not staged. When fewer than `want` bytes are free, the whole blocks staged so far
    /// are written first, so a read of a whole read buffer fits again (the stage holds one block
    /// more than the read buffer) and the socket's bytes are copied once, into the stage.
    pub fn spare(&mut self, want: usize) -> io::Result<Option<&mut [u8]>> {
        let Some(size) = self.stage.as_deref().map(<[u8]>::len) else {
            return Ok(None);
        };
        if size - self.filled < want {
            let whole = if self.direct {
                self.filled / ALIGN * ALIGN
            } else {
                self.filled
            };
            if whole > 0 {
                self.drain(whole)?;
            }
        }
        let filled = self.filled;
        Ok(self.stage.as_deref_mut().map(|stage| &mut stage[filled..]))
    }

    /// Counts the first `n` bytes of [`spare`](Self::spare) as written.
    pub fn advance(&mut self, n: usize) {
        self.filled += n;
    }

    /// Writes what is staged and leaves the file in its ordinary (buffered) mode.
    pub fn finish(mut self) -> io::Result<()> {
        if self.stage.is_none() {
            return Ok(());
        }
        let whole = self.filled / ALIGN * ALIGN;
        if whole > 0 {
            self.drain(whole)?;
        }
        if self.direct {
            set_direct(self.file, false)?;
            self.direct = false;
        }
        if self.filled > 0 {
            self.drain(self.filled)?;
        }
        Ok(())
    }

    /// Writes the stage's first `len` bytes (a multiple of [`ALIGN`] while direct) and moves the
    /// rest to its front.
    ///
    /// A direct write returns when the device has the bytes, about half a millisecond per 256 KiB
    /// on the disks measured, so it runs under [`blocking`](crate::blocking::blocking): the worker's
    /// other connections move to another thread meanwhile instead of waiting, as a `100 Continue`
    /// they owed did (BENCHMARKS-log.md, "The server's disk writes off the worker"). A buffered write
    /// is a memory copy and stays inline (`body.rs`).
    fn drain(&mut self, len: usize) -> io::Result<()> {
        if self.direct {
            crate::blocking::blocking(|| self.write_stage(len))
        } else {
            self.write_stage(len)
        }
    }

    fn write_stage(&mut self, len: usize) -> io::Result<()> {
        let stage = self
            .stage
            .as_deref_mut()
            .expect("only staged writers drain");
        let mut done = 0;
        while done < len {
            if !self.direct {
                self.file.write_all(&stage[done..len])?;
                break;
            }
            match self.file.write(&stage[done..len]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Refused by the file system (or a short write left the offset unaligned): the rest
                // goes through the page cache.
                Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => {
                    set_direct(self.file, false)?;
                    self.direct = false;
                }
                Err(e) => return Err(e),
            }
        }
        stage.copy_within(len..self.filled, 0);
        self.filled -= len;
        Ok(())
    }
}

/// Switches `O_DIRECT` on or off for an open file.
#[cfg(target_os = "linux")]
fn set_direct(file: &File, on: bool) -> io::Result<()> {
    use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
    let flags = fcntl_getfl(file)?;
    let flags = if on {
        flags | OFlags::DIRECT
    } else {
        flags - OFlags::DIRECT
    };
    fcntl_setfl(file, flags)?;
    Ok(())
}

/// Elsewhere bodies go through the page cache.
#[cfg(not(target_os = "linux"))]
fn set_direct(_file: &File, on: bool) -> io::Result<()> {
    if on {
        Err(io::ErrorKind::Unsupported.into())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn payload(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 4096) as u8).collect()
    }

    /// Bodies of every shape around the stage and block sizes, fed in uneven slices, come out
    /// whole, directly or not (on a file system without `O_DIRECT` the direct case falls back).
    #[test]
    fn every_length_and_split_is_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut scratch = vec![0u8; 3 * ALIGN + ALIGN];
        let stage = 3 * ALIGN;
        for direct in [true, false] {
            for len in [
                0,
                1,
                ALIGN - 1,
                ALIGN,
                ALIGN + 1,
                stage - 1,
                stage,
                stage + 1,
                5 * stage + 77,
            ] {
                for split in [1000, ALIGN, stage + 3] {
                    let path = dir.path().join(format!("{direct}-{len}-{split}"));
                    let mut file = File::create_new(&path).unwrap();
                    let data = payload(len);
                    let mut w = BodyWriter::new(&mut file, &mut scratch, direct);
                    for slice in data.chunks(split) {
                        w.write(slice).unwrap();
                    }
                    w.finish().unwrap();
                    // The file is back in buffered mode: an unaligned append works.
                    file.write_all(b"!").unwrap();
                    let mut back = Vec::new();
                    File::open(&path).unwrap().read_to_end(&mut back).unwrap();
                    assert_eq!(
                        back.len(),
                        len + 1,
                        "direct {direct}, len {len}, split {split}"
                    );
                    assert!(
                        back[..len] == data[..],
                        "direct {direct}, len {len}, split {split}"
                    );
                }
            }
        }
    }

    /// Reads straight into the stage, of every size around the read buffer's, come out whole.
    /// On a runtime's worker the direct writes run under `block_in_place` (multi-thread) or inline
    /// (current-thread, where `block_in_place` would panic): either way the body lands whole.
    #[test]
    fn bodies_written_on_a_runtime_worker_land_whole() {
        let dir = tempfile::tempdir().unwrap();
        let data = payload(7 * 64 * 1024 + 5);
        for multi_thread in [true, false] {
            let runtime = if multi_thread {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .build()
            } else {
                tokio::runtime::Builder::new_current_thread().build()
            }
            .unwrap();
            let path = dir.path().join(format!("worker-{multi_thread}"));
            let (task_path, task_data) = (path.clone(), data.clone());
            let task = runtime.spawn(async move {
                let mut file = File::create_new(&task_path).unwrap();
                let mut scratch = vec![0u8; 64 * 1024 + ALIGN];
                let mut w = BodyWriter::new(&mut file, &mut scratch, true);
                for slice in task_data.chunks(10_000) {
                    w.write(slice).unwrap();
                }
                w.finish().unwrap();
            });
            runtime.block_on(task).unwrap();
            let mut back = Vec::new();
            File::open(&path).unwrap().read_to_end(&mut back).unwrap();
            assert!(back == data, "multi-thread {multi_thread}");
        }
    }

    #[test]
    fn reads_into_the_spare_part_are_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let read_buffer = 3 * ALIGN;
        let mut scratch = vec![0u8; read_buffer + 2 * ALIGN];
        for read in [1000, ALIGN, read_buffer - 5, read_buffer] {
            let len = 7 * read_buffer + 333;
            let path = dir.path().join(format!("spare-{read}"));
            let mut file = File::create_new(&path).unwrap();
            let data = payload(len);
            let mut w = BodyWriter::new(&mut file, &mut scratch, true);
            let mut at = 0;
            while at < len {
                let spare = w.spare(read_buffer).unwrap().unwrap();
                let n = spare.len().min(read).min(len - at);
                spare[..n].copy_from_slice(&data[at..at + n]);
                w.advance(n);
                at += n;
            }
            w.finish().unwrap();
            let mut back = Vec::new();
            File::open(&path).unwrap().read_to_end(&mut back).unwrap();
            assert!(back == data, "reads of {read}");
        }
    }

    /// The stage is the aligned part of the scratch buffer; one too small for a block is not used.
    #[test]
    fn a_scratch_buffer_without_an_aligned_block_writes_buffered() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = File::create_new(dir.path().join("small")).unwrap();
        let mut scratch = vec![0u8; ALIGN - 1];
        let mut w = BodyWriter::new(&mut file, &mut scratch, true);
        assert!(!w.is_direct());
        w.write(b"abc").unwrap();
        w.finish().unwrap();
        assert_eq!(file.metadata().unwrap().len(), 3);
    }
}
