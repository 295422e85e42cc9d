//! A JSON document as one flat vector (a "tape"), read in one pass with strings borrowed from the text, and
//! the `jsonschema` crate's representation over it (its `Json` trait), so a payload is validated where it lies.
//!
//! `parse` is the fast reading and it is strict: it gives up (None) on anything json.rs reads with a Python
//! quirk or refuses: text that is not UTF-8 or starts with a BOM, a member named twice, nesting past
//! `DEPTH`, a negative zero, an integer past 64 bits, a number past the double range, a lone surrogate, or
//! anything that is not JSON. The caller then reads the text with json.rs, which decides those cases, and
//! `Doc::from_value` puts that reading on a tape. So a document reads the same either way.
//!
//! Layout, in document order: a scalar is one entry; an array is its header then each element; an object is
//! its header then each member as a `Str` entry (the name) followed by the value. A header knows where its
//! container ends, so siblings are skipped in one step.

use std::borrow::Cow;
use std::collections::HashSet;

use jsonschema::json::{cmp, Array, Json, Node as JsonNode, NodeIdentity, Object};
use jsonschema::types::JsonType;
use serde_json::{Map, Number, Value};

use crate::value::same_text;

/// Deeper documents are left to json.rs (which refuses past 128 levels, with Python's exact verdict).
const DEPTH: usize = 100;
/// Objects with more members than this check names for repeats with a set, not pairwise.
const PAIRWISE: usize = 16;

pub enum Entry<'a> {
    Null,
    Bool(bool),
    Number(Number),
    Str(Cow<'a, str>),
    /// `len` elements; the entry after the last one is at `end`
    Array { len: u32, end: u32 },
    /// `len` members (name, value)
    Object { len: u32, end: u32 },
}

pub struct Doc<'a> {
    entries: Vec<Entry<'a>>,
}

impl<'a> Doc<'a> {
    pub fn root(&self) -> Node<'_> {
        Node { entries: &self.entries, at: 0 }
    }

    /// A reading json.rs made, on a tape (its strings copied, so the tape outlives the value).
    pub fn from_value(value: &Value) -> Doc<'static> {
        let mut entries = Vec::new();
        push_value(&mut entries, value);
        Doc { entries }
    }
}

fn push_value(entries: &mut Vec<Entry<'static>>, value: &Value) {
    match value {
        Value::Null => entries.push(Entry::Null),
        Value::Bool(flag) => entries.push(Entry::Bool(*flag)),
        Value::Number(number) => entries.push(Entry::Number(number.clone())),
        Value::String(text) => entries.push(Entry::Str(Cow::Owned(text.clone()))),
        Value::Array(items) => {
            let at = entries.len();
            entries.push(Entry::Null);
            for item in items {
                push_value(entries, item);
            }
            entries[at] = Entry::Array { len: items.len() as u32, end: entries.len() as u32 };
        }
        Value::Object(members) => {
            let at = entries.len();
            entries.push(Entry::Null);
            for (name, item) in members {
                entries.push(Entry::Str(Cow::Owned(name.clone())));
                push_value(entries, item);
            }
            entries[at] = Entry::Object { len: members.len() as u32, end: entries.len() as u32 };
        }
    }
}

/// The text on a tape, or None where json.rs must read it (see the module's comment).
pub fn parse(text: &[u8]) -> Option<Doc<'_>> {
    let text = std::str::from_utf8(text).ok()?;
    let mut reader = Reader {
        text, bytes: text.as_bytes(), pos: 0, entries: Vec::with_capacity(text.len() / 8 + 4),
        names: Vec::with_capacity(32),
    };
    reader.value(0)?;
    reader.skip_space();
    (reader.pos == reader.bytes.len()).then_some(Doc { entries: reader.entries })
}

