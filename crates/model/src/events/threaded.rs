//! [`Threaded`]: runs an [`EventSink`] on its own thread, so that a driver that reads and names
//! events on one core feeds a writer encoding them on the other (perf.data: symbolization
//! here, Perfetto / Firefox / folded writing there).
//!
//! Events are copied into owned messages and sent in batches of [`BATCH`] over a queue
//! bounded to [`IN_FLIGHT`] batches, so memory stays bounded whatever the input; each side is
//! woken once per run of batches ([`profkit_common::handoff`]). A sample's
//! stack and lines are appended to flat arrays of its batch (no allocation per sample), and
//! the writer hands every emptied batch back for reuse. An error of the inner sink ends its
//! thread; the driver sees it at its next batch or at [`EventSink::finish`].
//!
//! [`EventSink::finish`] finishes the inner sink on its thread and returns once it has; the
//! thread then frees what the sink aggregated (a folded writer's tree, a profile's tables) on
//! its own, off the driver's path: at the end of a conversion that is the last thing left.
//!
//! **A helper** ([`EventSink::helper`], before any function is declared): a driver that
//! leaves the naming of some of its samples to a [`Helper`] (perf.data: the samples of some
//! processes) sends it what changes the state it names with ([`EventSink::hand_over`]) and,
//! for each such sample, the bytes it needs ([`EventSink::helpers_sample`]), in its own
//! order. The helper runs on the writer's thread (which has time to spare while the driver
//! names) and names each sample there when the writer meets it, so the inner sink sees the
//! events in the driver's order. The helper numbers its functions itself; the writer numbers
//! both sides' functions again, in the order it declares them to the inner sink, by the
//! [`FuncInterner`]'s key: the inner sink sees what one driver naming every sample would
//! have given it.

use std::any::Any;
use std::io;
use std::sync::mpsc::{channel, Receiver, Sender};

use profkit_common::handoff::{self, Wake};
use std::thread::JoinHandle;

use super::{
    ArgValue, CallPath, CodeEvent, CodeRegion, CodeTier, Counter, Enter, EventSink, Helper,
    Instant, MappingInfo, ProcessInfo, Sample, SampleWeight, ThreadInfo, TraceInfo,
};
use crate::clock::Clock;
use crate::func::{FuncId, FuncInfo, FuncInterner, FuncTier, FunctionTable};
use crate::span::Span;

/// Events per message.
pub const BATCH: usize = 512;
/// Batches queued at most.
pub const IN_FLIGHT: usize = 8;
/// How the two sides wake each other (see [`profkit_common::handoff`]): a writer faster than
/// the driver waits for four batches before it is woken, a driver faster than the writer
/// waits until the writer has taken four.
const WAKE: Wake = Wake {
    sender_at: IN_FLIGHT / 2,
    receiver_at: 4,
};
/// A batch is sent early once its samples hold this many frames (deep stacks).
const BATCH_FRAMES: usize = 1 << 18;

enum Arg {
    Str(String),
    U64(u64),
    I64(i64),
    F64(f64),
    Bytes(Vec<u8>),
}

enum Event {
    Begin(Box<Begin>),
    Process(u32, String),
    Thread(u32, u32, u64, String),
    Function(FuncId, Box<FuncInfo>),
    /// Thread, function, time, depth; the arguments are `args[args.0..args.1]` of its batch.
    Enter(u32, FuncId, u64, u32, (usize, usize)),
    Exit(Span),
    Instant(Box<OwnedInstant>),
    Counter(u32, String, u64, f64),
    /// The frames past the first `shared` (which are the thread's previous sample's) are
    /// `stacks[stack.0..stack.1]` of its batch, their lines `lines[lines.0..lines.1]`.
    Sample {
        thread: u32,
        time: u64,
        stack: (usize, usize),
        lines: (usize, usize),
        weight: u64,
        shared: usize,
    },
    /// The stack is `stacks[stack.0..stack.1]` of its batch.
    CallPath {
        thread: u32,
        stack: (usize, usize),
        calls: u64,
        inclusive: u64,
        exclusive: u64,
    },
    Mapping(Box<Mapping>),
    Code(Box<Code>),
    /// The driver is done: finish the inner sink.
    Finish,
    /// The helper (see the [module docs](self)).
    Helper(Box<dyn Helper>),
    /// A change for the helper.
    Change(Box<dyn Any + Send>),
    /// A sample the helper names from `work[start..end]` of its batch.
    Helped(usize, usize),
}

