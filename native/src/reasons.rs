//! Violations written as orjson writes `Violation.as_dict()` (gateway/verdict.py), for `xgate check`'s verdict
//! lines (check.rs) and for a dead letter's `xgate-*` headers.
//!
//! A Kafka to Kafka route's dead letters read in place (gateway/runtime/record_lane.py) get their headers here,
//! where the core judged them, as gateway/runtime/remap.py `reason_headers` writes them from the same result:
//! `xgate-violations` the violations' compact JSON (cut near 4,096 bytes as it cuts it), `xgate-source-position`
//! `{"topic":..,"partition":..,"offset":..}`. Where remap.py's text would not be orjson's (text beyond ASCII,
//! which it then writes with json.dumps; a value orjson refuses) nothing is written here and the caller asks
//! remap.py. tests/unit/compiler/test_native_reasons.py holds the two to each other.

use std::fmt::Write;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::pyrepr::{orjson_float, orjson_str, Actual};
use crate::verdict::{Expected, Violation};

/// What a violation's JSON repeats, written once on the Python side (gateway/compiler/core.py `violation_tables`).
pub struct ViolationText {
    /// each rule's name as a JSON string, by the rule's number
    pub rule_names: Vec<String>,
    /// each plan constant as JSON; None where orjson cannot write it (json.dumps then writes it)
    pub constants: Vec<Option<String>>,
}

impl ViolationText {
    /// `v` as orjson writes `v.as_dict()`; false where a value is one orjson does not write (an integer past 64
    /// bits, a float that is not finite, a constant it refused).
    pub fn write(&self, out: &mut String, v: &Violation) -> bool {
        out.push_str("{\"path\":");
        orjson_str(out, &v.path);
        out.push_str(",\"rule\":");
        out.push_str(&self.rule_names[v.rule as usize]);
        out.push_str(",\"expected\":");
        match &v.expected {
            Expected::Str(text) => orjson_str(out, text),
            Expected::Const(index) => match self.constants.get(*index) {
                Some(Some(json)) => out.push_str(json),
                _ => return false,
            },
        }
        out.push_str(",\"actual\":");
        if !write_actual(out, &v.actual) {
            return false;
        }
        out.push_str(",\"message\":");
        orjson_str(out, &v.message);
        out.push('}');
        true
    }
}

fn write_actual(out: &mut String, actual: &Actual) -> bool {
    match actual {
        Actual::Null => out.push_str("null"),
        Actual::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Actual::Int(int) if i64::try_from(*int).is_ok() || u64::try_from(*int).is_ok() => {
            write!(out, "{int}").expect("a String takes any write")
        }
        Actual::Int(_) => return false,
        Actual::Float(float) if float.is_finite() => out.push_str(&orjson_float(*float)),
        Actual::Float(_) => return false,
        Actual::Str(text) => orjson_str(out, text),
    }
    true
}

/// remap.py `VIOLATIONS_LIMIT`: past it, violations are dropped from the end and a last one says how many.
const VIOLATIONS_LIMIT: usize = 4096;

/// The violations' `xgate-violations` text as remap.py `_compact_json` writes it, cut as `reason_headers` cuts
/// it; None where remap.py would not write orjson's ASCII text.
fn violations_header(text: &ViolationText, violations: &[Violation]) -> Option<String> {
    let mut pieces = Vec::with_capacity(violations.len());
    for v in violations {
        let mut piece = String::new();
        if !text.write(&mut piece, v) || !piece.is_ascii() {
            return None;
        }
        pieces.push(piece);
    }
    // a list's text: its members' joined by commas, in brackets
    let listed = |count: usize, sum: usize| 2 + sum + count.saturating_sub(1);
    let total: usize = pieces.iter().map(String::len).sum();
    if listed(pieces.len(), total) > VIOLATIONS_LIMIT {
        // as remap.py: violations kept while the list of those kept stays within the limit less 64
        let mut kept = 0;
        let mut sum = 0;
        for piece in &pieces {
            if listed(kept + 1, sum + piece.len()) > VIOLATIONS_LIMIT - 64 {
                break;
            }
            kept += 1;
            sum += piece.len();
        }
        let dropped = pieces.len() - kept;
        pieces.truncate(kept);
        pieces.push(format!("{{\"rule\":\"truncated\",\"message\":\"{dropped} more violations\"}}"));
    }
    Some(format!("[{}]", pieces.join(",")))
}

/// A dead letter's headers whose values the core writes (the rest are the writer's own): (closest definition,
/// violations, where it was read).
pub struct Written {
    closest: Option<usize>,
    violations: String,
    position: String,
}