/// The first position from `at` on that holds a quote, a backslash or a control character (what ends a run of
/// a string's plain text), eight bytes at a time: a string's text was read a byte at a time before, ~15% of a
/// binary record's judging.
fn special(bytes: &[u8], mut at: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        // a byte is flagged where it is zero (quote, backslash) or below 0x20; a borrow may flag a byte above a
        // true hit too, never one below it, so the lowest flag is exact (bytes from 0x80 on are never flagged)
        let flags = (quote.wrapping_sub(ONES) & !quote
            | backslash.wrapping_sub(ONES) & !backslash
            | word.wrapping_sub(ONES * 0x20) & !word)
            & HIGHS;
        if flags != 0 {
            return Some(at + (flags.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let rest = bytes.get(at..)?;
    rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).map(|run| at + run)
}

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    entries: Vec<Entry<'a>>,
    /// the entries of the member names of every open object, innermost last (one vector for all of them)
    names: Vec<usize>,
}

impl<'a> Reader<'a> {
    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        self.skip_space();
        match *self.bytes.get(self.pos)? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => {
                let text = self.string()?;
                self.entries.push(Entry::Str(text));
                Some(())
            }
            b't' => self.word("true", Entry::Bool(true)),
            b'f' => self.word("false", Entry::Bool(false)),
            b'n' => self.word("null", Entry::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn word(&mut self, word: &str, entry: Entry<'a>) -> Option<()> {
        same_text(self.text.get(self.pos..self.pos + word.len())?, word).then_some(())?;
        self.pos += word.len();
        self.entries.push(entry);
        Some(())
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > DEPTH {
            return None;
        }
        let at = self.entries.len();
        self.entries.push(Entry::Null);
        self.pos += 1;
        let mut len = 0u32;
        self.skip_space();
        if self.bytes.get(self.pos) == Some(&b']') {
            self.pos += 1;
        } else {
            loop {
                self.value(depth)?;
                len += 1;
                self.skip_space();
                match self.bytes.get(self.pos)? {
                    b',' => self.pos += 1,
                    b']' => {
                        self.pos += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.entries[at] = Entry::Array { len, end: self.entries.len() as u32 };
        Some(())
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        if depth > DEPTH {
            return None;
        }
        let at = self.entries.len();
        self.entries.push(Entry::Null);
        self.pos += 1;
        let first = self.names.len();
        self.skip_space();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
        } else {
            loop {
                self.skip_space();
                if self.bytes.get(self.pos) != Some(&b'"') {
                    return None;
                }
                let name = self.string()?;
                let earlier = &self.names[first..];
                if earlier.len() < PAIRWISE
                    && earlier.iter().any(|&n| matches!(&self.entries[n], Entry::Str(s) if same_text(s, &name))) {
                    return None;
                }
                self.names.push(self.entries.len());
                self.entries.push(Entry::Str(name));
                self.skip_space();
                if self.bytes.get(self.pos) != Some(&b':') {
                    return None;
                }
                self.pos += 1;
                self.value(depth)?;
                self.skip_space();
                match self.bytes.get(self.pos)? {
                    b',' => self.pos += 1,
                    b'}' => {
                        self.pos += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        let len = self.names.len() - first;
        if len > PAIRWISE {
            let mut seen = HashSet::with_capacity(len);
            for &n in &self.names[first..] {
                let Entry::Str(name) = &self.entries[n] else { unreachable!("a member name is a string") };
                if !seen.insert(name.as_ref()) {
                    return None;
                }
            }
        }
        self.names.truncate(first);
        self.entries[at] = Entry::Object { len: len as u32, end: self.entries.len() as u32 };
        Some(())
    }

    /// A string at `pos` (its opening quote); borrowed unless it holds an escape.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let start = self.pos + 1;
        let mut at = special(self.bytes, start)?;
        match self.bytes[at] {
            b'"' => {
                self.pos = at + 1;
                return Some(Cow::Borrowed(&self.text[start..at]));
            }
            b'\\' => {}
            _ => return None, // a control character
        }
        let mut out = String::with_capacity(at - start + 16);
        out.push_str(&self.text[start..at]);
        loop {
            match *self.bytes.get(at)? {
                b'"' => {
                    self.pos = at + 1;
                    return Some(Cow::Owned(out));
                }
                b'\\' => {
                    let escaped = *self.bytes.get(at + 1)?;
                    at += 2;
                    out.push(match escaped {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let unit = self.hex4(at)?;
                            at += 4;
                            match unit {
                                0xD800..=0xDBFF => {
                                    // a high surrogate must be followed by a low one
                                    if self.bytes.get(at..at + 2)? != b"\\u" {
                                        return None;
                                    }
                                    let low = self.hex4(at + 2)?;
                                    if !(0xDC00..=0xDFFF).contains(&low) {
                                        return None;
                                    }
                                    at += 6;
                                    char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?
                                }
                                0xDC00..=0xDFFF => return None,
                                _ => char::from_u32(unit)?,
                            }
                        }
                        _ => return None,
                    });
                }
                0..=0x1f => return None,
                _ => {
                    // copy the run up to the next quote or backslash (UTF-8 sequences stay whole)
                    let end = special(self.bytes, at)?;
                    out.push_str(&self.text[at..end]);
                    at = end;
                }
            }
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.text.get(at..at + 4)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(digits, 16).ok()
    }

    /// A number, its digits gathered as they are checked (one pass, no search of the literal afterwards).
    fn number(&mut self) -> Option<()> {
        let start = self.pos;
        let bytes = self.bytes;
        let mut at = start;
        let negative = bytes[at] == b'-';
        if negative {
            at += 1;
        }
        let mut digits = 0u64;
        let mut count = match bytes.get(at)? {
            b'0' => {
                at += 1;
                1
            }
            b'1'..=b'9' => take_digits(bytes, &mut at, &mut digits),
            _ => return None,
        };
        let mut fraction = 0;
        let integral = at;
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            fraction = take_digits(bytes, &mut at, &mut digits);
            if fraction == 0 {
                return None;
            }
            count += fraction;
        }
        let mut exponent: i32 = 0;
        if let Some(b'e' | b'E') = bytes.get(at) {
            at += 1;
            let minus = bytes.get(at) == Some(&b'-');
            if let Some(b'+' | b'-') = bytes.get(at) {
                at += 1;
            }
            let from = at;
            while let Some(&d) = bytes.get(at).filter(|d| d.is_ascii_digit()) {
                exponent = exponent.saturating_mul(10).saturating_add(i32::from(d - b'0'));
                at += 1;
            }
            if at == from {
                return None;
            }
            if minus {
                exponent = -exponent;
            }
        }
        self.pos = at;
        let literal = &self.text[start..at];
        let number = if at == integral {
            // an integer: u64 or i64 as serde_json holds it (19 digits always fit); past 64 bits json.rs decides
            match (negative, count) {
                (_, ..=19) if negative && digits == 0 => return None,
                (false, ..=19) => Number::from(digits),
                (true, ..=19) => Number::from(i64::try_from(-i128::from(digits)).ok()?),
                (false, _) => Number::from(literal.parse::<u64>().ok()?),
                (true, _) => Number::from(literal.parse::<i64>().ok()?),
            }
        } else {
            // the double json.rs holds: exact where Clinger's fast case applies (both of serde_json's
            // float readings give the correctly rounded value there), else serde_json's own reading
            let value = match exact_double(digits, count, exponent.saturating_sub(fraction as i32)) {
                Some(value) if negative => -value,
                Some(value) => value,
                None => serde_json::from_str(literal).ok()?,
            };
            if value == 0.0 && negative {
                return None;
            }
            Number::from_f64(value)?
        };
        self.entries.push(Entry::Number(number));
        Some(())
    }
}

/// The digits from `at` on, added to `digits` (wrapping: the caller uses them only when few), and how many.
fn take_digits(bytes: &[u8], at: &mut usize, digits: &mut u64) -> usize {
    let from = *at;
    while let Some(&d) = bytes.get(*at).filter(|d| d.is_ascii_digit()) {
        *digits = digits.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
        *at += 1;
    }
    *at - from
}

/// Powers of ten a double holds exactly.
const POW10: [f64; 23] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
                          1e17, 1e18, 1e19, 1e20, 1e21, 1e22];

/// `digits` (`count` of them, at most 15) times ten to `scale` (at most 22 either way): one exact operand
/// times or over another, so one IEEE operation rounds it correctly (Clinger's fast path). None otherwise.
fn exact_double(digits: u64, count: usize, scale: i32) -> Option<f64> {
    if count > 15 {
        return None;
    }
    let power = *POW10.get(scale.unsigned_abs() as usize)?;
    Some(if scale >= 0 { digits as f64 * power } else { digits as f64 / power })
}

/// The `jsonschema` crate's view of a tape.
pub struct Tape;

/// One value on a tape.
#[derive(Clone, Copy)]
pub struct Node<'a> {
    entries: &'a [Entry<'a>],
    at: usize,
}

impl<'a> Node<'a> {
    fn entry(&self) -> &'a Entry<'a> {
        &self.entries[self.at]
    }

    /// The position just after this value.
    fn after(&self) -> usize {
        match self.entry() {
            Entry::Array { end, .. } | Entry::Object { end, .. } => *end as usize,
            _ => self.at + 1,
        }
    }

    pub fn as_str(&self) -> Option<&'a str> {
        match self.entry() {
            Entry::Str(text) => Some(text),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.entry(), Entry::Null)
    }

    /// An integer that fits i64.
    pub fn as_i64(&self) -> Option<i64> {
        match self.entry() {
            Entry::Number(number) => number.as_i64(),
            _ => None,
        }
    }

    /// Whether containers nest more than `levels` deep here (a scalar is 0 deep, `[]` 1, `[[1]]` 2), as
    /// explain_bound.py `payload_depth` counts; one pass over the value's entries.
    pub fn deeper_than(&self, levels: i64) -> bool {
        let mut ends: Vec<usize> = Vec::new();
        for at in self.at..self.after() {
            while ends.last().is_some_and(|&end| end <= at) {
                ends.pop();
            }
            if let Entry::Array { end, .. } | Entry::Object { end, .. } = &self.entries[at] {
                ends.push(*end as usize);
                if ends.len() as i64 > levels {
                    return true;
                }
            }
        }
        false
    }

    /// The members of an object, in document order.
    pub fn members(&self) -> Option<Members<'a>> {
        match self.entry() {
            Entry::Object { len, .. } => Some(Members { entries: self.entries, next: self.at + 1, left: *len as usize }),
            _ => None,
        }
    }

    /// The value as serde_json holds it (for messages, and for rules that read a value whole).
    pub fn value(&self) -> Value {
        match self.entry() {
            Entry::Null => Value::Null,
            Entry::Bool(flag) => Value::Bool(*flag),
            Entry::Number(number) => Value::Number(number.clone()),
            Entry::Str(text) => Value::String(text.to_string()),
            Entry::Array { .. } => Value::Array(Elements::of(*self).map(|item| item.value()).collect()),
            Entry::Object { .. } => Value::Object(
                self.members().into_iter().flatten().map(|(name, item)| (name.to_owned(), item.value()))
                    .collect::<Map<String, Value>>()),
        }
    }
}

pub struct Members<'a> {
    entries: &'a [Entry<'a>],
    next: usize,
    left: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, Node<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let Entry::Str(name) = &self.entries[self.next] else { unreachable!("a member starts with its name") };
        let value = Node { entries: self.entries, at: self.next + 1 };
        self.next = value.after();
        Some((name, value))
    }
}

