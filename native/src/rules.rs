//! One definition's rules run on one message (gateway/compiler/constraints.py is the reference): each rule
//! holds or gives its violations; a passing rule allocates nothing.

use crate::event::{nesting_violation, Data, Event, Record};
use crate::json::{self, JsonError};
use crate::payload::JsonSchema;
use crate::plan::{Field, ValuePlan};
use crate::pyrepr::{repr_str, truncate_bytes, truncate_json, truncate_str, Actual};
use crate::tape::{self, Doc};
use crate::templates::{Fit, Template};
use crate::types::{coerce, coerce_literal, is_type, Coerced, Kind};
use crate::value::Val;
use crate::verdict::{Expected, Rule, Violation};

pub type Found = Result<(), Vec<Violation>>;

/// A compiled value check (constraints.py `compile_value`).
pub struct ValueCheck {
    pub path: String,
    pub required: bool,
    pub type_name: String,
    pub kind: Kind,
    pub template: Option<Template>,
    pub expected: Option<Coerced>,
    pub value_const: Option<usize>,
    pub value_message: String,
    pub valid_literal: Option<String>,
}

impl ValueCheck {
    /// None when the plan's template has no segment form here.
    pub fn new(plan: &ValuePlan) -> Option<ValueCheck> {
        let kind = Kind::from_name(&plan.type_name);
        let template = match &plan.template {
            Some(text) => Some(Template::compile(text)?),
            None => None,
        };
        Some(ValueCheck {
            path: plan.path.clone(),
            required: plan.required,
            type_name: plan.type_name.clone(),
            kind,
            template,
            expected: plan.expected.as_ref().map(|value| coerce_literal(value, kind)),
            value_const: plan.value_const,
            value_message: plan.value_message.clone().unwrap_or_default(),
            valid_literal: plan.valid_literal.clone(),
        })
    }

    pub fn absent(&self) -> Found {
        if self.required {
            return Err(vec![Violation {
                path: self.path.clone(),
                rule: Rule::Required,
                expected: Expected::Str("present".into()),
                actual: Actual::Null,
                message: format!("{} is required but absent", self.path),
            }]);
        }
        Ok(())
    }

    fn violation(&self, rule: Rule, expected: Expected, actual: Val, message: String) -> Found {
        Err(vec![Violation { path: self.path.clone(), rule, expected, actual: actual_of(actual), message }])
    }

    fn value_violation(&self, actual: Val) -> Found {
        let expected = self.value_const.map_or(Expected::Str(String::new()), Expected::Const);
        self.violation(Rule::Value, expected, actual, self.value_message.clone())
    }

    /// One present value; `bindings` carries placeholder texts across the definition's rules. `typed`: the
    /// value is already known to be of this rule's type (`implied_by_cloudevents`), so its type goes unchecked.
    pub fn check<'v>(&'v self, actual: Val<'v>, text: bool, typed: bool,
                     bindings: &mut Vec<(&'v str, &'v str)>) -> Found {
        let actual_str = actual.as_str();
        if let (Some(literal), Some(s)) = (&self.valid_literal, actual_str) {
            if s == literal {
                return Ok(());
            }
        }
        if let Val::Bytes(bytes) = actual {
            if text && self.kind != Kind::Binary {
                return Err(vec![not_utf8(&self.path, bytes)]);
            }
        }
        if self.kind == Kind::String && self.template.is_none() {
            if let Some(s) = actual_str {
                return match &self.expected {
                    Some(Coerced::Str(expected)) if s != expected => self.value_violation(actual),
                    Some(expected) if !matches!(expected, Coerced::Str(_)) => self.value_violation(actual),
                    _ => Ok(()),
                };
            }
        }
        if !typed && !is_type(self.kind, actual, text) {
            return self.violation(Rule::Type, Expected::Str(self.type_name.clone()), actual,
                                  format!("{} is not a valid {}", self.path, self.type_name));
        }
        if let Some(template) = &self.template {
            let fit = actual_str.map_or(Fit::No, |s| template.fit(s));
            let path = &self.path;
            return match fit {
                Fit::Conflict => self.violation(Rule::Placeholder, Expected::Str(template.text.clone()), actual,
                    format!("{path} binds one placeholder of {} to two different texts", template.text)),
                Fit::No => self.violation(Rule::Template, Expected::Str(template.text.clone()), actual,
                    format!("{path} does not fit the template {}", template.text)),
                Fit::Bound(found) => bind(path, found, bindings),
            };
        }
        if let Some(expected) = &self.expected {
            if !coerce(actual, self.kind, text).same(expected) {
                return self.value_violation(actual);
            }
        }
        Ok(())
    }
}