// The rare events are boxed, so that the one sent per sample stays small (a sample's event
// was 176 bytes, written and read once each per sample, when a function's was inline).
const _: () = assert!(std::mem::size_of::<Event>() <= 64);

struct Begin {
    format: &'static str,
    samples: Option<(String, &'static str, u64)>,
    origin_unix_ns: Option<u64>,
    functions: FunctionTable,
    clock: Clock,
    origin_ns: u64,
    name: String,
}

struct OwnedInstant {
    thread: u32,
    time: u64,
    name: String,
    category: String,
    args: Vec<(String, Arg)>,
}

struct Mapping {
    pid: u32,
    start: u64,
    end: u64,
    file_offset: u64,
    path: String,
    build_id: Option<Vec<u8>>,
}

struct Code {
    thread: Option<u32>,
    pid: u32,
    time: u64,
    address: u64,
    size: u64,
    name: String,
    event: CodeEvent,
    code_index: Option<u64>,
    tier: Option<FuncTier>,
}

/// Events on their way to the writer, with the frames of their samples.
#[derive(Default)]
struct Batch {
    events: Vec<Event>,
    stacks: Vec<FuncId>,
    lines: Vec<u32>,
    /// The arguments of its enters.
    args: Vec<u64>,
    /// The helper's work for its samples.
    work: Vec<u8>,
}

impl Batch {
    fn with_capacity() -> Batch {
        Batch {
            events: Vec::with_capacity(BATCH),
            ..Batch::default()
        }
    }
}

/// An [`EventSink`] that forwards every event to `S` running on another thread.
pub struct Threaded<S> {
    batch: Batch,
    tx: Option<handoff::Sender<Batch>>,
    /// Batches the writer has emptied.
    spent: Receiver<Batch>,
    /// The inner sink's `finish` result.
    done: Receiver<io::Result<()>>,
    /// The writer: the inner sink, unless it was finished (and freed) there.
    worker: Option<JoinHandle<io::Result<Option<S>>>>,
    /// Per slot of the writer's last stacks ([`STACK_SLOTS`]), the thread whose last sample it
    /// holds: a sample's shared frames are sent as shared only when its thread's slot is its.
    slot_threads: Vec<Option<u32>>,
    /// Whether a function was declared (a helper can join only before).
    functions_declared: bool,
    /// Whether a helper joined.
    helped: bool,
}

/// Last stacks the writer's side keeps (a thread's is in slot `thread % STACK_SLOTS`), so that
/// what it holds does not grow with the number of threads.
const STACK_SLOTS: usize = 256;

impl<S: EventSink + Send + 'static> Threaded<S> {
    /// Starts `inner` on its own thread.
    pub fn new(inner: S) -> io::Result<Threaded<S>> {
        Threaded::try_new(inner).map_err(|(_, e)| e)
    }

    /// Starts `inner` on its own thread, or gives it back when no thread can start (an
    /// address-space or thread limit): the caller then writes on its own thread.
    pub fn try_new(inner: S) -> Result<Threaded<S>, (Option<S>, io::Error)> {
        let (tx, rx) = handoff::bounded::<Batch>(IN_FLIGHT, WAKE);
        let (spent_tx, spent) = channel::<Batch>();
        let (done_tx, done) = channel();
        // Handed over through a slot, so that a thread that does not start returns it.
        let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(inner)));
        let theirs = slot.clone();
        let spawned = std::thread::Builder::new()
            .name("writer".into())
            .spawn(move || {
                let inner = theirs.lock().ok().and_then(|mut s| s.take());
                match inner {
                    Some(inner) => run(inner, rx, spent_tx, done_tx),
                    None => Ok(None),
                }
            });
        let worker = match spawned {
            Ok(w) => w,
            Err(e) => {
                // The thread that did not start took nothing: the sink is in the slot.
                return Err((slot.lock().ok().and_then(|mut s| s.take()), e));
            }
        };
        Ok(Threaded {
            batch: Batch::with_capacity(),
            tx: Some(tx),
            spent,
            done,
            worker: Some(worker),
            slot_threads: vec![None; STACK_SLOTS],
            functions_declared: false,
            helped: false,
        })
    }

    /// Ends the thread and returns the inner sink (not finished).
    pub fn into_inner(mut self) -> io::Result<S> {
        self.flush()?;
        self.tx = None;
        self.join()?
            .ok_or_else(|| io::Error::other("the writer was already finished"))
    }

    fn push(&mut self, e: Event) -> io::Result<()> {
        self.batch.events.push(e);
        if self.batch.events.len() >= BATCH || self.batch.stacks.len() >= BATCH_FRAMES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.batch.events.is_empty() {
            return Ok(());
        }
        let next = self
            .spent
            .try_recv()
            .unwrap_or_else(|_| Batch::with_capacity());
        let batch = std::mem::replace(&mut self.batch, next);
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(batch).is_ok());
        if sent {
            Ok(())
        } else {
            // The writer stopped: its error is the one to report.
            self.tx = None;
            self.join().map(|_| ())
        }
    }

    fn join(&mut self) -> io::Result<Option<S>> {
        match self.worker.take() {
            Some(h) => h
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the writer thread panicked"))),
            None => Err(io::Error::other("the writer thread already ended")),
        }
    }
}

