//! Placeholder templates (CONFORMANCE.md 5.4; gateway/compiler/templates.py is the reference) where every
//! piece between the delimiters `/ ? #` holds at most one placeholder: a segment matcher, linear in the
//! value, no regex. Templates with two placeholders in one piece are not lowered (the Python judge keeps
//! them).

/// A compiled template.
#[derive(Clone, Debug)]
pub struct Template {
    pub text: String,
}

/// What matching a value gives.
#[derive(Debug, PartialEq, Eq)]
pub enum Fit<'v> {
    /// the value fits: each placeholder name (in order of first use) with its text
    Bound(Vec<(&'v str, &'v str)>),
    /// the value fits the shape but binds one name to two texts (templates.py `conflicts`)
    Conflict,
    /// it does not fit
    No,
}

impl Template {
    /// None when a piece holds two placeholders (templates.py `forced` is None).
    pub fn compile(text: &str) -> Option<Template> {
        todo!("{text}")
    }

    /// Placeholder names, in order of first use.
    pub fn names(&self) -> &[String] {
        todo!()
    }

    pub fn fit<'v>(&'v self, value: &'v str) -> Fit<'v> {
        todo!("{value}")
    }
}

/// templates.py `has_placeholders`.
pub fn has_placeholders(text: &str) -> bool {
    todo!("{text}")
}