/// Each placeholder's text into `bindings`; a name already bound to another text is a `placeholder`
/// violation (the names before it stay bound, as `dict.setdefault` leaves them).
fn bind<'v>(path: &str, found: Vec<(&'v str, &'v str)>, bindings: &mut Vec<(&'v str, &'v str)>) -> Found {
    for (name, text) in found {
        match bindings.iter().find(|(n, _)| *n == name) {
            None => bindings.push((name, text)),
            Some((_, bound)) if *bound == text => {}
            Some((_, bound)) => {
                return Err(vec![Violation {
                    path: path.to_string(),
                    rule: Rule::Placeholder,
                    expected: Expected::Str(format!("{{{name}}} = {bound}")),
                    actual: truncate_str(text),
                    message: format!("placeholder {{{name}}} is {} here but {} elsewhere", repr_str(text), repr_str(bound)),
                }]);
            }
        }
    }
    Ok(())
}

pub fn actual_of(value: Val) -> Actual {
    match value {
        Val::Text(s) => truncate_str(s),
        Val::Bytes(b) => truncate_bytes(b),
        Val::Json(v) => truncate_json(v),
        Val::Int(i) => Actual::Int(i as i128),
    }
}

/// constraints.py `_not_utf8`.
pub fn not_utf8(path: &str, bytes: &[u8]) -> Violation {
    Violation {
        path: path.to_string(),
        rule: Rule::Decode,
        expected: Expected::Str("UTF-8 text".into()),
        actual: truncate_bytes(bytes),
        message: format!("{path} is not UTF-8 text (validation rule 5.7: only a binary-typed value may carry such bytes)"),
    }
}

/// What a protocol option reads (fields.py getters for Kafka): every occurrence, as text or as a value.
pub fn read_option<'a>(record: &Record<'a>, field: Field, header: &str) -> Vec<Val<'a>> {
    match field {
        Field::Topic => record.topic.map(Val::Text).into_iter().collect(),
        Field::Partition => record.partition.map(Val::Int).into_iter().collect(),
        Field::Timestamp => record.timestamp.map(Val::Int).into_iter().collect(),
        Field::Key => record.key.map(|key| header_text(record, key)).into_iter().collect(),
        Field::KeyBase64 => unreachable!("key_base64 is read by its caller: its text is made, not borrowed"),
        Field::Header => record.headers.iter()
            .filter(|(name, value)| *name == header && value.is_some())
            .map(|(_, value)| header_text(record, value.unwrap_or_default()))
            .collect(),
    }
}

/// cloudevents.py `header_text`: UTF-8 bytes become text, other bytes stay bytes (`Record::header_text`
/// reads a header value off the record's validated text).
fn header_text<'a>(record: &Record<'a>, bytes: &'a [u8]) -> Val<'a> {
    record.header_text(bytes).map_or(Val::Bytes(bytes), Val::Text)
}

fn ce_violation(name: &str, rule: Rule, expected: &str, actual: Actual, message: String) -> Violation {
    Violation { path: format!("envelopemetadata.{name}"), rule, expected: Expected::Str(expected.into()), actual, message }
}

fn attribute_name_ok(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// Whether `cloudevents_rules` passing on an event already shows its attribute `name` to be of `kind`: it
/// checks `source` as a URI-reference (a URI template accepts every one), `time` as a timestamp and
/// `dataschema` as a URI with the same `is_type` on the same value. A definition that declares those types
/// then does not check them a second time (a binary record's timestamp was read twice).
pub fn implied_by_cloudevents(name: &str, kind: Kind) -> bool {
    matches!((name, kind), ("source", Kind::UriReference | Kind::UriTemplate) | ("time", Kind::Timestamp)
                           | ("dataschema", Kind::Uri))
}

/// constraints.py `cloudevents_rules`: the implicit CloudEvents 1.0 rules (validation rule 5.1).
pub fn cloudevents_rules(event: &Event) -> Found {
    if let Some(problem) = &event.problem {
        return Err(vec![problem.clone()]);
    }
    let text = event.text();
    let mut found = Vec::new();
    let specversion = event.get("specversion");
    if specversion.and_then(|v| v.as_str()) != Some("1.0") {
        let message = if specversion.is_none() { "specversion is absent".to_string() }
                      else { "specversion must be \"1.0\"".to_string() };
        found.push(ce_violation("specversion", Rule::Specversion, "1.0", specversion.map_or(Actual::Null, actual_of), message));
    }
    for name in ["id", "source", "type"] {
        match event.get(name) {
            None => found.push(ce_violation(name, Rule::Required, "present", Actual::Null,
                format!("CloudEvents attribute {name} is required and must not be empty"))),
            Some(value) => match value.as_str() {
                Some("") => found.push(ce_violation(name, Rule::Required, "present", Actual::Str(String::new()),
                    format!("CloudEvents attribute {name} is required and must not be empty"))),
                Some(_) => {}
                None => found.push(ce_violation(name, Rule::Type, "string", actual_of(value),
                    format!("{name} must be a string"))),
            },
        }
    }
    if let Some(source) = event.get("source").and_then(|v| v.as_str()) {
        if !source.is_empty() && !is_type(Kind::UriReference, Val::Text(source), text) {
            found.push(ce_violation("source", Rule::Type, "urireference", truncate_str(source),
                                    "source must be a URI-reference".into()));
        }
    }
    if let Some(time) = event.get("time") {
        if !is_type(Kind::Timestamp, time, text) {
            found.push(ce_violation("time", Rule::Type, "timestamp", actual_of(time), "time must be an RFC 3339 timestamp".into()));
        }
    }
    if let Some(dataschema) = event.get("dataschema") {
        if !is_type(Kind::Uri, dataschema, text) {
            found.push(ce_violation("dataschema", Rule::Type, "uri", actual_of(dataschema),
                                    "dataschema must be an absolute URI".into()));
        }
    }
    for (name, _) in &event.attributes {
        if !attribute_name_ok(name) {
            found.push(ce_violation(name, Rule::AttributeName, "[a-z0-9]+", truncate_str(name),
                format!("attribute name {} must be lower-case letters and digits", repr_str(name))));
        }
    }
    if found.is_empty() { Ok(()) } else { Err(found) }
}

/// constraints.py `media_type`.
pub fn media_type(value: &str) -> String {
    value.split(';').next().unwrap_or("").trim().to_lowercase()
}

/// constraints.py `content_types_agree` (`wanted` already media types).
pub fn content_types_agree(actual: &str, wanted: &[String]) -> bool {
    let kind = media_type(actual);
    wanted.iter().any(|w| {
        kind == *w
            || (w == "application/json" || w == "text/json") && kind.ends_with("+json")
            || (w == "application/xml" || w == "text/xml") && kind.ends_with("+xml")
    })
}

/// The payload of one message, parsed at most once per reading and judged at most once per schema.
pub struct Payload<'a> {
    pub body: &'a [u8],
    pub unique: bool,
    parsed: Option<Result<Doc<'a>, JsonError>>,
    /// each (schema, cloudevents) judged so far: a message meets a handful at most
    results: Vec<((usize, bool), Found)>,
}

