//! What judging one message gives (gateway/verdict.py's shapes): an outcome, the definition it names, the
//! violations. Built as plain values here and made Python objects in lib.rs only after the batch.

use crate::pyrepr::Actual;

/// gateway/verdict.py `Rule`, in the order of `RULES` in gateway/compiler/native.py (its index crosses over).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    Required = 0,
    Type = 1,
    Value = 2,
    Template = 3,
    Placeholder = 4,
    Specversion = 5,
    AttributeName = 6,
    ContentType = 7,
    Schema = 8,
    Decode = 9,
    NoMatch = 10,
    #[allow(dead_code)] // numbered for Python's Rule order: an unknown endpoint is refused in Python
    Endpoint = 11,
    Limit = 12,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    Str(String),
    /// one of the plan's constants (a document's value, kept as the Python object it was)
    Const(usize),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    pub path: String,
    pub rule: Rule,
    pub expected: Expected,
    pub actual: Actual,
    pub message: String,
}

pub enum Outcome {
    /// the definition (its index in the plan) that the message conforms to
    Conformant(usize),
    /// the closest definition, if any qualified, and the violations
    Nonconformant(Option<usize>, Vec<Violation>),
    /// a candidate has no lowered form: the Python judge decides
    Defer,
}