/// The writer's numbering of the driver's and the helper's functions (see the
/// [module docs](self)).
#[derive(Default)]
struct Renumber {
    functions: FuncInterner,
    /// Per side (0: the driver, 1: the helper): its id → the writer's.
    ids: [Vec<FuncId>; 2],
}

impl Renumber {
    /// Side `from`'s function `id`: the writer's id, and whether it is new to the writer.
    fn declare(&mut self, from: usize, id: FuncId, info: &FuncInfo) -> (FuncId, bool) {
        let (mine, new) = self.functions.add(info);
        if let Some(ids) = self.ids.get_mut(from) {
            let i = id.0 as usize;
            if ids.len() <= i {
                ids.resize(i + 1, FuncId(u32::MAX));
            }
            if let Some(slot) = ids.get_mut(i) {
                *slot = mine;
            }
        }
        (mine, new)
    }

    fn id(&self, from: usize, id: FuncId) -> FuncId {
        self.ids
            .get(from)
            .and_then(|ids| ids.get(id.0 as usize))
            .copied()
            .unwrap_or(id)
    }
}

/// The writer's side: the inner sink, the driver's threads' last stacks, and the helper
/// once it joined.
struct Writer<S> {
    inner: S,
    last_stacks: Vec<LastStack>,
    helper: Option<Box<dyn Helper>>,
    renumber: Option<Renumber>,
    /// The helper's threads' last stacks, numbered the writer's way, by slot, with the thread
    /// each holds.
    helper_stacks: Vec<(Option<u32>, Vec<FuncId>)>,
}

fn run<S: EventSink>(
    inner: S,
    rx: handoff::Receiver<Batch>,
    spent: Sender<Batch>,
    done: Sender<io::Result<()>>,
) -> io::Result<Option<S>> {
    let mut w = Writer {
        inner,
        last_stacks: Vec::new(),
        helper: None,
        renumber: None,
        helper_stacks: Vec::new(),
    };
    while let Some(mut batch) = rx.recv() {
        for e in batch.events.drain(..) {
            match e {
                Event::Finish => {
                    if let Some(helper) = w.helper.take() {
                        helper.end();
                    }
                    let _ = done.send(w.inner.finish());
                    // Freed here, while the driver goes on.
                    profkit_common::release::release(w);
                    return Ok(None);
                }
                Event::Helper(helper) => {
                    w.helper = Some(helper);
                    w.renumber = Some(Renumber::default());
                }
                Event::Change(change) => {
                    if let Some(helper) = w.helper.as_mut() {
                        helper.change(change);
                    }
                }
                Event::Helped(start, end) => w.helped(batch.work.get(start..end))?,
                e => {
                    let from = Batched {
                        stacks: &batch.stacks,
                        lines: &batch.lines,
                        args: &batch.args,
                    };
                    w.deliver(e, &from)?;
                }
            }
        }
        batch.stacks.clear();
        batch.lines.clear();
        batch.args.clear();
        batch.work.clear();
        // The driver may have ended: then the batch is simply dropped.
        let _ = spent.send(batch);
    }
    Ok(Some(w.inner))
}

/// The arrays of an event's batch.
struct Batched<'b> {
    stacks: &'b [FuncId],
    lines: &'b [u32],
    args: &'b [u64],
}

/// A thread's last sample's stack and lines, as the writer's side rebuilt them.
#[derive(Default)]
struct LastStack {
    stack: Vec<FuncId>,
    lines: Vec<u32>,
}