pub struct Elements<'a> {
    entries: &'a [Entry<'a>],
    next: usize,
    left: usize,
}

impl<'a> Elements<'a> {
    fn of(node: Node<'a>) -> Elements<'a> {
        let left = match node.entry() {
            Entry::Array { len, .. } => *len as usize,
            _ => 0,
        };
        Elements { entries: node.entries, next: node.at + 1, left }
    }
}

impl<'a> Iterator for Elements<'a> {
    type Item = Node<'a>;

    fn next(&mut self) -> Option<Node<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let item = Node { entries: self.entries, at: self.next };
        self.next = item.after();
        Some(item)
    }
}

#[derive(Clone, Copy)]
pub struct TapeObject<'a>(Node<'a>);

#[derive(Clone, Copy)]
pub struct TapeArray<'a>(Node<'a>);

impl Json for Tape {
    type Node<'a> = Node<'a>;
    type PreparedKey = Box<str>;
    type StringBuffer = Vec<Entry<'static>>;

    // a lookup scans the members, so one pass over them always beats several lookups
    const KEYS_PER_LOOKUP: usize = 1 << 20;

    fn prepare_key(key: &str) -> Box<str> {
        key.into()
    }

    fn with_string_node<T>(buffer: &mut Vec<Entry<'static>>, string: &str, f: impl FnOnce(Node<'_>) -> T) -> T {
        buffer.clear();
        buffer.push(Entry::Str(Cow::Owned(string.to_owned())));
        f(Node { entries: buffer, at: 0 })
    }
}

