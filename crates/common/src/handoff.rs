//! A bounded queue between two threads that wakes each side only after a run of items: the
//! way profkit's pipelines hand batches from one stage to the next (perf.data's reader to the
//! walk, the walk to the writer).
//!
//! With a plain bounded channel, a producer faster than its consumer fills the queue and then
//! is woken at every item the consumer takes: one futex wake (an IPI in a VM, 10–30 µs) per
//! batch on the consumer's thread, and a sleep and a wake-up on the producer's. Here a
//! producer that found the queue full waits until it has drained to [`Wake::sender_at`]
//! items, and a consumer that found it empty waits until it holds [`Wake::receiver_at`], so
//! each wake-up is paid once per run of batches. Dropping either side wakes the other, so a
//! consumer never waits for a run that will not come.
//!
//! ```
//! use profkit_common::handoff::{bounded, Wake};
//! let (tx, rx) = bounded(4, Wake { sender_at: 1, receiver_at: 2 });
//! let producer = std::thread::spawn(move || {
//!     for i in 0..10 {
//!         tx.send(i).unwrap();
//!     }
//! });
//! let got: Vec<i32> = std::iter::from_fn(|| rx.recv()).collect();
//! producer.join().unwrap();
//! assert_eq!(got, (0..10).collect::<Vec<_>>());
//! ```

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// When a waiting side is woken.
#[derive(Clone, Copy, Debug)]
pub struct Wake {
    /// A producer waiting on a full queue is woken once it holds this many items or fewer.
    pub sender_at: usize,
    /// A consumer waiting on an empty queue is woken once it holds this many items (or the
    /// producer is gone).
    pub receiver_at: usize,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    to_sender: Condvar,
    to_receiver: Condvar,
    capacity: usize,
    wake: Wake,
}

struct State<T> {
    queue: VecDeque<T>,
    sender_waits: bool,
    receiver_waits: bool,
    sender_gone: bool,
    receiver_gone: bool,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Nothing panics with the lock held but a drop of an item; the queue stays consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The producing side (see the [module docs](self)).
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

/// The consuming side (see the [module docs](self)).
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
}

/// A queue of at most `capacity` items (at least 1), waking its sides as `wake` says (each
/// threshold is clamped to what the capacity allows).
pub fn bounded<T>(capacity: usize, wake: Wake) -> (Sender<T>, Receiver<T>) {
    let capacity = capacity.max(1);
    let wake = Wake {
        sender_at: wake.sender_at.min(capacity - 1),
        receiver_at: wake.receiver_at.clamp(1, capacity),
    };
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queue: VecDeque::with_capacity(capacity),
            sender_waits: false,
            receiver_waits: false,
            sender_gone: false,
            receiver_gone: false,
        }),
        to_sender: Condvar::new(),
        to_receiver: Condvar::new(),
        capacity,
        wake,
    });
    (
        Sender {
            shared: shared.clone(),
        },
        Receiver { shared },
    )
}

impl<T> Sender<T> {
    /// Queues `item`, waiting while the queue is full; gives it back when the receiver is
    /// gone.
    pub fn send(&self, item: T) -> Result<(), T> {
        let s = &self.shared;
        let mut st = s.lock();
        loop {
            if st.receiver_gone {
                return Err(item);
            }
            if st.queue.len() < s.capacity {
                break;
            }
            st.sender_waits = true;
            st = s.to_sender.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.queue.push_back(item);
        if st.receiver_waits && st.queue.len() >= s.wake.receiver_at {
            st.receiver_waits = false;
            s.to_receiver.notify_one();
        }
        Ok(())
    }
}

impl<T> Receiver<T> {
    /// The next item, waiting for a run of them when there is none; `None` once the sender
    /// is gone and the queue is empty.
    pub fn recv(&self) -> Option<T> {
        let s = &self.shared;
        let mut st = s.lock();
        loop {
            if let Some(item) = st.queue.pop_front() {
                if st.sender_waits && st.queue.len() <= s.wake.sender_at {
                    st.sender_waits = false;
                    s.to_sender.notify_one();
                }
                return Some(item);
            }
            if st.sender_gone {
                return None;
            }
            st.receiver_waits = true;
            st = s.to_receiver.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        st.sender_gone = true;
        st.receiver_waits = false;
        self.shared.to_receiver.notify_one();
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let items = {
            let mut st = self.shared.lock();
            st.receiver_gone = true;
            st.sender_waits = false;
            self.shared.to_sender.notify_one();
            std::mem::take(&mut st.queue)
        };
        // Dropped outside the lock: an item's drop may take time (a writer's batch).
        drop(items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn wait_until_the_sender_waits<T>(rx: &Receiver<T>) {
        while !rx.shared.lock().sender_waits {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn everything_sent_arrives_in_order_whatever_the_thresholds() {
        for (capacity, sender_at, receiver_at) in [(1, 0, 1), (4, 0, 4), (4, 2, 2), (8, 7, 1)] {
            let (tx, rx) = bounded(
                capacity,
                Wake {
                    sender_at,
                    receiver_at,
                },
            );
            let producer = std::thread::spawn(move || {
                for i in 0..5000u32 {
                    tx.send(i).unwrap();
                }
            });
            let got: Vec<u32> = std::iter::from_fn(|| rx.recv()).collect();
            producer.join().unwrap();
            assert_eq!(got, (0..5000).collect::<Vec<_>>(), "capacity {capacity}");
        }
    }

    #[test]
    fn a_consumer_waiting_for_a_run_is_woken_when_the_producer_ends_short_of_it() {
        let (tx, rx) = bounded(
            8,
            Wake {
                sender_at: 4,
                receiver_at: 8,
            },
        );
        let producer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            tx.send(1).unwrap();
        });
        assert_eq!(rx.recv(), Some(1));
        assert_eq!(rx.recv(), None);
        producer.join().unwrap();
    }

    #[test]
    fn a_producer_waiting_on_a_full_queue_learns_the_consumer_is_gone() {
        let (tx, rx) = bounded(
            2,
            Wake {
                sender_at: 0,
                receiver_at: 1,
            },
        );
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        let consumer = std::thread::spawn(move || {
            wait_until_the_sender_waits(&rx);
            // One left: above `sender_at`, so the producer sleeps on until the drop.
            assert_eq!(rx.recv(), Some(1));
            drop(rx);
        });
        assert_eq!(tx.send(3), Err(3));
        assert_eq!(tx.send(4), Err(4));
        consumer.join().unwrap();
    }

    #[test]
    fn a_full_producer_resumes_only_once_the_queue_drained_to_its_threshold() {
        let (tx, rx) = bounded(
            4,
            Wake {
                sender_at: 1,
                receiver_at: 1,
            },
        );
        for i in 0..4 {
            tx.send(i).unwrap();
        }
        let producer = std::thread::spawn(move || {
            tx.send(4).unwrap();
        });
        wait_until_the_sender_waits(&rx);
        // Taking two leaves two: above the threshold, the producer still waits.
        assert_eq!(rx.recv(), Some(0));
        assert_eq!(rx.recv(), Some(1));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(rx.shared.lock().queue.len(), 2);
        // Taking a third leaves one: woken, it queues its item.
        assert_eq!(rx.recv(), Some(2));
        producer.join().unwrap();
        assert_eq!(rx.shared.lock().queue.len(), 2);
        assert_eq!(rx.recv(), Some(3));
        assert_eq!(rx.recv(), Some(4));
        assert_eq!(rx.recv(), None);
    }
}