impl<S: EventSink> Writer<S> {
    /// Has the helper name the sample `work` describes.
    fn helped(&mut self, work: Option<&[u8]>) -> io::Result<()> {
        let (Some(helper), Some(renumber), Some(work)) =
            (self.helper.as_mut(), self.renumber.as_mut(), work)
        else {
            return Err(io::Error::other("a helper's sample without a helper"));
        };
        let mut sink = Helped {
            inner: &mut self.inner,
            renumber,
            last: &mut self.helper_stacks,
        };
        helper.sample(work, &mut sink)
    }

    fn deliver(&mut self, e: Event, from: &Batched<'_>) -> io::Result<()> {
        let inner = &mut self.inner;
        let renumber = self.renumber.as_mut();
        let id = |r: &Option<&mut Renumber>, f: FuncId| match r {
            Some(r) => r.id(0, f),
            None => f,
        };
        match e {
            Event::Begin(b) => {
                let Begin {
                    format,
                    samples,
                    origin_unix_ns,
                    functions,
                    clock,
                    origin_ns,
                    name,
                } = *b;
                inner.begin(&TraceInfo {
                    format,
                    functions: &functions,
                    clock,
                    origin_ns,
                    name: &name,
                    samples: samples.as_ref().map(|(kind, unit, period)| SampleWeight {
                        kind,
                        unit,
                        period: *period,
                    }),
                    origin_unix_ns,
                })
            }
            Event::Process(pid, name) => inner.process(&ProcessInfo { pid, name: &name }),
            Event::Thread(index, pid, tid, name) => inner.thread(&ThreadInfo {
                index,
                pid,
                tid,
                name: &name,
            }),
            Event::Function(f, info) => match renumber {
                Some(r) => match r.declare(0, f, &info) {
                    (mine, true) => inner.function(mine, &info),
                    (_, false) => Ok(()),
                },
                None => inner.function(f, &info),
            },
            Event::Enter(thread, func, time, depth, args) => inner.enter(&Enter {
                thread,
                func: id(&renumber, func),
                time,
                depth,
                args: from.args.get(args.0..args.1).unwrap_or_default(),
            }),
            Event::Exit(span) => inner.exit(&span),
            Event::Instant(i) => {
                let OwnedInstant {
                    thread,
                    time,
                    name,
                    category,
                    args,
                } = *i;
                let args: Vec<(&str, ArgValue<'_>)> = args
                    .iter()
                    .map(|(k, v)| {
                        let v = match v {
                            Arg::Str(s) => ArgValue::Str(s),
                            Arg::U64(v) => ArgValue::U64(*v),
                            Arg::I64(v) => ArgValue::I64(*v),
                            Arg::F64(v) => ArgValue::F64(*v),
                            Arg::Bytes(b) => ArgValue::Bytes(b),
                        };
                        (k.as_str(), v)
                    })
                    .collect();
                inner.instant(&Instant {
                    thread,
                    time,
                    name: &name,
                    category: &category,
                    args: &args,
                })
            }
            Event::Counter(pid, name, time, value) => inner.counter(&Counter {
                pid,
                name: &name,
                time,
                value,
            }),
            Event::Sample {
                thread,
                time,
                stack,
                lines,
                weight,
                shared,
            } => {
                // The thread's last stack (its slot's: the driver's side sends frames as shared
                // only when the slot is the thread's), cut to the shared frames, then this
                // sample's own.
                let slot = thread as usize % STACK_SLOTS;
                let last_stacks = &mut self.last_stacks;
                if last_stacks.len() <= slot {
                    last_stacks.resize_with(slot + 1, LastStack::default);
                }
                let mut spare = LastStack::default();
                let last = last_stacks.get_mut(slot).unwrap_or(&mut spare);
                last.stack.truncate(shared);
                let frames = from.stacks.get(stack.0..stack.1).unwrap_or_default();
                match &renumber {
                    Some(r) => last.stack.extend(frames.iter().map(|&f| r.id(0, f))),
                    None => last.stack.extend_from_slice(frames),
                }
                last.lines.truncate(shared);
                last.lines
                    .extend_from_slice(from.lines.get(lines.0..lines.1).unwrap_or_default());
                inner.sample(&Sample {
                    thread,
                    time,
                    stack: &last.stack,
                    lines: &last.lines,
                    weight,
                    shared,
                })
            }
            Event::CallPath {
                thread,
                stack,
                calls,
                inclusive,
                exclusive,
            } => inner.call_path(&CallPath {
                thread,
                stack: &from
                    .stacks
                    .get(stack.0..stack.1)
                    .unwrap_or_default()
                    .iter()
                    .map(|&f| id(&renumber, f))
                    .collect::<Vec<_>>(),
                calls,
                inclusive,
                exclusive,
            }),
            Event::Code(c) => {
                let Code {
                    thread,
                    pid,
                    time,
                    address,
                    size,
                    name,
                    event,
                    code_index,
                    tier,
                } = *c;
                inner.code(&CodeRegion {
                    thread,
                    pid,
                    time,
                    address,
                    size,
                    name: &name,
                    event,
                    code_index,
                    tier: tier.as_ref().map(|t| CodeTier {
                        name: &t.name,
                        color: t.color,
                        js: t.js,
                    }),
                })
            }
            Event::Mapping(m) => {
                let Mapping {
                    pid,
                    start,
                    end,
                    file_offset,
                    path,
                    build_id,
                } = *m;
                inner.mapping(&MappingInfo {
                    pid,
                    start,
                    end,
                    file_offset,
                    path: &path,
                    build_id: build_id.as_deref(),
                })
            }
            // Handled by `run`.
            Event::Finish | Event::Helper(_) | Event::Change(_) | Event::Helped(..) => Ok(()),
        }
    }
}

impl<S: EventSink + Send + 'static> EventSink for Threaded<S> {
    fn begin(&mut self, t: &TraceInfo<'_>) -> io::Result<()> {
        self.push(Event::Begin(Box::new(Begin {
            format: t.format,
            samples: t.samples.map(|w| (w.kind.to_string(), w.unit, w.period)),
            origin_unix_ns: t.origin_unix_ns,
            functions: t.functions.clone(),
            clock: t.clock,
            origin_ns: t.origin_ns,
            name: t.name.to_string(),
        })))
    }
    fn process(&mut self, p: &ProcessInfo<'_>) -> io::Result<()> {
        self.push(Event::Process(p.pid, p.name.to_string()))
    }
    fn thread(&mut self, t: &ThreadInfo<'_>) -> io::Result<()> {
        self.push(Event::Thread(t.index, t.pid, t.tid, t.name.to_string()))
    }
    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        self.functions_declared = true;
        self.push(Event::Function(id, Box::new(info.clone())))
    }
    fn enter(&mut self, call: &Enter<'_>) -> io::Result<()> {
        let b = &mut self.batch;
        let at = (b.args.len(), b.args.len() + call.args.len());
        b.args.extend_from_slice(call.args);
        self.push(Event::Enter(
            call.thread,
            call.func,
            call.time,
            call.depth,
            at,
        ))
    }
    fn exit(&mut self, span: &Span) -> io::Result<()> {
        self.push(Event::Exit(*span))
    }
    fn instant(&mut self, i: &Instant<'_>) -> io::Result<()> {
        let args = i
            .args
            .iter()
            .map(|(k, v)| {
                let v = match *v {
                    ArgValue::Str(s) => Arg::Str(s.to_string()),
                    ArgValue::U64(v) => Arg::U64(v),
                    ArgValue::I64(v) => Arg::I64(v),
                    ArgValue::F64(v) => Arg::F64(v),
                    ArgValue::Bytes(b) => Arg::Bytes(b.to_vec()),
                };
                (k.to_string(), v)
            })
            .collect();
        self.push(Event::Instant(Box::new(OwnedInstant {
            thread: i.thread,
            time: i.time,
            name: i.name.to_string(),
            category: i.category.to_string(),
            args,
        })))
    }
    fn counter(&mut self, c: &Counter<'_>) -> io::Result<()> {
        self.push(Event::Counter(c.pid, c.name.to_string(), c.time, c.value))
    }
    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        // Only what the writer's copy of the thread's last stack lacks (all of it when the
        // slot held another thread's).
        let slot = self.slot_threads.get_mut(s.thread as usize % STACK_SLOTS);
        let mine = slot.as_ref().is_some_and(|t| **t == Some(s.thread));
        if let Some(t) = slot {
            *t = Some(s.thread);
        }
        let shared = if mine { s.shared.min(s.stack.len()) } else { 0 };
        let new_frames = s.stack.get(shared..).unwrap_or_default();
        let new_lines = s.lines.get(shared.min(s.lines.len())..).unwrap_or_default();
        let b = &mut self.batch;
        let stack = (b.stacks.len(), b.stacks.len() + new_frames.len());
        b.stacks.extend_from_slice(new_frames);
        let lines = (b.lines.len(), b.lines.len() + new_lines.len());
        b.lines.extend_from_slice(new_lines);
        self.push(Event::Sample {
            thread: s.thread,
            time: s.time,
            stack,
            lines,
            weight: s.weight,
            shared,
        })
    }
    fn code(&mut self, c: &CodeRegion<'_>) -> io::Result<()> {
        self.push(Event::Code(Box::new(Code {
            thread: c.thread,
            pid: c.pid,
            time: c.time,
            address: c.address,
            size: c.size,
            name: c.name.to_string(),
            event: c.event,
            code_index: c.code_index,
            tier: c.tier.map(|t| FuncTier {
                name: t.name.to_string(),
                color: t.color,
                js: t.js,
            }),
        })))
    }
    fn mapping(&mut self, m: &MappingInfo<'_>) -> io::Result<()> {
        self.push(Event::Mapping(Box::new(Mapping {
            pid: m.pid,
            start: m.start,
            end: m.end,
            file_offset: m.file_offset,
            path: m.path.to_string(),
            build_id: m.build_id.map(<[u8]>::to_vec),
        })))
    }
    fn call_path(&mut self, p: &CallPath<'_>) -> io::Result<()> {
        let b = &mut self.batch;
        let stack = (b.stacks.len(), b.stacks.len() + p.stack.len());
        b.stacks.extend_from_slice(p.stack);
        self.push(Event::CallPath {
            thread: p.thread,
            stack,
            calls: p.calls,
            inclusive: p.inclusive,
            exclusive: p.exclusive,
        })
    }
    fn helper(&mut self, helper: Box<dyn Helper>) -> Result<(), Box<dyn Helper>> {
        if self.functions_declared || self.helped {
            return Err(helper);
        }
        self.helped = true;
        // A writer that stopped has its error: the driver meets it at its next event.
        let _ = self.push(Event::Helper(helper));
        Ok(())
    }
    fn hand_over(&mut self, change: Box<dyn Any + Send>) -> io::Result<()> {
        self.push(Event::Change(change))
    }
    fn helpers_sample(&mut self, work: &mut dyn FnMut(&mut Vec<u8>)) -> io::Result<()> {
        let b = &mut self.batch.work;
        let start = b.len();
        work(b);
        let end = b.len();
        self.push(Event::Helped(start, end))
    }
    fn finish(&mut self) -> io::Result<()> {
        self.push(Event::Finish)?;
        self.flush()?;
        self.tx = None;
        match self.done.recv() {
            Ok(result) => {
                // The thread frees the sink's memory; the process may end before it has.
                self.worker = None;
                result
            }
            // The writer ended early: its error.
            Err(_) => self.join().map(|_| ()),
        }
    }
}

