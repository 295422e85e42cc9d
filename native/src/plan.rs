//! The plan: what gateway/compiler/lower.py makes of a compiled registry, read once when a Core is built.
//! Plain data, versioned; the Python compiler is its only author, so every meaning is decided there and this
//! side only executes it (paths, messages and expected values come precomputed where they are fixed).

use serde::Deserialize;
use serde_json::Value;

/// Where a definition's rules and a schema come from as JSON text, asked once, on the first message that
/// needs them (the Python side lowers them again then: nothing is kept for a definition nobody's traffic
/// names). None: not to be had; the definition stays with the Python judge.
pub trait Texts: Send + Sync {
    fn rules(&self, definition: usize) -> Option<String>;
    fn schema(&self, schema: usize) -> Option<String>;
}

/// The plan format this core reads; lower.py writes the same number.
pub const PLAN_VERSION: u32 = 2;

#[derive(Deserialize, Debug)]
pub struct Plan {
    pub version: u32,
    pub limits: Limits,
    pub schemas: Vec<SchemaPlan>,
    pub definitions: Vec<DefinitionPlan>,
    pub endpoints: Vec<EndpointPlan>,
}

#[derive(Deserialize, Debug, Clone)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub max_headers: usize,
    pub max_header_bytes: usize,
    /// validation rule 5.7: a JSON body naming a member twice is `decode`
    pub unique: bool,
}

/// A payload schema; its text is asked for on first use (`Texts::schema`, by its position here).
#[derive(Deserialize, Debug)]
pub struct SchemaPlan {
    pub draft: String,
}

/// What `Texts::schema` gives: the schema, and how deep a failing payload's errors are listed
/// (payload/explain_bound.py; None: any depth).
#[derive(Deserialize, Debug)]
pub struct SchemaText {
    pub schema: Value,
    pub explain_depth: Option<i64>,
}

#[derive(Deserialize, Debug)]
pub struct DefinitionPlan {
    /// false: a rule has no lowered form here (another payload format, a template with two placeholders
    /// in one piece, a repeated header): messages that name it are judged by the Python judge
    pub native: bool,
    /// position in rank order (specificity, then group and message ids)
    pub rank: u32,
    pub discriminator: Option<Discriminator>,
    // its rules, a JSON list of `RulePlan`, are asked for on the definition's first message
    // (`Texts::rules`, by its position here)
}

#[derive(Deserialize, Debug)]
pub struct Discriminator {
    /// "type" (the CloudEvents attribute) or "topic"
    pub read: String,
    pub value: String,
    /// the value has placeholders: it is matched as a template
    pub template: bool,
}

#[derive(Deserialize, Debug)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RulePlan {
    Cloudevents,
    Attribute { name: String, check: ValuePlan },
    Raw { binary: Vec<String> },
    Option { field: Field, #[serde(default)] header: String, text: bool, check: ValuePlan },
    ContentType { path: String, wanted: Vec<String>, shown: String, cloudevents: bool },
    Payload { schema: usize, cloudevents: bool },
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    Topic,
    Partition,
    Timestamp,
    Key,
    KeyBase64,
    Header,
}

/// One declared property's check (constraints.py `compile_value`).
#[derive(Deserialize, Debug)]
pub struct ValuePlan {
    pub path: String,
    #[serde(default)]
    pub required: bool,
    /// the resolved type name, as violations name it
    #[serde(rename = "type")]
    pub type_name: String,
    /// a template (`{name}` placeholders)
    pub template: Option<String>,
    /// the document's value when it is compared (absent: no value, "any timestamp", or a template)
    pub expected: Option<Value>,
    /// index into the constants: the document's value as a violation's `expected`
    pub value_const: Option<usize>,
    /// `{path} must be {value!r}`
    pub value_message: Option<String>,
    /// a literal that is itself a valid value of its string-like type: the same text passes at once
    pub valid_literal: Option<String>,
}

#[derive(Deserialize, Debug)]
pub struct EndpointPlan {
    pub id: String,
    /// `envelopeoptions.mode`: "binary", "structured" or none
    pub mode: Option<String>,
    pub kafka: IndexPlan,
}

/// Dispatch for one protocol family on one endpoint (ruleset.py `_Index`).
#[derive(Deserialize, Debug)]
pub struct IndexPlan {
    /// (read, value, definitions in rank order)
    pub fixed: Vec<(String, String, Vec<usize>)>,
    pub floating: Vec<usize>,
    pub cloudevents: bool,
}
