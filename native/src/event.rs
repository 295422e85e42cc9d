//! One Kafka record and the CloudEvent it carries, read as gateway/cloudevents.py reads it (docs/validation.md
//! section 4: structured when `content-type` starts with `application/cloudevents`, else `ce_` headers).

use serde_json::{Map, Value};

use crate::json::{self, JsonError};
use crate::pyrepr::{truncate_bytes, truncate_json, Actual};
use crate::tape::{self, Doc};
use crate::value::{same_text, Val};
use crate::verdict::{Expected, Rule, Violation};

/// A Kafka record as the client hands it over, borrowed.
pub struct Record<'a> {
    pub topic: Option<&'a str>,
    pub partition: Option<i64>,
    pub key: Option<&'a [u8]>,
    pub headers: Vec<(&'a str, Option<&'a [u8]>)>,
    pub value: &'a [u8],
    pub timestamp: Option<i64>,
    /// Text that holds the bytes of header values, validated as UTF-8 once for many of them (lib.rs: a
    /// chunk's values lie in one buffer); `header_text` reads a value lying in it without validating it again.
    pub values_text: Option<&'a str>,
}

const CE_PREFIX: &str = "ce_";

impl<'a> Record<'a> {
    /// No parts yet: filled in place record after record (lib.rs), its header vector reused.
    pub fn empty() -> Record<'a> {
        Record { topic: None, partition: None, key: None, headers: Vec::with_capacity(16), value: b"", timestamp: None,
                 values_text: None }
    }

    /// A header value as text when it is UTF-8. A value lying in `values_text` is read off it (the same
    /// bytes: two live slices cannot overlap without sharing memory); any other is validated alone, as every
    /// value was before: ~100 instructions a header, 3% of a binary record's judging.
    pub fn header_text(&self, bytes: &'a [u8]) -> Option<&'a str> {
        if let Some(all) = self.values_text {
            let start = (bytes.as_ptr() as usize).checked_sub(all.as_ptr() as usize);
            if let Some(text) = start.and_then(|at| all.get(at..at.checked_add(bytes.len())?)) {
                return Some(text);
            }
        }
        std::str::from_utf8(bytes).ok()
    }

    /// cloudevents.py `protocol_content_type`: the last `content-type` header (any case), when it is text.
    pub fn content_type(&self) -> Option<&'a str> {
        for (name, value) in self.headers.iter().rev() {
            if name.len() == 12 && name.eq_ignore_ascii_case("content-type") {
                return value.and_then(|bytes| self.header_text(bytes));
            }
        }
        None
    }
}

/// The payload of a structured event.
pub enum Data<'a> {
    Missing,
    Json(&'a Value),
    /// `data` on the fast tape (tape.rs)
    Tape(tape::Node<'a>),
    /// decoded `data_base64`
    Bytes(Vec<u8>),
}

/// An attribute value: text (binary mode), bytes that are not UTF-8 (binary mode), or JSON (structured).
pub type Attributes<'a> = Vec<(&'a str, Val<'a>)>;

pub struct Event<'a> {
    pub structured: bool,
    pub attributes: Attributes<'a>,
    pub data: Data<'a>,
    pub problem: Option<Violation>,
    /// binary mode: attributes whose header bytes are not UTF-8
    pub raw_names: Vec<&'a str>,
}

impl<'a> Event<'a> {
    pub fn get(&self, name: &str) -> Option<Val<'a>> {
        self.attributes.iter().find(|(n, _)| same_text(n, name)).map(|(_, v)| *v)
    }

    /// Values arrive as header text in binary mode (judged in their canonical string form).
    pub fn text(&self) -> bool {
        !self.structured
    }

    fn broken(problem: Violation) -> Event<'a> {
        Event { structured: true, attributes: Vec::new(), data: Data::Missing, problem: Some(problem), raw_names: Vec::new() }
    }
}

/// cloudevents.py `choose_mode` for Kafka.
pub fn structured_mode(mode: Option<&str>, content_type: Option<&str>) -> bool {
    match mode {
        Some("structured") => true,
        Some("binary") => false,
        _ => content_type.is_some_and(|ct| ct.trim().to_ascii_lowercase().starts_with("application/cloudevents")),
    }
}