impl<'a> JsonNode<'a, Tape> for Node<'a> {
    type Object = TapeObject<'a>;
    type Array = TapeArray<'a>;
    type Number = &'a Number;

    fn as_object(&self) -> Option<TapeObject<'a>> {
        matches!(self.entry(), Entry::Object { .. }).then_some(TapeObject(*self))
    }

    fn as_array(&self) -> Option<TapeArray<'a>> {
        matches!(self.entry(), Entry::Array { .. }).then_some(TapeArray(*self))
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        self.as_str().map(Cow::Borrowed)
    }

    fn as_number(&self) -> Option<&'a Number> {
        match self.entry() {
            Entry::Number(number) => Some(number),
            _ => None,
        }
    }

    fn as_boolean(&self) -> Option<bool> {
        match self.entry() {
            Entry::Bool(flag) => Some(*flag),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        Node::is_null(self)
    }

    fn json_type(&self) -> JsonType {
        match self.entry() {
            Entry::Null => JsonType::Null,
            Entry::Bool(_) => JsonType::Boolean,
            Entry::Number(_) => JsonType::Number,
            Entry::Str(_) => JsonType::String,
            Entry::Array { .. } => JsonType::Array,
            Entry::Object { .. } => JsonType::Object,
        }
    }

    fn string_length_within(&self, min: u64, max: u64) -> Option<bool> {
        let text = self.as_str()?;
        // a code point takes one to four bytes
        let bytes = text.len() as u64;
        if bytes < min || bytes.div_ceil(4) > max {
            return Some(false);
        }
        if min <= bytes.div_ceil(4) && bytes <= max {
            return Some(true);
        }
        Some((min..=max).contains(&(text.chars().count() as u64)))
    }

    fn equals_value(&self, expected: &Value) -> bool {
        let mut pending = vec![(*self, expected)];
        while let Some((node, expected)) = pending.pop() {
            let equal = match expected {
                Value::Null => node.is_null(),
                Value::Bool(flag) => matches!(node.entry(), Entry::Bool(b) if b == flag),
                Value::Number(number) => matches!(node.entry(), Entry::Number(n) if cmp::equal_numbers(n, number)),
                Value::String(text) => node.as_str() == Some(text.as_str()),
                Value::Array(items) => match node.entry() {
                    Entry::Array { len, .. } if *len as usize == items.len() => {
                        pending.extend(Elements::of(node).zip(items));
                        true
                    }
                    _ => false,
                },
                Value::Object(map) => match node.members() {
                    Some(members) if members.left == map.len() => members.into_iter().all(|(name, item)| {
                        map.get(name).map(|want| pending.push((item, want))).is_some()
                    }),
                    _ => false,
                },
            };
            if !equal {
                return false;
            }
        }
        true
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(self.value())
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::new(std::ptr::from_ref(self.entry()) as usize))
    }
}

