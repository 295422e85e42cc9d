//! The core built from a plan, and judging one record (ruleset.py `_judge` and explaining.py are the
//! reference): candidates by one lookup, the first in rank order that passes every rule wins; otherwise the
//! closest candidate and its violations (validation rule 6).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use crate::event::{parse_structured, read_binary, read_structured, read_structured_tape, structured_mode, Event, Record};
use crate::payload::{Draft, JsonSchema};
use crate::plan::{DefinitionPlan, EndpointPlan, Field, Limits, Plan, RulePlan, SchemaPlan, SchemaText, Texts, PLAN_VERSION};
use crate::pyrepr::{repr_str, truncate_str, Actual};
use crate::tape::{self, Doc};
use crate::rules::{cloudevents_rules, content_types_agree, implied_by_cloudevents, not_utf8, read_option, Found, Payload,
                   ValueCheck};
use crate::templates::{Fit, Template};
use crate::value::Val;
use crate::verdict::{Expected, Outcome, Rule, Violation};

enum CompiledRule {
    Cloudevents,
    Attribute { name: String, check: ValueCheck },
    Raw { binary: Vec<String> },
    Option { field: Field, header: String, text: bool, check: ValueCheck },
    ContentType { path: String, wanted: Vec<String>, shown: String, cloudevents: bool },
    Payload { schema: usize, cloudevents: bool },
}

enum Reads {
    Type,
    Topic,
}

struct Discriminator {
    reads: Reads,
    value: String,
    template: Option<Template>,
}

struct Definition {
    /// the plan says it is native and its discriminator has a lowered form
    native: bool,
    /// a templated discriminator with no segment form: where it floats, no message can be dispatched here
    discriminator_unknown: bool,
    rank: u32,
    discriminator: Option<Discriminator>,
    /// its rules, asked for and compiled on the first message that names the definition: one nobody's
    /// traffic names costs its plan entry only (issue 31)
    rules: OnceLock<Rules>,
}

struct Rules {
    /// every rule has a compiled form here (else the definition's messages go to the Python judge)
    native: bool,
    rules: Vec<CompiledRule>,
    /// the payload schemas its rules read (each compiled on first use)
    schemas: Vec<usize>,
}

struct Index {
    /// the CloudEvents `type` -> definitions in rank order; the same by Kafka topic
    by_type: HashMap<String, Vec<usize>>,
    by_topic: HashMap<String, Vec<usize>>,
    floating: Vec<usize>,
    cloudevents: bool,
    /// a floating definition whose discriminator has no lowered form: every message is the Python judge's
    opaque: bool,
}

struct Endpoint {
    mode: Option<String>,
    kafka: Index,
}

pub struct Core {
    /// where a definition's rules and a schema's text come from, asked once each (plan.rs `Texts`)
    texts: Box<dyn Texts>,
    limits: Limits,
    schemas: Vec<LazySchema>,
    definitions: Vec<Definition>,
    endpoints: Vec<Endpoint>,
    /// endpoint id -> its position
    pub endpoint_ids: HashMap<String, usize>,
}

impl Core {
    /// `texts`: each definition's rules and each schema as JSON text, by their positions in the plan.
    pub fn from_plan(plan: Plan, texts: Box<dyn Texts>) -> Result<Core, String> {
        if plan.version != PLAN_VERSION {
            return Err(format!("plan version {} is not {PLAN_VERSION}: rebuild the native core (make install)",
                               plan.version));
        }
        let definitions = plan.definitions.into_iter().map(definition).collect::<Vec<_>>();
        let schemas = plan.schemas.into_iter().map(|plan| LazySchema { plan, compiled: OnceLock::new() }).collect();
        let endpoint_ids = plan.endpoints.iter().enumerate().map(|(i, e)| (e.id.clone(), i)).collect();
        let endpoints = plan.endpoints.into_iter().map(|e| endpoint(e, &definitions)).collect();
        Ok(Core { texts, limits: plan.limits, schemas, definitions, endpoints, endpoint_ids })
    }