/// cloudevents.py `read_binary` for Kafka: `ce_` headers (names case-sensitive), the last of a repeated
/// name in the first one's place (a dict), the content type as `datacontenttype`, nulls unset.
pub fn read_binary<'a>(record: &Record<'a>, content_type: Option<&'a str>) -> Event<'a> {
    // room for every header and the content type: growing it from empty took three reallocations a record
    let mut attributes: Vec<(&'a str, Option<Val<'a>>)> = Vec::with_capacity(record.headers.len() + 1);
    let mut raw: Vec<&'a str> = Vec::new();
    for (name, value) in &record.headers {
        let Some(attribute) = name.strip_prefix(CE_PREFIX) else { continue };
        let read = value.map(|bytes| match record.header_text(bytes) {
            Some(text) => Val::Text(text),
            None => {
                raw.push(attribute);
                Val::Bytes(bytes)
            }
        });
        match attributes.iter_mut().find(|(n, _)| *n == attribute) {
            Some(slot) => slot.1 = read,
            None => attributes.push((attribute, read)),
        }
    }
    if let Some(ct) = content_type {
        if !attributes.iter().any(|(n, _)| *n == "datacontenttype") {
            attributes.push(("datacontenttype", Some(Val::Text(ct))));
        }
    }
    let attributes: Attributes<'a> = attributes.into_iter().filter_map(|(n, v)| v.map(|v| (n, v))).collect();
    raw.retain(|name| attributes.iter().any(|(n, _)| n == name));
    raw.dedup();
    Event { structured: false, attributes, data: Data::Missing, problem: None, raw_names: raw }
}

fn decode_problem(message: String, actual: Actual) -> Violation {
    Violation {
        path: "body".into(),
        rule: Rule::Decode,
        expected: Expected::Str("a JSON CloudEvent (structured mode)".into()),
        actual,
        message,
    }
}

/// limits.py `nesting_violation`.
pub fn nesting_violation(path: &str, what: &str) -> Violation {
    let limit = json::MAX_NESTING;
    Violation {
        path: path.into(),
        rule: Rule::Limit,
        expected: Expected::Str(format!("at most {limit} levels of nesting")),
        actual: Actual::Str(format!("more than {limit}")),
        message: format!("{what} nests deeper than {limit} levels"),
    }
}

/// cloudevents.py `parse_json_body`: the structured body, or the problem that stops its reading.
pub fn parse_structured(body: &[u8], unique: bool) -> Result<Value, Violation> {
    json::parse(body, unique).map_err(|error| match error {
        JsonError::TooDeep => nesting_violation("body", "the structured body"),
        JsonError::Duplicate(name) => decode_problem(
            format!("structured body names a member twice (member {} appears twice in one object): \
                     validation rule 5.7 allows one reading only", crate::pyrepr::repr_str(&name)),
            truncate_bytes(body)),
        JsonError::Invalid(message) => decode_problem(match json::out_of_range(body, &message) {
            Some(detail) => format!("structured body is not valid JSON: {detail}"),
            None => "structured body is not valid JSON".into(),
        }, truncate_bytes(body)),
    })
}

fn python_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// cloudevents.py `read_structured_event` over an already parsed body (or its problem).
pub fn read_structured<'a>(parsed: &'a Result<Value, Violation>) -> Event<'a> {
    let event: &'a Value = match parsed {
        Err(problem) => return Event::broken(problem.clone()),
        Ok(value) => value,
    };
    let Value::Object(members) = event else {
        return Event::broken(decode_problem(
            format!("a structured CloudEvent is a JSON object, found {}", python_type_name(event)),
            truncate_json(event)));
    };
    let attributes = members.iter()
        .filter(|(name, value)| *name != "data" && *name != "data_base64" && !value.is_null())
        .map(|(name, value)| (name.as_str(), Val::Json(value)))
        .collect();
    let mut reading = Event { structured: true, attributes, data: Data::Missing, problem: None, raw_names: Vec::new() };
    read_data(members, &mut reading);
    reading
}

