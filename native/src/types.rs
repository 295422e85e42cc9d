//! Property types of CONFORMANCE.md section 5.3 (a port of gateway/compiler/types.py, which stays the
//! reference): `is_type` checks a value, `coerce` reads one as its declared type so that `"1"` equals 1,
//! and `Coerced::same` compares two coerced values as Python's `==` does.

use crate::value::Val;

/// A checker kind; a type name the project does not know checks as `String` (types.py `checker`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    String, Symbol, Integer, Number, Boolean, Binary, Timestamp, Duration, Uri, UriReference, UriTemplate,
    Any, Map, Array,
}

impl Kind {
    /// From a canonical type name (types.py `canonical_type` already applied by the lowering in Python).
    pub fn from_name(name: &str) -> Kind {
        todo!("{name}")
    }
}

/// types.py `CHECKERS[kind](value, text)`.
pub fn is_type(kind: Kind, value: Val, text: bool) -> bool {
    todo!("{kind:?} {value:?} {text}")
}

/// A value read as its declared type (types.py `coerce`).
#[derive(Clone, Debug)]
pub enum Coerced {
    Int(i128),
    Float(f64),
    Bool(bool),
    Str(String),
    Bytes(Vec<u8>),
    /// a timestamp: microseconds since 1970-01-01T00:00:00Z (instants compare equal across offsets)
    Instant(i128),
    Json(serde_json::Value),
}

impl Coerced {
    /// Python's `==` between the two values types.py's `coerce` would return.
    pub fn same(&self, other: &Coerced) -> bool {
        todo!("{self:?} {other:?}")
    }
}

/// types.py `coerce(value, type_name, text)`.
pub fn coerce(value: Val, kind: Kind, text: bool) -> Coerced {
    todo!("{value:?} {kind:?} {text}")
}

/// A JSON literal from a document (a rule's `value`) coerced as types.py does:
/// `coerce(value, type_name, isinstance(value, str))`.
pub fn coerce_literal(value: &serde_json::Value, kind: Kind) -> Coerced {
    todo!("{value:?} {kind:?}")
}