    pub fn definition_count(&self) -> usize {
        self.definitions.len()
    }

    /// One Kafka record on one endpoint.
    pub fn judge(&self, endpoint: usize, record: &Record) -> Outcome {
        let endpoint = &self.endpoints[endpoint];
        let index = &endpoint.kafka;
        if index.opaque {
            return Outcome::Defer;
        }
        if let Some(problem) = self.limit_violation(record) {
            return Outcome::Nonconformant(None, vec![problem]);
        }
        let content_type = record.content_type();
        let parsed: Option<Result<Value, Violation>>;
        let doc: Option<Doc>;
        let event = if !index.cloudevents {
            None
        } else if structured_mode(endpoint.mode.as_deref(), content_type) {
            // the fast tape where it reads; json.rs (Python's reading, and its verdicts) where not
            doc = tape::parse(record.value);
            match doc.as_ref().and_then(read_structured_tape) {
                Some(event) => Some(event),
                None => {
                    parsed = Some(parse_structured(record.value, self.limits.unique));
                    Some(read_structured(parsed.as_ref().expect("just set")))
                }
            }
        } else {
            Some(read_binary(record, content_type))
        };
        let candidates = self.candidates(index, event.as_ref(), record);
        if !candidates.iter().all(|&d| self.judged_here(d)) {
            return Outcome::Defer;
        }
        let message = Message { record, event: event.as_ref(), content_type };
        let mut payload = Payload::new(record.value, self.limits.unique);
        if let [only] = candidates[..] {
            // one candidate (the common case): its whole list at once costs a passing message nothing more,
            // and a failing one is not judged a second time to be explained
            let found = self.violations(only, &message, &mut payload, 0, false);
            return if found.is_empty() { Outcome::Conformant(only) } else { Outcome::Nonconformant(Some(only), found) };
        }
        for &d in &candidates {
            if self.violations(d, &message, &mut payload, 1, true).is_empty() {
                return Outcome::Conformant(d);
            }
        }
        self.explain(&candidates, &message, &mut payload)
    }

    /// Whether every schema of a definition compiles here (each is compiled on its first message: a
    /// definition nobody's traffic names costs its plan only). One the crate refuses leaves the definition's
    /// messages to the Python judge.
    fn judged_here(&self, d: usize) -> bool {
        let definition = &self.definitions[d];
        if !definition.native {
            return false;
        }
        let rules = self.rules(d);
        rules.native && rules.schemas.iter().all(|&schema| self.schema(schema).is_some())
    }

    fn rules(&self, d: usize) -> &Rules {
        self.definitions[d].rules.get_or_init(|| match self.texts.rules(d) {
            Some(text) => compile_rules(&text, self.schemas.len()),
            None => Rules { native: false, rules: Vec::new(), schemas: Vec::new() },
        })
    }

    /// A payload schema, compiled on first use; None when it has no text or the crate refuses it.
    fn schema(&self, index: usize) -> Option<&JsonSchema> {
        let lazy = &self.schemas[index];
        lazy.compiled.get_or_init(|| {
            let draft = Draft::from_name(&lazy.plan.draft)?;
            let text: SchemaText = serde_json::from_str(&self.texts.schema(index)?).ok()?;
            JsonSchema::compile(&text.schema, draft, text.explain_depth).ok()
        }).as_ref()
    }