/// `read_structured` over the fast tape, or None where the tape holds what only `read_structured` reads as
/// Python does (not an object, `data_base64`, an attribute that is not a string, an i64 or null). A string
/// attribute is text here and an integer an int, which every rule reads as it reads that JSON value (and
/// shows alike in a violation).
pub fn read_structured_tape<'a>(doc: &'a Doc<'a>) -> Option<Event<'a>> {
    let root = doc.root();
    let mut attributes = Vec::with_capacity(12);
    let mut data = Data::Missing;
    for (name, value) in root.members()? {
        match name {
            "data" => data = Data::Tape(value),
            "data_base64" => return None,
            _ if value.is_null() => {}
            _ => attributes.push((name, match value.as_str() {
                Some(text) => Val::Text(text),
                None => Val::Int(value.as_i64()?),
            })),
        }
    }
    Some(Event { structured: true, attributes, data, problem: None, raw_names: Vec::new() })
}

fn read_data<'a>(members: &'a Map<String, Value>, reading: &mut Event<'a>) {
    if let Some(encoded) = members.get("data_base64") {
        match encoded {
            Value::String(text) => match crate::types::b64decode(text) {
                Some(bytes) => reading.data = Data::Bytes(bytes),
                None => reading.problem = Some(decode_problem("data_base64 is not valid base64".into(),
                                                              truncate_json(encoded))),
            },
            _ => reading.problem = Some(decode_problem("data_base64 must be a base64 string".into(),
                                                       truncate_json(encoded))),
        }
    } else if let Some(data) = members.get("data") {
        reading.data = Data::Json(data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record<'a>(headers: Vec<(&'a str, Option<&'a [u8]>)>, value: &'a [u8]) -> Record<'a> {
        Record { topic: Some("t"), partition: Some(0), key: None, headers, value, timestamp: None, values_text: None }
    }

    #[test]
    fn binary_attributes_keep_the_first_place_and_the_last_value() {
        let r = record(vec![("ce_id", Some(b"1")), ("ce_type", Some(b"x")), ("ce_id", Some(b"2")),
                            ("content-type", Some(b"application/json"))], b"{}");
        let event = read_binary(&r, r.content_type());
        let names: Vec<_> = event.attributes.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["id", "type", "datacontenttype"]);
        assert_eq!(event.get("id").unwrap().as_str(), Some("2"));
    }

    #[test]
    fn null_headers_unset_and_raw_bytes_are_named() {
        let r = record(vec![("ce_a", None), ("ce_b", Some(b"\xff"))], b"");
        let event = read_binary(&r, None);
        assert!(event.get("a").is_none());
        assert_eq!(event.raw_names, ["b"]);
    }

    #[test]
    fn header_text_reads_values_off_the_validated_buffer_and_others_alone() {
        let buffer = "idé\u{1F600}x";
        let bytes = buffer.as_bytes();
        let mut r = record(Vec::new(), b"");
        r.values_text = Some(buffer);
        // inside the buffer, at character boundaries: the very same bytes
        let inside = r.header_text(&bytes[2..4]).unwrap();
        assert_eq!(inside, "é");
        assert_eq!(inside.as_ptr(), bytes[2..].as_ptr());
        assert_eq!(r.header_text(&bytes[..0]), Some(""));
        // inside, cut through a character: validated alone, and refused as it would be alone
        assert_eq!(r.header_text(&bytes[3..5]), None);
        assert_eq!(r.header_text(&bytes[4..8]), Some("\u{1F600}"));
        // elsewhere: validated alone
        let other = b"plain".to_vec();
        assert_eq!(r.header_text(&other), Some("plain"));
        assert_eq!(r.header_text(b"\xff"), None);
        r.values_text = None;
        assert_eq!(r.header_text(&bytes[2..4]), Some("é"));
    }

    #[test]
    fn mode_follows_the_content_type_unless_the_endpoint_says() {
        assert!(structured_mode(None, Some(" Application/CloudEvents+json; charset=utf-8")));
        assert!(!structured_mode(None, Some("application/json")));
        assert!(!structured_mode(Some("binary"), Some("application/cloudevents+json")));
    }
}