/// `reason_headers` for the dead letters of one route's source endpoint (lib.rs `Core.judge_fetched`).
#[pyclass(frozen, module = "xgate_core")]
pub struct ReasonWriter {
    text: ViolationText,
    /// (group, message) of each definition, by its number in the plan
    ids: Vec<(Py<PyString>, Py<PyString>)>,
    outcome: Py<PyString>,
    source_endpoint: Py<PyString>,
    /// the header names, in reason_headers' order
    names: Vec<Py<PyString>>,
}

const NAMES: [&str; 7] = ["xgate-verdict", "xgate-messagegroupid", "xgate-messageid", "xgate-violations",
                          "xgate-source-endpoint", "xgate-source-address", "xgate-source-position"];

#[pymethods]
impl ReasonWriter {
    #[new]
    fn new(py: Python<'_>, rule_names: Vec<String>, constants: Vec<Option<String>>, ids: Vec<(String, String)>,
           outcome: &str, source_endpoint: &str) -> ReasonWriter {
        let text = |value: &str| PyString::new(py, value).unbind();
        ReasonWriter {
            text: ViolationText { rule_names, constants },
            ids: ids.iter().map(|(group, message)| (text(group), text(message))).collect(),
            outcome: text(outcome),
            source_endpoint: text(source_endpoint),
            names: NAMES.iter().map(|name| PyString::intern(py, name).unbind()).collect(),
        }
    }
}

impl ReasonWriter {
    /// The values of a nonconformant record's headers that vary, written without the GIL; None where remap.py
    /// must write them (module docs).
    pub fn write(&self, closest: Option<usize>, violations: &[Violation], topic: &str, partition: i64,
                 offset: i64) -> Option<Written> {
        let violations = violations_header(&self.text, violations)?;
        let mut position = String::from("{\"topic\":");
        orjson_str(&mut position, topic);
        write!(position, ",\"partition\":{partition},\"offset\":{offset}}}").expect("a String takes any write");
        position.is_ascii().then_some(Written { closest, violations, position })
    }

    /// The headers as reason_headers gives them: a list of (name, text) pairs. `topic` is the record's topic
    /// (its `xgate-source-address`).
    pub fn headers<'py>(&self, py: Python<'py>, written: Written, topic: &Bound<'py, PyString>)
                        -> PyResult<Bound<'py, PyList>> {
        let empty = PyString::intern(py, "");
        let (group, message) = match written.closest.and_then(|d| self.ids.get(d)) {
            Some((group, message)) => (group.bind(py).clone(), message.bind(py).clone()),
            None => (empty.clone(), empty),
        };
        let values = [self.outcome.bind(py).clone(), group, message, PyString::new(py, &written.violations),
                      self.source_endpoint.bind(py).clone(), topic.clone(), PyString::new(py, &written.position)];
        let pairs = self.names.iter().zip(values)
            .map(|(name, value)| PyTuple::new(py, [name.bind(py).clone(), value]))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Rule;

    fn violation(message: &str) -> Violation {
        Violation { path: "p".into(), rule: Rule::Value, expected: Expected::Str("e".into()), actual: Actual::Null,
                    message: message.into() }
    }

    fn text() -> ViolationText {
        ViolationText { rule_names: (0..13).map(|n| format!("\"r{n}\"")).collect(), constants: vec![None] }
    }

    #[test]
    fn actual_values_as_orjson_writes_them() {
        let mut out = String::new();
        for actual in [Actual::Null, Actual::Bool(true), Actual::Int(-5), Actual::Int(u64::MAX.into()), Actual::Float(1e16),
                       Actual::Str("a\"\n".into())] {
            assert!(write_actual(&mut out, &actual));
            out.push(' ');
        }
        assert_eq!(out, "null true -5 18446744073709551615 1e+16 \"a\\\"\\n\" ");
        assert!(!write_actual(&mut out, &Actual::Int(i128::from(u64::MAX) + 1)));
        assert!(!write_actual(&mut out, &Actual::Float(f64::NAN)));
    }

    #[test]
    fn violations_past_the_limit_are_cut_and_counted() {
        let long = "x".repeat(1000);
        let many: Vec<Violation> = (0..6).map(|_| violation(&long)).collect();
        let written = violations_header(&text(), &many).expect("ASCII");
        assert!(written.len() <= VIOLATIONS_LIMIT);
        assert!(written.ends_with(",{\"rule\":\"truncated\",\"message\":\"3 more violations\"}]"), "{written}");
        let one = violations_header(&text(), &[violation("short")]).expect("ASCII");
        assert_eq!(one, "[{\"path\":\"p\",\"rule\":\"r2\",\"expected\":\"e\",\"actual\":null,\"message\":\"short\"}]");
    }

    #[test]
    fn text_beyond_ascii_or_a_refused_constant_is_left_to_python() {
        assert!(violations_header(&text(), &[violation("café")]).is_none());
        let mut refused = violation("m");
        refused.expected = Expected::Const(0);
        assert!(violations_header(&text(), &[refused]).is_none());
    }
}
