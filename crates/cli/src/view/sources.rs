//! The source files `profkit view` may show: only those the served profile names.
//!
//! The Firefox Profiler's source view asks the symbol server (`POST /source/v1`, the API of
//! samply's server and profiler-get-symbols: `{debugName, debugId, moduleOffset, file}` →
//! `{symbolsLastModified, sourceLastModified, file, source}`) for a function's file. This is a
//! security boundary: a request names any path, so the answer comes only for a file **the
//! profile names** (a `funcTable.fileName` or `shared.sources` entry). Its text is the
//! recording's own copy when a jitdump embedded one (SAMPLY_EMBEDDED_SOURCE_FILE, the record
//! V8, wasmtime-like JITs and profkit's JIT API write), else the file on disk when the name is
//! an absolute path to a regular file of at most [`MAX_FILE`] bytes. Anything else is a 404
//! with a JSON `error`.

use std::collections::{HashMap, HashSet};
use std::io::{BufReader, Read};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

/// The largest source file read from disk or kept from a jitdump.
pub const MAX_FILE: u64 = 64 << 20;
/// The most bytes of embedded sources kept in memory.
const MAX_EMBEDDED: usize = 256 << 20;

/// The files a profile names, and the texts the recording carries.
#[derive(Debug, Default)]
pub struct Sources {
    named: HashSet<String>,
    embedded: HashMap<String, Vec<u8>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Profile {
    threads: Vec<Thread>,
    shared: Shared,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Thread {
    #[serde(rename = "funcTable")]
    func_table: Columns,
    #[serde(rename = "stringArray")]
    string_array: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Shared {
    #[serde(rename = "stringArray")]
    string_array: Vec<String>,
    sources: Columns,
}

/// The columns that hold file names: indices into a string array.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Columns {
    #[serde(rename = "fileName")]
    file_name: Vec<Value>,
    filename: Vec<Value>,
}

impl Sources {
    /// The file names of the Firefox Profiler profile at `path` (gzip or plain; the processed
    /// format, whose `funcTable.fileName` indexes the thread's `stringArray`, or newer versions'
    /// `shared.sources` and `shared.stringArray`). A profile that cannot be read names nothing.
    pub fn of_profile(path: &Path) -> std::io::Result<Sources> {
        let file = std::fs::File::open(path)?;
        let mut r = BufReader::new(file);
        let gz = r.fill_buf_magic()?;
        let profile: Profile = if gz {
            serde_json::from_reader(BufReader::new(flate2::bufread::MultiGzDecoder::new(r)))?
        } else {
            serde_json::from_reader(r)?
        };
        let mut named = HashSet::new();
        let mut add = |strings: &[String], col: &[Value]| {
            for v in col {
                if let Some(s) = v.as_u64().and_then(|i| strings.get(i as usize)) {
                    named.insert(s.clone());
                }
            }
        };
        let shared = &profile.shared.string_array;
        add(shared, &profile.shared.sources.filename);
        for t in &profile.threads {
            let strings = if t.string_array.is_empty() {
                shared
            } else {
                &t.string_array
            };
            add(strings, &t.func_table.file_name);
        }
        Ok(Sources {
            named,
            embedded: HashMap::new(),
        })
    }

    /// How many files the profile names.
    pub fn named(&self) -> usize {
        self.named.len()
    }

    /// How many of them a jitdump carries.
    pub fn embedded(&self) -> usize {
        self.embedded.len()
    }

    /// Keeps the embedded sources of the jitdump at `path` for the files the profile names
    /// (a later record of a path replaces an earlier one, as the JIT rewrote it).
    pub fn add_jitdump(&mut self, path: &Path) -> anyhow::Result<()> {
        use profkit_jitdump::read::Record;
        let bytes = profkit_common::FileBytes::open_regular(path, 40)?;
        let dump = profkit_jitdump::JitDump::parse(&bytes)?;
        let mut kept: usize = self.embedded.values().map(Vec::len).sum();
        for raw in dump.records() {
            let Ok(raw) = raw else { break };
            let Ok(Record::EmbeddedSourceFile(s)) = raw.parse() else {
                continue;
            };
            let name = String::from_utf8_lossy(s.path);
            if !self.named.contains(name.as_ref()) || s.content.len() as u64 > MAX_FILE {
                continue;
            }
            if kept + s.content.len() > MAX_EMBEDDED {
                break;
            }
            kept += s.content.len();
            self.embedded.insert(name.into_owned(), s.content.to_vec());
        }
        Ok(())
    }

    /// Answers a `/source/v1` request body: a status and the JSON to send.
    pub fn answer(&self, body: &[u8]) -> (u16, String) {
        let file = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("file")?.as_str().map(str::to_string));
        let Some(file) = file else {
            return error(400, "expected a JSON object with a \"file\" string".into());
        };
        if !self.named.contains(&file) {
            return error(
                404,
                format!("{file}: not a file this profile names; profkit view shows only those"),
            );
        }
        let text = match self.embedded.get(&file) {
            Some(t) => String::from_utf8_lossy(t).into_owned(),
            None => match read_named(&file) {
                Ok(t) => t,
                Err(e) => return error(404, format!("{file}: {e}")),
            },
        };
        let json = serde_json::json!({
            "symbolsLastModified": null,
            "sourceLastModified": null,
            "file": file,
            "source": text,
        });
        (200, json.to_string())
    }
}

/// Reads a source file from disk: an absolute path to a regular file (opened without blocking,
/// so a FIFO does not hang the server) of at most [`MAX_FILE`] bytes.
fn read_named(file: &str) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = Path::new(file);
    if !path.is_absolute() {
        return Err(std::io::Error::other(
            "a relative path, and the recording embeds no copy",
        ));
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > MAX_FILE {
        return Err(std::io::Error::other("over 64 MiB"));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(MAX_FILE).read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn error(code: u16, msg: String) -> (u16, String) {
    (code, serde_json::json!({ "error": msg }).to_string())
}

/// Answers a `/symbolicate/v5` request: every library "not found", every address unnamed —
/// the shape the Firefox Profiler checks (`results[].found_modules`, `results[].stacks`), so
/// it keeps the names the profile has instead of failing.
pub fn no_symbols(body: &[u8]) -> (u16, String) {
    let Ok(req) = serde_json::from_slice::<Value>(body) else {
        return error(400, "expected a symbolication request (JSON)".into());
    };
    let empty = Vec::new();
    let jobs = req.get("jobs").and_then(Value::as_array).unwrap_or(&empty);
    let results: Vec<Value> = jobs
        .iter()
        .map(|job| {
            let map = job
                .get("memoryMap")
                .and_then(Value::as_array)
                .unwrap_or(&empty);
            let modules: serde_json::Map<String, Value> = map
                .iter()
                .filter_map(|m| {
                    let (name, id) = (m.get(0)?.as_str()?, m.get(1)?.as_str()?);
                    Some((format!("{name}/{id}"), Value::Bool(false)))
                })
                .collect();
            let stacks: Vec<Value> = job
                .get("stacks")
                .and_then(Value::as_array)
                .unwrap_or(&empty)
                .iter()
                .map(|stack| {
                    let frames = stack.as_array().unwrap_or(&empty);
                    Value::Array(
                        frames
                            .iter()
                            .enumerate()
                            .map(|(i, f)| {
                                let module = f
                                    .get(0)
                                    .and_then(Value::as_u64)
                                    .and_then(|m| map.get(m as usize)?.get(0)?.as_str())
                                    .unwrap_or("");
                                let offset = f.get(1).and_then(Value::as_u64).unwrap_or(0);
                                serde_json::json!({
                                    "frame": i,
                                    "module": module,
                                    "module_offset": format!("{offset:#x}"),
                                })
                            })
                            .collect(),
                    )
                })
                .collect();
            serde_json::json!({ "found_modules": modules, "stacks": stacks })
        })
        .collect();
    (200, serde_json::json!({ "results": results }).to_string())
}

/// Whether a buffered reader's next bytes are gzip's magic.
trait Magic {
    fn fill_buf_magic(&mut self) -> std::io::Result<bool>;
}

impl<R: Read> Magic for BufReader<R> {
    fn fill_buf_magic(&mut self) -> std::io::Result<bool> {
        use std::io::BufRead;
        Ok(self.fill_buf()?.starts_with(&[0x1f, 0x8b]))
    }
}