    /// ruleset.py `_Index.candidates`: the fixed hits and the floating definitions whose discriminator fits.
    fn candidates(&self, index: &Index, event: Option<&Event>, record: &Record) -> Vec<usize> {
        let type_value = event.and_then(|e| e.get("type")).and_then(|v| v.as_str());
        let mut found: Vec<usize> = Vec::new();
        let mut hits = 0;
        for (fixed, value) in [(&index.by_type, type_value), (&index.by_topic, record.topic)] {
            if let Some(value) = value {
                if let Some(hit) = fixed.get(value) {
                    found.extend_from_slice(hit);
                    hits += 1;
                }
            }
        }
        let before = found.len();
        for &d in &index.floating {
            let fits = match &self.definitions[d].discriminator {
                None => true,
                Some(disc) => {
                    let actual = match disc.reads { Reads::Type => type_value, Reads::Topic => record.topic };
                    match (actual, &disc.template) {
                        (None, _) => false,
                        (Some(a), Some(t)) => matches!(t.fit(a), Fit::Bound(_)),
                        (Some(a), None) => a == disc.value,
                    }
                }
            };
            if fits {
                found.push(d);
            }
        }
        if hits > 1 || (hits == 1 && found.len() > before) {
            found.sort_by_key(|&d| self.definitions[d].rank);
        }
        found
    }

    /// explaining.py `explain_failure` (every candidate known to fail).
    fn explain(&self, candidates: &[usize], message: &Message, payload: &mut Payload) -> Outcome {
        let Some((&first, rest)) = candidates.split_first() else {
            return Outcome::Nonconformant(None, vec![unknown(message.event)]);
        };
        let mut best = first;
        let mut fewest = self.violations(first, message, payload, 0, false);
        for &d in rest {
            if fewest.len() <= 1 {
                break;
            }
            let found = self.violations(d, message, payload, fewest.len(), false);
            if found.len() < fewest.len() {
                best = d;
                fewest = found;
            }
        }
        Outcome::Nonconformant(Some(best), fewest)
    }

    /// definition.py `violations`: every violation in rule order, one per (path, rule); with `limit`, at
    /// most that many. `first_only`: stop at the first failing rule (the passing test).
    fn violations(&self, d: usize, message: &Message, payload: &mut Payload, limit: usize, first_only: bool)
                  -> Vec<Violation> {
        // room for a template's placeholders: growing from empty took the allocator's slow path each record
        let mut bindings: Vec<(&str, &str)> = Vec::with_capacity(4);
        let mut found: Vec<Violation> = Vec::new();
        // the implicit CloudEvents rules passed (they come first): some attribute types are then known
        let mut implicit_passed = false;
        for rule in &self.rules(d).rules {
            let outcome = self.rule(rule, message, payload, implicit_passed, &mut bindings);
            if matches!(rule, CompiledRule::Cloudevents) {
                implicit_passed = outcome.is_ok();
            }
            if let Err(violations) = outcome {
                for v in violations {
                    if !found.iter().any(|f| f.path == v.path && f.rule == v.rule) {
                        found.push(v);
                    }
                }
                if first_only || limit > 0 && found.len() >= limit {
                    found.truncate(limit.max(1));
                    return found;
                }
            }
        }
        found
    }

