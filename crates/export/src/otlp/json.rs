//! The OTLP/JSON encoding of a `ProfilesData` (opentelemetry-proto docs/specification.md,
//! "JSON Protobuf Encoding"): proto3's JSON mapping with field names in lowerCamelCase,
//! 64-bit integers (`int64`, `uint64`, `fixed64`) as decimal strings, `bytes` as base64, and
//! the OTLP deviation that trace and span ids are hex strings. Fields with their default value
//! are left out (as proto3's JSON mapping does), except that every dictionary table keeps its
//! zero entry (`{}`). Strings go through profkit-common's one JSON escaper.

use profkit_common::json::{push_hex, push_str};

use super::generated::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use super::generated::profiles::v1development as pb;
use super::generated::resource::v1::Resource;

/// Appends `data` as one OTLP/JSON object (no newline).
pub fn profiles_data(out: &mut Vec<u8>, data: &pb::ProfilesData) {
    let mut o = Obj::open(out);
    o.list(
        "resourceProfiles",
        &data.resource_profiles,
        resource_profiles,
    );
    o.message("dictionary", data.dictionary.as_ref(), dictionary);
    o.close();
}

/// A JSON object being written.
struct Obj<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Obj<'a> {
    fn open(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Obj { out, first: true }
    }

    fn key(&mut self, k: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        push_str(self.out, k);
        self.out.push(b':');
    }

    /// A 32-bit integer, left out when 0.
    fn int32(&mut self, k: &str, v: impl Into<i64>) {
        let v = v.into();
        if v != 0 {
            self.key(k);
            self.out
                .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        }
    }

    /// A 64-bit integer as a decimal string, left out when 0.
    fn int64(&mut self, k: &str, v: impl itoa::Integer + Default + PartialEq) {
        if v != Default::default() {
            self.key(k);
            push_int_string(self.out, v);
        }
    }

    fn string(&mut self, k: &str, v: &str) {
        if !v.is_empty() {
            self.key(k);
            push_str(self.out, v);
        }
    }

    fn base64(&mut self, k: &str, v: &[u8]) {
        self.quoted(k, v, push_base64);
    }

    fn hex(&mut self, k: &str, v: &[u8]) {
        self.quoted(k, v, push_hex);
    }

    /// Bytes in quotes as `encode` writes them, left out when empty.
    fn quoted(&mut self, k: &str, v: &[u8], encode: fn(&mut Vec<u8>, &[u8])) {
        if !v.is_empty() {
            self.key(k);
            self.out.push(b'"');
            encode(self.out, v);
            self.out.push(b'"');
        }
    }

    /// A message field, left out when absent.
    fn message<T>(&mut self, k: &str, v: Option<&T>, write: fn(&mut Vec<u8>, &T)) {
        if let Some(v) = v {
            self.key(k);
            write(self.out, v);
        }
    }

    fn int32s(&mut self, k: &str, v: &[i32]) {
        self.list(k, v, |out, x| {
            out.extend_from_slice(itoa::Buffer::new().format(*x).as_bytes())
        });
    }

    fn int64s<T: itoa::Integer + Copy>(&mut self, k: &str, v: &[T]) {
        self.list(k, v, |out, x| push_int_string(out, *x));
    }

    fn strings(&mut self, k: &str, v: &[String]) {
        self.list(k, v, |out, x| push_str(out, x));
    }

    /// A repeated field, each element as `each` writes it; left out when empty.
    fn list<T>(&mut self, k: &str, v: &[T], each: impl Fn(&mut Vec<u8>, &T)) {
        if v.is_empty() {
            return;
        }
        self.key(k);
        self.out.push(b'[');
        for (i, x) in v.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            each(self.out, x);
        }
        self.out.push(b']');
    }

    fn close(self) {
        self.out.push(b'}');
    }
}

fn push_int_string(out: &mut Vec<u8>, v: impl itoa::Integer) {
    out.push(b'"');
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    out.push(b'"');
}