impl<'a> Object<'a, Tape> for TapeObject<'a> {
    type Node = Node<'a>;
    type MemberName = &'a str;
    type MembersIter = Members<'a>;

    fn len(&self) -> usize {
        match self.0.entry() {
            Entry::Object { len, .. } => *len as usize,
            _ => 0,
        }
    }

    fn get(&self, key: &Box<str>) -> Option<Node<'a>> {
        self.members().find(|(name, _)| same_text(name, key)).map(|(_, value)| value)
    }

    fn members(&self) -> Members<'a> {
        self.0.members().expect("an object")
    }
}

impl<'a> Array<'a, Tape> for TapeArray<'a> {
    type Node = Node<'a>;
    type ElementsIter = Elements<'a>;

    fn len(&self) -> usize {
        Elements::of(self.0).left
    }

    fn elements(&self) -> Elements<'a> {
        Elements::of(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same_as_serde(text: &str) {
        let doc = parse(text.as_bytes()).unwrap_or_else(|| panic!("{text} should read"));
        let expected: Value = serde_json::from_str(text).unwrap();
        assert_eq!(doc.root().value(), expected, "{text}");
        assert_eq!(Doc::from_value(&expected).root().value(), expected, "{text}");
    }

    #[test]
    fn reads_what_serde_json_reads() {
        for text in [
            "{}", "[]", " {\"a\": [1, -2, 3.5, 1e3, true, false, null, \"x\"], \"b\": {\"c\": {}}} ",
            "\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00 tail\"", "18446744073709551615",
            "-9223372036854775808", "0.1", "1E-5", "\"h\u{e9}llo\"", "[[[[]]]]", "-1.5e300",
        ] {
            same_as_serde(text);
        }
    }

    #[test]
    fn leaves_quirks_and_errors_to_json_rs() {
        for text in [
            "", " ", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "01", "1.", "1e", "-", "tru", "nul", "[1] x",
            "{\"a\":1,\"a\":2}", "-0", "-0.0", "18446744073709551616", "-9223372036854775809", "1e400",
            "\"\\ud800\"", "\"\\udc00x\"", "1e99999999999", "-1e-99999999999", "\"\\x\"", "\"a\nb\"", "\u{feff}{}", "NaN", "[Infinity]", "'a'",
        ] {
            assert!(parse(text.as_bytes()).is_none(), "{text:?} should be left to json.rs");
        }
        assert!(parse(b"\"\xff\"").is_none());
        let deep = format!("{}{}", "[".repeat(DEPTH + 1), "]".repeat(DEPTH + 1));
        assert!(parse(deep.as_bytes()).is_none());
        let fine = format!("{}{}", "[".repeat(DEPTH), "]".repeat(DEPTH));
        assert!(parse(fine.as_bytes()).is_some());
    }

    #[test]
    fn special_finds_the_first_quote_backslash_or_control_byte() {
        let alphabet: &[u8] = b"ab\"\\\x00\x1f\x20\x7f\x80\xff~";
        let mut seed = 7u64;
        for _ in 0..20_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (seed >> 59) as usize + 1;
            let text: Vec<u8> = (0..len).map(|i| alphabet[((seed >> (i % 50)) as usize + i * 7) % alphabet.len()]).collect();
            for from in 0..=text.len() {
                let expected = text[from..].iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).map(|p| from + p);
                assert_eq!(special(&text, from), expected, "{text:?} from {from}");
            }
        }
        assert_eq!(special(b"0123456789abcdef\"", 0), Some(16));
        assert_eq!(special(b"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\\", 0), Some(8));
        assert_eq!(special(b"abc", 4), None);
    }

    #[test]
    fn a_repeated_name_in_a_large_object_is_found() {
        let members: Vec<String> = (0..40).map(|i| format!("\"k{i}\": {i}")).collect();
        let unique = format!("{{{}}}", members.join(","));
        assert!(parse(unique.as_bytes()).is_some());
        let repeated = format!("{{{}, \"k7\": 0}}", members.join(","));
        assert!(parse(repeated.as_bytes()).is_none());
    }

    #[test]
    fn doubles_as_serde_json_reads_them() {
        for text in ["0.1", "-2.5", "1e22", "1e23", "123456789012345.6", "1234567890123456.7", "4.35", "0.0001e-5",
                     "9007199254740993.0", "1.7976931348623157e308", "5e-324", "2.2250738585072014e-308", "3.14159e-22",
                     "100000000000000.0e8", "0.30000000000000004", "1E+2", "7.0e-10", "-0.5e-3", "12e-0",
                     "0.000000000000000000000000001"] {
            same_as_serde(text);
        }
        assert_eq!(exact_double(1, 1, 23), None);
        assert_eq!(exact_double(1_234_567_890_123_456, 16, -1), None);
        assert_eq!(exact_double(435, 3, -2), Some(4.35));
    }

    #[test]
    fn siblings_are_skipped_whole() {
        let doc = parse(br#"{"a": {"x": [1, {"y": 2}]}, "b": [[], {}], "c": "z"}"#).unwrap();
        let names: Vec<&str> = doc.root().members().unwrap().map(|(n, _)| n).collect();
        assert_eq!(names, ["a", "b", "c"]);
        let object = TapeObject(doc.root());
        assert_eq!(object.get(&"c".into()).and_then(|n| n.as_str()), Some("z"));
        assert!(object.get(&"d".into()).is_none());
        assert!(JsonNode::equals_value(&doc.root(), &serde_json::json!({"c": "z", "b": [[], {}], "a": {"x": [1.0, {"y": 2}]}})));
        assert!(!JsonNode::equals_value(&doc.root(), &serde_json::json!({"c": "z", "b": [[], {}]})));
    }
}
