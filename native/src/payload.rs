//! JSON Schema payloads on the `jsonschema` crate (the engine of jsonschema-rs, which the Python judge uses:
//! gateway/compiler/payload/jsonschema.py is the reference for draft choice, options and violations).

use serde_json::Value;

use crate::pyrepr::Actual;

/// payload/base.py MAX_VIOLATIONS
pub const MAX_VIOLATIONS: usize = 10;

/// The draft, as payload/jsonschema.py `_validator_class` chose it (the lowering passes its name:
/// "draft4", "draft6", "draft7", "draft2019-09", "draft2020-12").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Draft { Draft4, Draft6, Draft7, Draft201909, Draft202012 }

impl Draft {
    pub fn from_name(name: &str) -> Option<Draft> {
        todo!("{name}")
    }
}

/// One schema violation as payload/jsonschema.py `_violation` builds it (the path prefix `dataschema:`
/// is added by the caller).
#[derive(Clone, Debug, PartialEq)]
pub struct SchemaViolation {
    pub pointer: String,
    pub expected: String,
    pub actual: Actual,
    pub message: String,
}

pub struct JsonSchema {
    // the compiled validator
}

impl JsonSchema {
    /// Err with a one-line reason when the crate refuses a schema the Python side compiled (the lowering
    /// then keeps that definition on the Python judge).
    pub fn compile(schema: &Value, draft: Draft) -> Result<JsonSchema, String> {
        todo!("{schema:?} {draft:?}")
    }

    pub fn is_valid(&self, value: &Value) -> bool {
        todo!("{value:?}")
    }

    /// At most MAX_VIOLATIONS, in the crate's order; never empty (a root "payload fails its JSON Schema"
    /// when the crate reports none), as `JsonSchemaValidator._explain` does.
    pub fn violations(&self, value: &Value) -> Vec<SchemaViolation> {
        todo!("{value:?}")
    }
}
