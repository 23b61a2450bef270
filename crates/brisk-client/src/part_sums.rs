//! What an upload's part declares about its bytes: its checksum and, when the payload is signed,
//! its SHA-256 ([`PartSums`]), taken in one pass as the part is read ([`PartSummer`]). The
//! checks of what comes back are in [`crate::integrity`].

use brisk_wire::checksum::{ChecksumAlgorithm, Checksummer};
use brisk_wire::sigv4::PayloadHash;

use crate::integrity::UploadChecksum;

/// Bytes read per `pread` by `read_part_summed` (`upload.rs`): 256 KiB, small enough that the
/// checksum reads them from the CPU's L2 cache right after the kernel wrote them there. Summing a
/// whole 8 MiB part after reading it read it back from memory: 19 % of an unsigned upload's client
/// CPU went to CRC32C that way (perf, 2 GiB from tmpfs to `brisk serve`).
pub(crate) const SUMMED_READ: usize = 256 * 1024;

/// What a part's request declares about its bytes: its checksum and, for a signed payload, its
/// SHA-256 ([`PartSummer`] takes both in one pass).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartSums {
    /// The part's checksum (base64, as its header carries it).
    pub(crate) checksum: String,
    /// The SHA-256 a signed payload declares, when the part was summed for one.
    pub(crate) payload: Option<PayloadHash>,
}

impl PartSums {
    /// The sums of a body already in memory, in one pass.
    pub(crate) fn of(algorithm: UploadChecksum, data: &[u8], signed: bool) -> Self {
        let mut summer = PartSummer::new(algorithm, signed);
        summer.update(data);
        summer.finish()
    }

    /// What `x-amz-content-sha256` declares for `data`: its SHA-256 when `signed` (taken now if it
    /// was not summed for a signature), else `UNSIGNED-PAYLOAD`.
    pub(crate) fn payload_hash(&self, signed: bool, data: &[u8]) -> PayloadHash {
        match (signed, self.payload) {
            (false, _) => PayloadHash::Unsigned,
            (true, Some(hash)) => hash,
            (true, None) => PayloadHash::of(data),
        }
    }
}

/// Takes a part's [`PartSums`] piece by piece. A SHA-256 checksum is the payload's hash as well,
/// so a signed part with one is hashed once.
pub(crate) struct PartSummer {
    checksum: Checksummer,
    /// The payload's SHA-256, when signed and the checksum is not SHA-256 itself.
    payload: Option<Checksummer>,
    signed: bool,
}

impl PartSummer {
    pub(crate) fn new(algorithm: UploadChecksum, signed: bool) -> Self {
        Self {
            checksum: Checksummer::new(algorithm.algorithm()),
            payload: (signed && algorithm != UploadChecksum::Sha256)
                .then(|| Checksummer::new(ChecksumAlgorithm::Sha256)),
            signed,
        }
    }

    pub(crate) fn update(&mut self, data: &[u8]) {
        self.checksum.update(data);
        if let Some(payload) = &mut self.payload {
            payload.update(data);
        }
    }

    pub(crate) fn finish(self) -> PartSums {
        let checksum = self.checksum.finalize();
        let sha256 = match self.payload {
            Some(payload) => Some(payload.finalize()),
            None if self.signed => Some(checksum),
            None => None,
        };
        PartSums {
            checksum: checksum.to_base64(),
            payload: sha256.map(|digest| {
                PayloadHash::Sha256(
                    digest
                        .as_bytes()
                        .try_into()
                        .expect("a SHA-256 digest is 32 bytes"),
                )
            }),
        }
    }
}