/// Standard base64 with padding (RFC 4648 section 4), as proto3's JSON mapping writes bytes.
pub fn push_base64(out: &mut Vec<u8>, bytes: &[u8]) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let sym = |v: u32| ALPHABET.get((v & 63) as usize).copied().unwrap_or(b'=');
    for chunk in bytes.chunks(3) {
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (b(0) << 16) | (b(1) << 8) | b(2);
        out.push(sym(n >> 18));
        out.push(sym(n >> 12));
        out.push(if chunk.len() > 1 { sym(n >> 6) } else { b'=' });
        out.push(if chunk.len() > 2 { sym(n) } else { b'=' });
    }
}

fn resource_profiles(out: &mut Vec<u8>, r: &pb::ResourceProfiles) {
    let mut o = Obj::open(out);
    o.message("resource", r.resource.as_ref(), resource);
    o.list("scopeProfiles", &r.scope_profiles, scope_profiles);
    o.string("schemaUrl", &r.schema_url);
    o.close();
}

fn resource(out: &mut Vec<u8>, r: &Resource) {
    let mut o = Obj::open(out);
    o.list("attributes", &r.attributes, key_value);
    o.int32("droppedAttributesCount", r.dropped_attributes_count);
    // entity_refs: profkit writes none.
    o.close();
}

fn scope_profiles(out: &mut Vec<u8>, s: &pb::ScopeProfiles) {
    let mut o = Obj::open(out);
    o.message("scope", s.scope.as_ref(), instrumentation_scope);
    o.list("profiles", &s.profiles, profile);
    o.string("schemaUrl", &s.schema_url);
    o.close();
}

fn instrumentation_scope(out: &mut Vec<u8>, s: &InstrumentationScope) {
    let mut o = Obj::open(out);
    o.string("name", &s.name);
    o.string("version", &s.version);
    o.list("attributes", &s.attributes, key_value);
    o.int32("droppedAttributesCount", s.dropped_attributes_count);
    o.close();
}

fn key_value(out: &mut Vec<u8>, kv: &KeyValue) {
    let mut o = Obj::open(out);
    o.string("key", &kv.key);
    o.message("value", kv.value.as_ref(), any);
    o.int32("keyStrindex", kv.key_strindex);
    o.close();
}

fn any(out: &mut Vec<u8>, v: &AnyValue) {
    let mut o = Obj::open(out);
    match &v.value {
        None => {}
        Some(any_value::Value::StringValue(s)) => {
            o.key("stringValue");
            push_str(o.out, s);
        }
        Some(any_value::Value::BoolValue(b)) => {
            o.key("boolValue");
            o.out.extend_from_slice(if *b { b"true" } else { b"false" });
        }
        Some(any_value::Value::IntValue(n)) => {
            o.key("intValue");
            push_int_string(o.out, *n);
        }
        Some(any_value::Value::DoubleValue(x)) => {
            o.key("doubleValue");
            if x.is_nan() {
                o.out.extend_from_slice(b"\"NaN\"");
            } else if x.is_infinite() {
                o.out.extend_from_slice(if *x > 0.0 {
                    b"\"Infinity\""
                } else {
                    b"\"-Infinity\""
                });
            } else {
                o.out
                    .extend_from_slice(ryu::Buffer::new().format_finite(*x).as_bytes());
            }
        }
        Some(any_value::Value::ArrayValue(a)) => {
            o.key("arrayValue");
            let mut a_o = Obj::open(o.out);
            a_o.list("values", &a.values, any);
            a_o.close();
        }
        Some(any_value::Value::KvlistValue(l)) => {
            o.key("kvlistValue");
            let mut l_o = Obj::open(o.out);
            l_o.list("values", &l.values, key_value);
            l_o.close();
        }
        Some(any_value::Value::BytesValue(b)) => {
            // an empty bytes value is still the value set
            o.key("bytesValue");
            o.out.push(b'"');
            push_base64(o.out, b);
            o.out.push(b'"');
        }
        Some(any_value::Value::StringValueStrindex(i)) => {
            o.key("stringValueStrindex");
            o.out
                .extend_from_slice(itoa::Buffer::new().format(*i).as_bytes());
        }
    }
    o.close();
}

fn value_type(out: &mut Vec<u8>, v: &pb::ValueType) {
    let mut o = Obj::open(out);
    o.int32("typeStrindex", v.type_strindex);
    o.int32("unitStrindex", v.unit_strindex);
    o.close();
}

