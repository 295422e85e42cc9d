//! The value one rule reads from a message: header text, header bytes that are not UTF-8, or a typed JSON
//! value (a structured event's attribute). `text` (beside it at every call) says the value arrived as
//! header text and is judged in its canonical string form (validation rule 5.3).

use serde_json::Value;

#[derive(Clone, Copy, Debug)]
pub enum Val<'a> {
    /// header or property text (binary mode; Kafka keys; topics)
    Text(&'a str),
    /// header bytes that are not UTF-8: they only match `binary`
    Bytes(&'a [u8]),
    /// a JSON value of a structured event (strings included)
    Json(&'a Value),
    /// an integer protocol field (Kafka `partition`, `timestamp`)
    Int(i64),
}

impl<'a> Val<'a> {
    /// The value as a string, when it is one (text or a JSON string).
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            Val::Text(s) => Some(s),
            Val::Json(Value::String(s)) => Some(s.as_str()),
            _ => None,
        }
    }
}


/// Short texts (names, template pieces) compared in line: calling memcmp costs more than comparing a few
/// bytes.
pub fn same_text(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}
