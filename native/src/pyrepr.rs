//! Python's own text forms, so that violation messages read exactly as the Python judge writes them:
//! `repr` of a str, of a float, and the `actual` preview of gateway/verdict.py's `truncate`.

/// A violation's `actual` as gateway/verdict.py `truncate` leaves it: scalars as they are (strings cut at
/// 120 characters plus "..."), containers as their cut JSON preview text.
#[derive(Clone, Debug, PartialEq)]
pub enum Actual {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
}

pub const ACTUAL_LIMIT: usize = 120;

/// Python `repr(text)`.
pub fn repr_str(text: &str) -> String {
    todo!("{text}")
}

/// Python `repr(value)` of a float.
pub fn repr_float(value: f64) -> String {
    todo!("{value}")
}

/// verdict.py `truncate` of the Python value orjson reads from this JSON value.
pub fn truncate_json(value: &serde_json::Value) -> Actual {
    todo!("{value:?}")
}

/// verdict.py `truncate` of a str.
pub fn truncate_str(text: &str) -> Actual {
    todo!("{text}")
}

/// verdict.py `truncate` of bytes (UTF-8 with replacement, cut at 120 bytes plus "...").
pub fn truncate_bytes(bytes: &[u8]) -> Actual {
    todo!("{}", bytes.len())
}

/// payload/base.py `one_line(text, limit)`: whitespace runs become one space, cut at `limit` with "...".
pub fn one_line(text: &str, limit: usize) -> String {
    todo!("{text} {limit}")
}