    fn rule<'a>(&'a self, rule: &'a CompiledRule, message: &Message<'a>, payload: &mut Payload,
                implicit_passed: bool, bindings: &mut Vec<(&'a str, &'a str)>) -> Found {
        match rule {
            CompiledRule::Cloudevents => match message.event {
                Some(event) => cloudevents_rules(event),
                None => Err(vec![Violation {
                    path: "envelopemetadata.specversion".into(), rule: Rule::Specversion,
                    expected: Expected::Str("1.0".into()), actual: Actual::Null,
                    message: "the message is not a CloudEvent".into(),
                }]),
            },
            CompiledRule::Attribute { name, check } => match message.event.and_then(|e| e.get(name)) {
                None => check.absent(),
                Some(actual) => check.check(actual, message.event.is_some_and(|e| e.text()),
                                            implicit_passed && implied_by_cloudevents(name, check.kind), bindings),
            },
            CompiledRule::Raw { binary } => {
                let Some(event) = message.event else { return Ok(()) };
                let found: Vec<Violation> = event.raw_names.iter()
                    .filter(|name| !binary.iter().any(|b| b == *name))
                    .map(|name| match event.get(name) {
                        Some(Val::Bytes(bytes)) => not_utf8(&format!("envelopemetadata.{name}"), bytes),
                        other => {
                            let mut v = not_utf8(&format!("envelopemetadata.{name}"), b"");
                            v.actual = other.map_or(Actual::Null, crate::rules::actual_of);
                            v
                        }
                    })
                    .collect();
                if found.is_empty() { Ok(()) } else { Err(found) }
            }
            CompiledRule::Option { field: Field::KeyBase64, check, .. } => match message.record.key {
                // the key's base64 text lives only here: the lowering gives key_base64 no template, so it
                // binds nothing
                None => check.absent(),
                Some(key) => {
                    use base64::Engine;
                    let text = base64::engine::general_purpose::STANDARD.encode(key);
                    check.check(Val::Text(&text), true, false, &mut Vec::new())
                }
            },
            CompiledRule::Option { field, header, text, check } => {
                let values = read_option(message.record, *field, header);
                if values.is_empty() {
                    return check.absent();
                }
                for actual in values {
                    check.check(actual, *text, false, bindings)?;
                }
                Ok(())
            }
            CompiledRule::ContentType { path, wanted, shown, cloudevents } => {
                let actual = match message.event {
                    Some(event) if *cloudevents => event.get("datacontenttype").and_then(|v| v.as_str()),
                    _ => message.content_type,
                };
                match actual {
                    Some(actual) if !content_types_agree(actual, wanted) => Err(vec![Violation {
                        path: path.clone(), rule: Rule::ContentType, expected: Expected::Str(shown.clone()),
                        actual: truncate_str(actual),
                        message: format!("content type {} does not agree with {shown}", repr_str(actual)),
                    }]),
                    _ => Ok(()),
                }
            }
            CompiledRule::Payload { schema, cloudevents } => {
                let validator = self.schema(*schema).expect("a definition whose schema fails is deferred");
                payload.check(*schema, validator, message.event, *cloudevents)
            }
        }
    }

    /// limits.py `envelope_violation` for Kafka: the body's size, the headers' count and sizes.
    fn limit_violation(&self, record: &Record) -> Option<Violation> {
        let limits = &self.limits;
        let size = record.value.len();
        if size > limits.max_body_bytes {
            return Some(limit("body".into(), format!("at most {} bytes", limits.max_body_bytes), size,
                              format!("body is {size} bytes, over the limit of {}", limits.max_body_bytes)));
        }
        let count = record.headers.len();
        if count > limits.max_headers {
            return Some(limit("protocoloptions.headers".into(), format!("at most {} headers", limits.max_headers),
                              count, format!("the message carries {count} headers, over the limit of {}",
                                             limits.max_headers)));
        }
        for (name, value) in &record.headers {
            // a name's characters are never more than its bytes: counting them (Python's `len`) only matters
            // when the bytes pass the limit (counting every name cost 2% of a binary record's judging)
            let value_size = value.map_or(0, |v| v.len());
            if name.len() + value_size <= limits.max_header_bytes {
                continue;
            }
            let size = name.chars().count() + value_size;
            if size > limits.max_header_bytes {
                let shown: String = name.chars().take(60).collect();
                return Some(limit(format!("protocoloptions.headers.{name}"),
                                  format!("at most {} bytes", limits.max_header_bytes), size,
                                  format!("header {} is {size} bytes long (name and value), over the limit of {}",
                                          repr_str(&shown), limits.max_header_bytes)));
            }
        }
        None
    }
}

/// A `limit` violation: a size or count past its bound.
fn limit(path: String, expected: String, actual: usize, message: String) -> Violation {
    Violation { path, rule: Rule::Limit, expected: Expected::Str(expected), actual: Actual::Int(actual as i128), message }
}