/// The sink the helper names into, on the writer's thread: its functions and samples reach the
/// inner sink numbered the writer's way.
struct Helped<'w, S> {
    inner: &'w mut S,
    renumber: &'w mut Renumber,
    last: &'w mut Vec<(Option<u32>, Vec<FuncId>)>,
}

impl<S: EventSink> EventSink for Helped<'_, S> {
    fn begin(&mut self, _: &TraceInfo<'_>) -> io::Result<()> {
        Ok(())
    }
    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        match self.renumber.declare(1, id, info) {
            (mine, true) => self.inner.function(mine, info),
            (_, false) => Ok(()),
        }
    }
    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        // The thread's last stack, renumbered, when its slot holds it: only the frames past
        // the shared ones are renumbered.
        let slot = s.thread as usize % STACK_SLOTS;
        if self.last.len() <= slot {
            self.last.resize_with(slot + 1, Default::default);
        }
        let mut spare = (None, Vec::new());
        let (owner, stack) = self.last.get_mut(slot).unwrap_or(&mut spare);
        let shared = if *owner == Some(s.thread) {
            s.shared.min(s.stack.len()).min(stack.len())
        } else {
            0
        };
        *owner = Some(s.thread);
        stack.truncate(shared);
        let renumber = &*self.renumber;
        stack.extend(
            s.stack
                .get(shared..)
                .unwrap_or_default()
                .iter()
                .map(|&f| renumber.id(1, f)),
        );
        self.inner.sample(&Sample { stack, ..*s })
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Recorded, RecordedEvent};

    #[test]
    fn forwards_everything_in_order() {
        let functions = FunctionTable::new();
        let mut t = Threaded::new(Recorded::default()).unwrap();
        t.begin(&TraceInfo {
            format: "test",
            functions: &functions,
            clock: Clock::NANOSECONDS,
            origin_ns: 5,
            name: "t",
            samples: None,
            origin_unix_ns: None,
        })
        .unwrap();
        t.thread(&ThreadInfo {
            index: 0,
            pid: 1,
            tid: 2,
            name: "main",
        })
        .unwrap();
        for i in 0..2000u64 {
            t.sample(&Sample {
                thread: 0,
                time: i,
                stack: &[FuncId(1), FuncId(2)],
                lines: &[],
                weight: 1,
                shared: 0,
            })
            .unwrap();
        }
        let r = t.into_inner().unwrap();
        assert_eq!(r.origin_ns, 5);
        let times: Vec<u64> = r
            .events
            .iter()
            .filter_map(|e| match e {
                RecordedEvent::Sample { time, .. } => Some(*time),
                _ => None,
            })
            .collect();
        assert_eq!(times, (0..2000).collect::<Vec<_>>());
    }

    /// Samples of interleaved threads (more than the writer keeps stacks of, so that threads
    /// share slots), each saying how many outer frames it shares with its thread's last (a
    /// true count or less): the writer's side gets every stack and its lines whole, as they
    /// were given.
    #[test]
    fn a_stack_sent_in_part_arrives_whole() {
        let mut t = Threaded::new(Recorded::default()).unwrap();
        let mut rng = profkit_testkit::Xorshift::new(0x9e37_79b9_7f4a_7c15u64);
        let mut next = |n: u64| rng.below(n);
        let threads = [5, STACK_SLOTS as u64 * 2 + 3];
        let mut last: Vec<Vec<(FuncId, u32)>> = vec![Vec::new(); threads[1] as usize];
        let mut sent = Vec::new();
        for i in 0..20_000u64 {
            let thread = next(threads[(i / 10_000) as usize]) as u32;
            let prev = &last[thread as usize];
            let keep = next(prev.len() as u64 + 1) as usize;
            let mut frames: Vec<(FuncId, u32)> = prev[..keep].to_vec();
            frames.extend((0..next(6)).map(|_| (FuncId(next(4) as u32), next(3) as u32)));
            let common = frames.iter().zip(prev).take_while(|(a, b)| a == b).count();
            let shared = next(common as u64 + 1) as usize;
            let stack: Vec<FuncId> = frames.iter().map(|f| f.0).collect();
            let lines: Vec<u32> = frames.iter().map(|f| f.1).collect();
            let lines = if thread % 5 == 4 { Vec::new() } else { lines };
            t.sample(&Sample {
                thread,
                time: i,
                stack: &stack,
                lines: &lines,
                weight: 1,
                shared,
            })
            .unwrap();
            sent.push((thread, stack, lines));
            last[thread as usize] = frames;
        }
        let r = t.into_inner().unwrap();
        let got: Vec<(u32, Vec<FuncId>, Vec<u32>)> = r
            .events
            .into_iter()
            .filter_map(|e| match e {
                RecordedEvent::Sample {
                    thread,
                    stack,
                    lines,
                    ..
                } => Some((thread, stack, lines)),
                _ => None,
            })
            .collect();
        assert_eq!(got, sent);
    }

    /// What reached the sink on the writer's thread, in order, kept for the test.
    #[derive(Clone, Default)]
    struct Log(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl Log {
        fn push(&self, line: String) {
            self.0.lock().unwrap().push(line);
        }
        fn lines(&self) -> Vec<String> {
            self.0.lock().unwrap().clone()
        }
    }

    impl EventSink for Log {
        fn begin(&mut self, _: &TraceInfo<'_>) -> io::Result<()> {
            Ok(())
        }
        fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
            self.push(format!(
                "fn {} {}",
                id.0,
                info.name.as_deref().unwrap_or("?")
            ));
            Ok(())
        }
        fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
            let ids: Vec<u32> = s.stack.iter().map(|f| f.0).collect();
            self.push(format!("sample {} {ids:?}", s.thread));
            Ok(())
        }
        fn finish(&mut self) -> io::Result<()> {
            self.push("finish".into());
            Ok(())
        }
    }

    /// A helper whose work is its sample's stack, as names: it numbers the names itself (in
    /// the order it meets them) and logs the changes it is handed and its end.
    struct Names {
        ids: Vec<String>,
        log: Log,
    }

    impl Helper for Names {
        fn change(&mut self, change: Box<dyn Any + Send>) {
            if let Ok(c) = change.downcast::<&str>() {
                self.log.push(format!("change {c}"));
            }
        }
        fn sample(&mut self, work: &[u8], sink: &mut dyn EventSink) -> io::Result<()> {
            let text = std::str::from_utf8(work).unwrap();
            let mut stack = Vec::new();
            for name in text.split(';') {
                let id = match self.ids.iter().position(|n| n == name) {
                    Some(i) => i,
                    None => {
                        self.ids.push(name.to_string());
                        let info = FuncInfo {
                            name: Some(name.to_string()),
                            ..FuncInfo::default()
                        };
                        sink.function(FuncId(self.ids.len() as u32 - 1), &info)?;
                        self.ids.len() - 1
                    }
                };
                stack.push(FuncId(id as u32));
            }
            sink.sample(&Sample {
                thread: 7,
                time: 0,
                stack: &stack,
                lines: &[],
                weight: 1,
                shared: 0,
            })
        }
        fn end(self: Box<Self>) {
            self.log.push("helper ends".into());
        }
    }

    /// The helper's samples arrive where the driver marked them, its changes before them, and
    /// both sides' functions numbered as one side naming every sample would have numbered
    /// them: declared once, in the order they first appear.
    #[test]
    fn a_helpers_samples_and_functions_arrive_as_one_drivers() {
        let log = Log::default();
        let mut t = Threaded::new(log.clone()).unwrap();
        let helper = Names {
            ids: Vec::new(),
            log: log.clone(),
        };
        assert!(t.helper(Box::new(helper)).is_ok());
        let info = |name: &str| FuncInfo {
            name: Some(name.to_string()),
            ..FuncInfo::default()
        };
        let sample = |t: &mut Threaded<Log>, stack: &[FuncId]| {
            t.sample(&Sample {
                thread: 1,
                time: 0,
                stack,
                lines: &[],
                weight: 1,
                shared: 0,
            })
        };
        // The driver's 0 is a.
        t.function(FuncId(0), &info("a")).unwrap();
        sample(&mut t, &[FuncId(0)]).unwrap();
        // The helper meets b (its 0), then a (its 1): b is new, a is the writer's 0.
        t.hand_over(Box::new("first")).unwrap();
        t.helpers_sample(&mut |w| w.extend_from_slice(b"b;a"))
            .unwrap();
        // The driver's 1 is b, which the writer has (its 1): not declared again.
        t.function(FuncId(1), &info("b")).unwrap();
        t.function(FuncId(2), &info("c")).unwrap();
        sample(&mut t, &[FuncId(1), FuncId(2), FuncId(0)]).unwrap();
        t.helpers_sample(&mut |w| w.extend_from_slice(b"a;c;d"))
            .unwrap();
        t.finish().unwrap();
        let want = [
            "fn 0 a",
            "sample 1 [0]",
            "change first",
            "fn 1 b",
            "sample 7 [1, 0]",
            "fn 2 c",
            "sample 1 [1, 2, 0]",
            "fn 3 d",
            "sample 7 [0, 2, 3]",
            "helper ends",
            "finish",
        ];
        assert_eq!(log.lines(), want);
    }

    /// A helper joins only before any function is declared (the numbering starts with it).
    #[test]
    fn a_helper_joins_before_the_first_function() {
        let log = Log::default();
        let mut t = Threaded::new(log.clone()).unwrap();
        t.function(FuncId(0), &FuncInfo::default()).unwrap();
        let helper = Names {
            ids: Vec::new(),
            log,
        };
        assert!(t.helper(Box::new(helper)).is_err());
        t.finish().unwrap();
    }

    struct Failing;
    impl EventSink for Failing {
        fn begin(&mut self, _: &TraceInfo<'_>) -> io::Result<()> {
            Ok(())
        }
        fn sample(&mut self, _: &Sample<'_>) -> io::Result<()> {
            Err(io::Error::other("disk full"))
        }
        fn finish(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_writers_error_reaches_the_driver() {
        let mut t = Threaded::new(Failing).unwrap();
        let mut result = Ok(());
        for i in 0..(BATCH * (IN_FLIGHT + 4)) as u64 {
            result = t.sample(&Sample {
                thread: 0,
                time: i,
                stack: &[],
                lines: &[],
                weight: 1,
                shared: 0,
            });
            if result.is_err() {
                break;
            }
        }
        let end = result.and_then(|_| t.finish());
        assert_eq!(end.unwrap_err().to_string(), "disk full");
    }
}