const PATH_PREFIX: &str = "dataschema:";

impl<'a> Payload<'a> {
    pub fn new(body: &'a [u8], unique: bool) -> Payload<'a> {
        Payload { body, unique, parsed: None, results: Vec::new() }
    }

    /// constraints.py `compile_payload`'s check for a JSON Schema: structured `data` (or decoded
    /// `data_base64`), else the body.
    pub fn check(&mut self, schema: usize, validator: &JsonSchema, event: Option<&Event>, cloudevents: bool) -> Found {
        let key = (schema, cloudevents);
        if let Some((_, found)) = self.results.iter().find(|(k, _)| *k == key) {
            return found.clone();
        }
        let found = match event.filter(|e| cloudevents && e.structured) {
            Some(event) => match (&event.problem, &event.data) {
                (Some(_), _) | (None, Data::Missing) => Ok(()),
                (None, Data::Json(value)) => judge_value(validator, Doc::from_value(value).root()),
                (None, Data::Tape(node)) => judge_value(validator, *node),
                (None, Data::Bytes(bytes)) => match read_doc(bytes, true) {
                    Ok(doc) => judge_value(validator, doc.root()),
                    Err(error) => Err(vec![payload_problem(&error, bytes)]),
                },
            },
            None => {
                let unique = self.unique;
                let body = self.body;
                match self.parsed.get_or_insert_with(|| read_doc(body, unique)) {
                    Ok(doc) => judge_value(validator, doc.root()),
                    Err(error) => Err(vec![payload_problem(error, body)]),
                }
            }
        };
        self.results.push((key, found.clone()));
        found
    }
}

/// A JSON payload on a tape: the fast reading where it reads, else json.rs's (tape.rs says when).
fn read_doc(text: &[u8], unique: bool) -> Result<Doc<'_>, JsonError> {
    match tape::parse(text) {
        Some(doc) => Ok(doc),
        None => json::parse(text, unique).map(|value| Doc::from_value(&value)),
    }
}

fn judge_value(validator: &JsonSchema, value: tape::Node) -> Found {
    if validator.is_valid(value) {
        return Ok(());
    }
    Err(validator.violations(value).into_iter().map(|v| Violation {
        path: format!("{PATH_PREFIX}{}", v.pointer),
        rule: Rule::Schema,
        expected: Expected::Str(v.expected),
        actual: v.actual,
        message: v.message,
    }).collect())
}

/// base.py `load_json_payload`'s violations.
fn payload_problem(error: &JsonError, body: &[u8]) -> Violation {
    let decode = |expected: &str, message: String| Violation {
        path: PATH_PREFIX.into(),
        rule: Rule::Decode,
        expected: Expected::Str(expected.into()),
        actual: truncate_bytes(body),
        message,
    };
    match error {
        JsonError::TooDeep => nesting_violation(PATH_PREFIX, "the payload"),
        JsonError::Duplicate(name) => decode("valid JSON with unique member names",
            format!("payload names a member twice (member {} appears twice in one object)", repr_str(name))),
        JsonError::Invalid(message) => decode("valid JSON", match json::out_of_range(body, message) {
            Some(detail) => format!("payload is not valid JSON: {detail}"),
            None => "payload is not valid JSON".into(),
        }),
    }
}
