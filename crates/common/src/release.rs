//! Letting go of large structures at the end of a run: [`release`] and
//! [`release_in_background`].
//!
//! A profile's model (code maps, symbol tables, stack trees) is millions of small allocations;
//! freeing them one by one takes as long as a tenth of the walk that built them. A library
//! caller that goes on running wants the memory back, so by default both functions free (the
//! second on a thread of its own, so that nobody waits). A process that ends right after —
//! the `profkit` command line — calls [`at_exit_only`] first: from then on nothing is freed
//! piecemeal and the kernel takes the whole address space back at exit, at a fraction of the
//! cost, and without a freeing thread taking a core from the writer that finishes the output.
//! Memory stays bounded by the run's inputs either way: what is released is only what the
//! run built.

use std::sync::atomic::{AtomicBool, Ordering};

static AT_EXIT_ONLY: AtomicBool = AtomicBool::new(false);

/// From now on, [`release`] and [`release_in_background`] leave memory to the process's
/// exit. For programs that end when their work does; never for long-lived callers.
pub fn at_exit_only() {
    AT_EXIT_ONLY.store(true, Ordering::Relaxed);
}

fn leaving() -> bool {
    AT_EXIT_ONLY.load(Ordering::Relaxed)
}

/// Drops `value` here, or leaves it to the process's exit (see the [module docs](self)).
pub fn release<T>(value: T) {
    if leaving() {
        std::mem::forget(value);
    } else {
        drop(value);
    }
}

/// Drops `value` on another thread (here if no thread can be started), or leaves it to the
/// process's exit (see the [module docs](self)).
pub fn release_in_background<T: Send + 'static>(value: T) {
    if leaving() {
        std::mem::forget(value);
        return;
    }
    // A thread that cannot start drops its closure, and `value` with it, here.
    let _ = std::thread::Builder::new()
        .name("drop".into())
        .spawn(move || drop(value));
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    use super::*;

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn frees_until_told_the_process_ends() {
        let drops = Arc::new(AtomicUsize::new(0));
        release(Counted(drops.clone()));
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        release_in_background(Counted(drops.clone()));
        for _ in 0..1000 {
            if drops.load(Ordering::SeqCst) == 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        at_exit_only();
        release(Counted(drops.clone()));
        release_in_background(Counted(drops.clone()));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }
}
