//! The staged temporary files of this process, in fixed static slots, so that a process that
//! must end at once — an allocation that failed (the CLI's allocator then ends it with exit
//! code 2), SIGINT, SIGTERM, SIGHUP — removes them on its way out without allocating, locking or
//! calling anything but `unlink(2)` (issue #23, B13). Before, they stayed until the next run
//! that wrote in the same directory.
//!
//! [`Output`](super::Output) registers a temporary file's name just before it creates the file
//! (so that no moment has the file without its registration) and unregisters it once it is
//! renamed over its name or removed, or when its creation failed. A path longer than a slot, and a file made while
//! every slot is in use, are not registered: they are left to the next run, as before.

use std::cell::UnsafeCell;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};

/// Slots: more temporary files than this at once are left to the next run.
const SLOTS: usize = 64;
/// Bytes of a slot's path, its NUL included (Linux's `PATH_MAX`).
const PATH_BYTES: usize = 4096;

const FREE: u8 = 0;
/// Being written by [`register`].
const FILLING: u8 = 1;
const READY: u8 = 2;
/// Taken by [`remove_all`]: never used again (the process is ending).
const TAKEN: u8 = 3;

struct Slot {
    state: AtomicU8,
    path: UnsafeCell<[u8; PATH_BYTES]>,
}

// SAFETY: `path` is written only by the thread that moved `state` from FREE to FILLING, and
// read only by the thread that moved it from READY to TAKEN; READY is stored with Release
// after the write and the move to TAKEN is an Acquire compare-exchange.
unsafe impl Sync for Slot {}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    state: AtomicU8::new(FREE),
    path: UnsafeCell::new([0; PATH_BYTES]),
};

static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];

/// A registered temporary file: unregister it with [`unregister`].
#[derive(Debug)]
pub(crate) struct Registered(usize);

/// Registers `path` (a temporary file just created) for [`remove_all`]; `None` when it does
/// not fit a slot or every slot is taken.
pub(crate) fn register(path: &Path) -> Option<Registered> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= PATH_BYTES || bytes.contains(&0) {
        return None;
    }
    for (i, slot) in TABLE.iter().enumerate() {
        if slot
            .state
            .compare_exchange(FREE, FILLING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            // SAFETY: this thread owns the slot (FILLING) until it stores READY.
            let buf = unsafe { &mut *slot.path.get() };
            if let Some(dst) = buf.get_mut(..bytes.len()) {
                dst.copy_from_slice(bytes);
            }
            if let Some(end) = buf.get_mut(bytes.len()) {
                *end = 0;
            }
            slot.state.store(READY, Ordering::Release);
            return Some(Registered(i));
        }
    }
    None
}

/// The file is renamed or removed: [`remove_all`] must not touch its name any more.
pub(crate) fn unregister(r: Registered) {
    if let Some(slot) = TABLE.get(r.0) {
        let _ = slot
            .state
            .compare_exchange(READY, FREE, Ordering::AcqRel, Ordering::Relaxed);
    }
}

/// Removes every registered temporary file. Only atomics and `unlink(2)`: safe in a signal
/// handler and in an allocator that failed. For a process about to end: the slots it empties
/// stay unusable.
pub fn remove_all() {
    remove_where(&|_| true);
}

/// [`remove_all`] of the paths `pick` picks; the others stay registered (a slot looked at
/// while its file is renamed stays taken: for tests only).
fn remove_where(pick: &dyn Fn(&[u8]) -> bool) {
    for slot in &TABLE {
        if slot
            .state
            .compare_exchange(READY, TAKEN, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            // SAFETY: the slot holds a NUL-terminated path (written before READY was stored)
            // and no other thread writes it while it is TAKEN.
            let path = unsafe { &*slot.path.get() };
            let len = path.iter().position(|&b| b == 0).unwrap_or(0);
            if pick(path.get(..len).unwrap_or_default()) {
                // SAFETY: a NUL-terminated path.
                unsafe {
                    libc::unlink(path.as_ptr().cast::<libc::c_char>());
                }
            } else {
                slot.state.store(READY, Ordering::Release);
            }
        }
    }
}

/// Installs a handler for SIGINT, SIGTERM and SIGHUP that removes the registered temporary
/// files and then ends the process as the signal would have (the default action, re-raised).
/// A signal that is ignored (a job started with `nohup`, or in the background by a shell)
/// stays ignored.
pub fn remove_on_signals() {
    extern "C" fn on_signal(sig: libc::c_int) {
        remove_all();
        // SAFETY: SA_RESETHAND made the action the default one; raise and signal are
        // async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sigaction with a zeroed, then filled-in structure; the old action is read
        // first so that an ignored signal stays ignored.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            act.sa_flags = libc::SA_RESETHAND | libc::SA_NODEFER;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_files_are_removed_and_unregistered_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.tmp");
        let b = dir.path().join("b.tmp");
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        let ra = register(&a).unwrap();
        let rb = register(&b).unwrap();
        unregister(rb);
        let long = dir.path().join("x".repeat(PATH_BYTES));
        assert!(register(&long).is_none());
        // Other tests of this process may hold slots: only this directory's files go.
        let mine = dir.path().as_os_str().as_bytes().to_vec();
        remove_where(&|p| p.starts_with(&mine));
        assert!(!a.exists());
        assert!(b.exists());
        // Taken: unregistering afterwards does nothing.
        unregister(ra);
    }
}
