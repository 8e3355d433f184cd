//! Counters (SAMPLE COUNTERS_DESC and COUNTERS, v5+): the descriptions and the values, each
//! list validated when its event is decoded and iterated lazily.

use crate::cursor::Cursor;
use crate::error::{self, Result};
use crate::raw::*;

/// A counter description (COUNTERS_DESC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterDesc<'a> {
    /// Section mask (JIT 1<<8, GC 1<<9, ...).
    pub section: u64,
    /// Section name (PERFCOUNTERS only).
    pub section_name: &'a [u8],
    /// Counter name.
    pub name: &'a [u8],
    /// Value type (INT 0 ... TIME_INTERVAL 7).
    pub ctype: u64,
    /// Unit mask.
    pub unit: u64,
    /// Variance mask.
    pub variance: u64,
    /// Index used by COUNTERS samples.
    pub index: u64,
}

/// A COUNTERS_DESC list.
#[derive(Clone, Copy, Debug)]
pub struct CounterDescs<'a> {
    c: Cursor<'a>,
    n: u32,
    version: u8,
}

impl CounterDescs<'_> {
    /// Number of descriptions.
    pub fn len(&self) -> usize {
        self.n as usize
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// One description; `[type][unit][variance]` are bytes in v13-14 only.
fn counter_desc<'a>(c: &mut Cursor<'a>, version: u8) -> Result<CounterDesc<'a>> {
    let section = c.uleb("counter section")?;
    let section_name = if section == COUNTER_SECTION_PERFCOUNTERS {
        c.cstr("counter section name")?
    } else {
        &[]
    };
    let name = c.cstr("counter name")?;
    let byte_fields = (13..=14).contains(&version);
    let mut f = |what| -> Result<u64> {
        if byte_fields {
            Ok(u64::from(c.u8(what)?))
        } else {
            c.uleb(what)
        }
    };
    let ctype = f("counter type")?;
    let unit = f("counter unit")?;
    let variance = f("counter variance")?;
    let index = c.uleb("counter index")?;
    Ok(CounterDesc {
        section,
        section_name,
        name,
        ctype,
        unit,
        variance,
        index,
    })
}

impl<'a> Iterator for CounterDescs<'a> {
    type Item = CounterDesc<'a>;
    fn next(&mut self) -> Option<CounterDesc<'a>> {
        if self.n == 0 {
            return None;
        }
        self.n -= 1;
        counter_desc(&mut self.c, self.version).ok()
    }
}

/// A counter value as written: a delta from the counter's previous value (except strings).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CounterValue<'a> {
    /// INT, WORD, LONG, TIME_INTERVAL: a signed delta.
    Signed(i64),
    /// UINT, ULONG: an unsigned delta (wrapping).
    Unsigned(u64),
    /// DOUBLE: the raw value.
    Double(f64),
    /// STRING: the value, or None.
    String(Option<&'a [u8]>),
}

/// The values of one COUNTERS event: `(index, type, value)`.
#[derive(Clone, Copy, Debug)]
pub struct CounterValues<'a> {
    c: Cursor<'a>,
    version: u8,
    done: bool,
}

/// One value (`None` at the 0 index that ends the list).
fn counter_value<'a>(
    c: &mut Cursor<'a>,
    version: u8,
) -> Result<Option<(u64, u64, CounterValue<'a>)>> {
    let index = c.uleb("counter index")?;
    if index == 0 {
        return Ok(None);
    }
    let ctype = if (13..=14).contains(&version) {
        u64::from(c.u8("counter type")?)
    } else {
        c.uleb("counter type")?
    };
    let v = match ctype {
        COUNTER_INT | COUNTER_WORD | COUNTER_LONG | COUNTER_TIME_INTERVAL => {
            CounterValue::Signed(c.sleb("counter value")?)
        }
        COUNTER_UINT | COUNTER_ULONG => CounterValue::Unsigned(c.uleb("counter value")?),
        COUNTER_DOUBLE => {
            let b = c.u64le("counter value")?;
            CounterValue::Double(f64::from_bits(b))
        }
        COUNTER_STRING => {
            if c.u8("counter string flag")? != 0 {
                CounterValue::String(Some(c.cstr("counter string")?))
            } else {
                CounterValue::String(None)
            }
        }
        other => return Err(error::bad_value(c.offset(), "counter type", other)),
    };
    Ok(Some((index, ctype, v)))
}

impl<'a> Iterator for CounterValues<'a> {
    type Item = (u64, u64, CounterValue<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match counter_value(&mut self.c, self.version) {
            Ok(Some(x)) => Some(x),
            _ => {
                self.done = true;
                None
            }
        }
    }
}

/// Decodes (and validates) a COUNTERS_DESC payload after its time: `[n u]` descriptions.
pub(super) fn counter_descs<'a>(c: &mut Cursor<'a>, version: u8) -> Result<CounterDescs<'a>> {
    let n = c.count("counter count", 5)? as u32;
    let start = *c;
    for _ in 0..n {
        counter_desc(c, version)?;
    }
    Ok(CounterDescs {
        c: start.up_to(c),
        n,
        version,
    })
}

/// Decodes (and validates) a COUNTERS payload after its time: values up to the 0 index.
pub(super) fn counter_values<'a>(c: &mut Cursor<'a>, version: u8) -> Result<CounterValues<'a>> {
    let start = *c;
    while counter_value(c, version)?.is_some() {}
    Ok(CounterValues {
        c: start.up_to(c),
        version,
        done: false,
    })
}