fn profile(out: &mut Vec<u8>, p: &pb::Profile) {
    let mut o = Obj::open(out);
    o.message("sampleType", p.sample_type.as_ref(), value_type);
    o.list("samples", &p.samples, sample);
    o.int64("timeUnixNano", p.time_unix_nano);
    o.int64("durationNano", p.duration_nano);
    o.message("periodType", p.period_type.as_ref(), value_type);
    o.int64("period", p.period);
    o.base64("profileId", &p.profile_id);
    o.int32("droppedAttributesCount", p.dropped_attributes_count);
    o.string("originalPayloadFormat", &p.original_payload_format);
    o.base64("originalPayload", &p.original_payload);
    o.int32s("attributeIndices", &p.attribute_indices);
    o.close();
}

fn sample(out: &mut Vec<u8>, s: &pb::Sample) {
    let mut o = Obj::open(out);
    o.int32("stackIndex", s.stack_index);
    o.int32s("attributeIndices", &s.attribute_indices);
    o.int32("linkIndex", s.link_index);
    o.int64s("values", &s.values);
    o.int64s("timestampsUnixNano", &s.timestamps_unix_nano);
    o.close();
}

fn dictionary(out: &mut Vec<u8>, d: &pb::ProfilesDictionary) {
    let mut o = Obj::open(out);
    o.list("mappingTable", &d.mapping_table, mapping);
    o.list("locationTable", &d.location_table, location);
    o.list("functionTable", &d.function_table, function);
    o.list("linkTable", &d.link_table, link);
    o.strings("stringTable", &d.string_table);
    o.list("attributeTable", &d.attribute_table, key_value_and_unit);
    o.list("stackTable", &d.stack_table, stack);
    o.close();
}

fn mapping(out: &mut Vec<u8>, m: &pb::Mapping) {
    let mut o = Obj::open(out);
    o.int64("memoryStart", m.memory_start);
    o.int64("memoryLimit", m.memory_limit);
    o.int64("fileOffset", m.file_offset);
    o.int32("filenameStrindex", m.filename_strindex);
    o.int32s("attributeIndices", &m.attribute_indices);
    o.close();
}

fn location(out: &mut Vec<u8>, l: &pb::Location) {
    let mut o = Obj::open(out);
    o.int32("mappingIndex", l.mapping_index);
    o.int64("address", l.address);
    o.list("lines", &l.lines, line);
    o.int32s("attributeIndices", &l.attribute_indices);
    o.close();
}

fn line(out: &mut Vec<u8>, l: &pb::Line) {
    let mut o = Obj::open(out);
    o.int32("functionIndex", l.function_index);
    o.int64("line", l.line);
    o.int64("column", l.column);
    o.close();
}

fn function(out: &mut Vec<u8>, f: &pb::Function) {
    let mut o = Obj::open(out);
    o.int32("nameStrindex", f.name_strindex);
    o.int32("systemNameStrindex", f.system_name_strindex);
    o.int32("filenameStrindex", f.filename_strindex);
    o.int64("startLine", f.start_line);
    o.close();
}

fn link(out: &mut Vec<u8>, l: &pb::Link) {
    let mut o = Obj::open(out);
    // OTLP/JSON writes trace and span ids as hex, not base64.
    o.hex("traceId", &l.trace_id);
    o.hex("spanId", &l.span_id);
    o.close();
}

fn key_value_and_unit(out: &mut Vec<u8>, kv: &pb::KeyValueAndUnit) {
    let mut o = Obj::open(out);
    o.int32("keyStrindex", kv.key_strindex);
    o.message("value", kv.value.as_ref(), any);
    o.int32("unitStrindex", kv.unit_strindex);
    o.close();
}

fn stack(out: &mut Vec<u8>, s: &pb::Stack) {
    let mut o = Obj::open(out);
    o.int32s("locationIndices", &s.location_indices);
    o.close();
}

#[cfg(test)]
mod tests {
    use super::push_base64;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            let mut out = Vec::new();
            push_base64(&mut out, plain.as_bytes());
            assert_eq!(String::from_utf8(out).unwrap(), enc);
        }
    }
}