/// What the rules of one message read.
struct Message<'m> {
    record: &'m Record<'m>,
    event: Option<&'m Event<'m>>,
    content_type: Option<&'m str>,
}

/// explaining.py `_unknown`: no candidate qualified.
fn unknown(event: Option<&Event>) -> Violation {
    if let Some(problem) = event.and_then(|e| e.problem.as_ref()) {
        return problem.clone();
    }
    Violation {
        path: if event.is_some() { "envelopemetadata.type".into() } else { String::new() },
        rule: Rule::NoMatch,
        expected: Expected::Str("a declared message definition".into()),
        actual: event.and_then(|e| e.get("type")).map_or(Actual::Null, crate::rules::actual_of),
        message: "no message definition of this endpoint applies to the message".into(),
    }
}

/// One payload schema of the plan, compiled on first use (`Core::schema`).
struct LazySchema {
    plan: SchemaPlan,
    compiled: OnceLock<Option<JsonSchema>>,
}

fn definition(plan: DefinitionPlan) -> Definition {
    let discriminator = plan.discriminator.as_ref().map(|d| Discriminator {
        reads: if d.read == "type" { Reads::Type } else { Reads::Topic },
        value: d.value.clone(),
        template: if d.template { Template::compile(&d.value) } else { None },
    });
    let discriminator_unknown = discriminator.as_ref().is_some_and(|d| d.template.is_none())
        && plan.discriminator.as_ref().is_some_and(|d| d.template);
    Definition {
        native: plan.native && !discriminator_unknown,
        discriminator_unknown,
        rank: plan.rank,
        discriminator,
        rules: OnceLock::new(),
    }
}

/// A definition's rules from their plan text; a rule with no compiled form (or a plan this core cannot
/// read) leaves the definition with the Python judge.
fn compile_rules(text: &str, schemas: usize) -> Rules {
    let Ok(plans) = serde_json::from_str::<Vec<RulePlan>>(text) else {
        return Rules { native: false, rules: Vec::new(), schemas: Vec::new() };
    };
    let mut native = true;
    let mut rules = Vec::with_capacity(plans.len());
    for rule in plans {
        let compiled = match rule {
            RulePlan::Cloudevents => Some(CompiledRule::Cloudevents),
            RulePlan::Attribute { name, check } => ValueCheck::new(&check)
                .map(|check| CompiledRule::Attribute { name, check }),
            RulePlan::Raw { binary } => Some(CompiledRule::Raw { binary }),
            RulePlan::Option { field, header, text, check } => ValueCheck::new(&check)
                .map(|check| CompiledRule::Option { field, header, text, check }),
            RulePlan::ContentType { path, wanted, shown, cloudevents } =>
                Some(CompiledRule::ContentType { path, wanted, shown, cloudevents }),
            RulePlan::Payload { schema, cloudevents } => (schema < schemas)
                .then_some(CompiledRule::Payload { schema, cloudevents }),
        };
        match compiled {
            Some(rule) => rules.push(rule),
            None => native = false,
        }
    }
    let schemas = rules.iter()
        .filter_map(|rule| match rule { CompiledRule::Payload { schema, .. } => Some(*schema), _ => None })
        .collect();
    Rules { native, rules, schemas }
}

fn endpoint(plan: EndpointPlan, definitions: &[Definition]) -> Endpoint {
    let index = plan.kafka;
    let (mut by_type, mut by_topic) = (HashMap::new(), HashMap::new());
    for (read, value, found) in index.fixed {
        if read == "type" { by_type.insert(value, found) } else { by_topic.insert(value, found) };
    }
    // a floating definition whose template has no segment form cannot be tested here
    let opaque = index.floating.iter().any(|&d| definitions[d].discriminator_unknown);
    Endpoint {
        mode: plan.mode,
        kafka: Index { by_type, by_topic, floating: index.floating, cloudevents: index.cloudevents, opaque },
    }
}
