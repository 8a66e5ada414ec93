//! A read-only view of a db file's WAL-index header: the first bytes of the
//! `<db>-shm` file, which SQLite keeps in shared memory and rewrites (both of
//! its two copies) whenever a transaction commits or the WAL is rewound. The
//! layout is part of SQLite's documented file format ("WAL-mode file
//! format": the header copies are 48 bytes each at offsets 0 and 48).
//!
//! It lets a reader tell, without a lock or a system call, whether anything
//! committed since its snapshot began: if the header is byte for byte what
//! it was, the snapshot is still the newest state (see `conn`'s read
//! leases).

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// Bytes of one copy of the WAL-index header.
pub(super) const HEADER_LEN: usize = 48;

/// One copy of the header, as a fingerprint of the committed state.
pub(super) type Fingerprint = [u8; HEADER_LEN];

pub(super) struct WalIndexView {
    ptr: *const u8,
    len: usize,
}

impl WalIndexView {
    /// Maps the header of `db_file`'s shm file; `None` when there is none
    /// yet (or it is too short, or cannot be mapped).
    pub(super) fn open(db_file: &Path) -> Option<WalIndexView> {
        let real = std::fs::canonicalize(db_file).ok()?;
        let mut path = real.into_os_string();
        path.push("-shm");
        let file = File::open(&path).ok()?;
        if file.metadata().ok()?.len() < 2 * HEADER_LEN as u64 {
            return None;
        }
        let len = 4096;
        // SAFETY: a read-only shared mapping of a file we opened; the
        // mapping stays valid after the descriptor closes and is unmapped
        // on drop.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        Some(WalIndexView {
            ptr: ptr.cast::<u8>(),
            len,
        })
    }

    /// The committed state's fingerprint; `None` while a writer is between
    /// the two copies (treat it as changed).
    pub(super) fn fingerprint(&self) -> Option<Fingerprint> {
        let mut first = [0u8; HEADER_LEN];
        let mut second = [0u8; HEADER_LEN];
        // SAFETY: both ranges lie in the mapping (2 * 48 < 4096). Another
        // process writes there concurrently, hence volatile byte reads.
        unsafe {
            for (i, b) in first.iter_mut().enumerate() {
                *b = std::ptr::read_volatile(self.ptr.add(i));
            }
            for (i, b) in second.iter_mut().enumerate() {
                *b = std::ptr::read_volatile(self.ptr.add(HEADER_LEN + i));
            }
        }
        (first == second).then_some(first)
    }
}

impl Drop for WalIndexView {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `open` mapped.
        unsafe {
            libc::munmap(self.ptr.cast_mut().cast(), self.len);
        }
    }
}
