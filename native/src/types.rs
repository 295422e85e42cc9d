//! Property types of validation rule 5.3 (a port of gateway/compiler/types.py, which stays the
//! reference): `is_type` checks a value, `coerce` reads one as its declared type so that `"1"` equals 1,
//! and `Coerced::same` compares two coerced values as Python's `==` does.

use std::sync::OnceLock;

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use regex::Regex;
use serde_json::{Map, Number, Value};

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
        match name {
            "string" => Kind::String,
            "symbol" => Kind::Symbol,
            "integer" => Kind::Integer,
            "number" => Kind::Number,
            "boolean" => Kind::Boolean,
            "binary" => Kind::Binary,
            "timestamp" => Kind::Timestamp,
            "duration" => Kind::Duration,
            "uri" => Kind::Uri,
            "urireference" => Kind::UriReference,
            "uritemplate" => Kind::UriTemplate,
            "any" | "var" => Kind::Any,
            "map" | "object" => Kind::Map,
            "array" => Kind::Array,
            _ => Kind::String,
        }
    }

    /// types.py `STRING_LIKE`: numbers coerced to these kinds become their text.
    fn string_like(self) -> bool {
        matches!(self, Kind::String | Kind::Symbol | Kind::Uri | Kind::UriReference | Kind::UriTemplate)
    }
}

const INT_MIN: i128 = -(1 << 31);
const INT_MAX: i128 = (1 << 31) - 1;

/// types.py `CHECKERS[kind](value, text)`.
pub fn is_type(kind: Kind, value: Val, text: bool) -> bool {
    let string = value.as_str();
    match kind {
        Kind::String => string.is_some(),
        Kind::Symbol => string.is_some_and(is_symbol),
        Kind::Integer if text => string.is_some_and(is_int_text),
        Kind::Integer => python_int(value).is_some_and(|i| (INT_MIN..=INT_MAX).contains(&i)),
        Kind::Number if text => string.is_some_and(|s| number_text().is_match(s)),
        Kind::Number => matches!(value, Val::Int(_) | Val::Json(Value::Number(_))),
        Kind::Boolean if text => matches!(string, Some("true" | "false")),
        Kind::Boolean => matches!(value, Val::Json(Value::Bool(_))),
        Kind::Binary => matches!(value, Val::Bytes(_)) || string.is_some_and(is_base64_text),
        Kind::Timestamp => string.is_some_and(is_timestamp),
        Kind::Duration => string.is_some_and(is_duration),
        Kind::Uri => string.is_some_and(is_uri),
        Kind::UriReference => string.is_some_and(is_uri_reference),
        // a message carries the expanded value; a template-shaped text is tolerated as well
        Kind::UriTemplate => string.is_some_and(|s| is_uri_reference(s) || is_uri_template(s)),
        Kind::Any => true,
        Kind::Map => matches!(value, Val::Json(Value::Object(_))),
        Kind::Array => matches!(value, Val::Json(Value::Array(_))),
    }
}

/// The value as a Python int, when Python sees one (a bool is no int here, as in `_is_int`).
fn python_int(value: Val) -> Option<i128> {
    match value {
        Val::Int(i) => Some(i.into()),
        Val::Json(Value::Number(n)) => json_int(n),
        _ => None,
    }
}

/// A JSON number that orjson reads as an int (written without a point or an exponent).
fn json_int(number: &Number) -> Option<i128> {
    number.as_i64().map(i128::from).or_else(|| number.as_u64().map(i128::from))
}

/// Any other JSON number: a double (serde_json has one for every number).
fn json_float(number: &Number) -> f64 {
    number.as_f64().unwrap_or(f64::NAN)
}

/// `[+-]?[0-9]+` within -2^31..2^31-1, leading zeros allowed (validation rule 8).
fn is_int_text(text: &str) -> bool {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    // past 10 significant digits the text is out of range (and may be too long to parse)
    let significant = digits.trim_start_matches('0');
    if significant.len() > 10 {
        return false;
    }
    let magnitude: i128 = significant.parse().unwrap_or(0);
    let number = if text.starts_with('-') { -magnitude } else { magnitude };
    (INT_MIN..=INT_MAX).contains(&number)
}

/// types.py `_NUMBER_TEXT`; `\z` for `re.fullmatch` (the regex crate's `$` is the same in this mode, `\z`
/// says so), and `[0-9]`, ASCII as in Python (the crate's `\d` is Unicode).
fn number_text() -> &'static Regex {
    static NUMBER: OnceLock<Regex> = OnceLock::new();
    NUMBER.get_or_init(|| {
        Regex::new(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\z").expect("a valid pattern")
    })
}

fn is_symbol(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// types.py `_DURATION`, less its two lookarounds (the regex crate has none), which are checked apart.
fn is_duration(text: &str) -> bool {
    static DURATION: OnceLock<Regex> = OnceLock::new();
    let pattern = DURATION.get_or_init(|| {
        const PART: &str = "[0-9]+(?:[.,][0-9]+)?";
        Regex::new(&format!(
            r"^P(?:{PART}Y)?(?:{PART}M)?(?:{PART}W)?(?:{PART}D)?(?:T(?:{PART}H)?(?:{PART}M)?(?:{PART}S)?)?\z"
        ))
        .expect("a valid pattern")
    });
    // `P(?!$)`: not `P` alone; `T(?=[0-9])`: a `T` is followed by a digit (the only `T` is the designator)
    pattern.is_match(text)
        && text != "P"
        && text.find('T').is_none_or(|at| text.as_bytes().get(at + 1).is_some_and(u8::is_ascii_digit))
}

/// What each byte is in a URI-reference: 0 not allowed, `URI_ALLOWED` allowed (letters, digits and
/// `-._~:/?#[]@!$&'()*+,;=`), `URI_ALLOWED | URI_PERCENT` for `%`.
const URI_CLASS: [u8; 256] = {
    let mut table = [0; 256];
    let mut b = 0;
    while b < 256 {
        if (b as u8).is_ascii_alphanumeric() {
            table[b] = URI_ALLOWED;
        }
        b += 1;
    }
    let marks = b"-._~:/?#[]@!$&'()*+,;=";
    let mut i = 0;
    while i < marks.len() {
        table[marks[i] as usize] = URI_ALLOWED;
        i += 1;
    }
    table[b'%' as usize] = URI_ALLOWED | URI_PERCENT;
    table
};
const URI_ALLOWED: u8 = 1;
const URI_PERCENT: u8 = 2;

/// Every `%` followed by two hex digits (types.py `_BAD_PERCENT` finds none).
fn percent_ok(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().all(|(at, &b)| {
        b != b'%' || bytes.get(at + 1..at + 3).is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    })
}

fn is_uri_reference(text: &str) -> bool {
    // every byte's class joined without a branch: AND keeps "all allowed", OR "some `%`" (a lookup, a branch
    // and a `%` flag a byte took ~6 instructions)
    let (every, some) = text.bytes().fold((URI_ALLOWED, 0), |(every, some), b| {
        let class = URI_CLASS[b as usize];
        (every & class, some | class)
    });
    every & URI_ALLOWED != 0 && (some & URI_PERCENT == 0 || percent_ok(text))
}

/// `[A-Za-z][A-Za-z0-9+.-]*:` then URI-reference characters; the scheme cannot hold `:`, so it ends at
/// the first one.
fn is_uri(text: &str) -> bool {
    // a byte search: a scheme is short, and memchr's set-up cost more than it saved
    let Some(colon) = text.bytes().position(|b| b == b':') else {
        return false;
    };
    let (scheme, rest) = (&text[..colon], &text[colon + 1..]);
    let mut scheme = scheme.bytes();
    scheme.next().is_some_and(|b| b.is_ascii_alphabetic())
        && scheme.all(|b| b.is_ascii_alphanumeric() || b"+.-".contains(&b))
        && is_uri_reference(rest)
}

/// types.py `_URI_TEMPLATE`: `(?:[^{}\s]|\{[A-Za-z0-9_.%,*:]+\})*`; a `{` can only open an expression.
fn is_uri_template(text: &str) -> bool {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '{' => {
                let mut length = 0;
                loop {
                    match chars.next() {
                        Some('}') if length > 0 => break,
                        Some(c) if c.is_ascii_alphanumeric() || "_.%,*:".contains(c) => length += 1,
                        _ => return false,
                    }
                }
            }
            '}' => return false,
            c if is_py_space(c) => return false,
            _ => {}
        }
    }
    true
}

/// Python's `str.isspace` (and so `\s` in a `re` str pattern): Unicode White_Space plus the four
/// information separators U+001C..U+001F, which Python counts as space and Rust does not.
pub(crate) fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The data characters and the number of `=` after them, when the text is only those.
fn base64_parts(text: &str) -> Option<(&str, usize)> {
    let data = text.trim_end_matches('=');
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    data.bytes().all(alphabet).then_some((data, text.len() - data.len()))
}

/// Whether `base64.b64decode(text, validate=True)` (strict mode in Python 3.11) accepts the text, by
/// the data characters' count modulo 4 and the padding after them: the padding must complete the last
/// quad exactly, except that padding after a complete quad is ignored (`AAAA==` reads as `AAAA`).
fn padding_ok(data: &str, pads: usize) -> bool {
    match data.len() % 4 {
        0 => !data.is_empty() || pads == 0, // leading padding is refused
        2 => pads == 2,
        3 => pads == 1,
        _ => false,
    }
}

/// types.py `_is_binary` on a str: a multiple of 4 long, `[A-Za-z0-9+/]*={0,2}`, and decodable.
fn is_base64_text(text: &str) -> bool {
    let padded = |(data, pads)| pads <= 2 && padding_ok(data, pads);
    text.len().is_multiple_of(4) && base64_parts(text).is_some_and(padded)
}

/// Python's `base64.b64decode(text, validate=True)`; non-zero trailing bits are accepted, as there.
pub(crate) fn b64decode(text: &str) -> Option<Vec<u8>> {
    const DATA: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::RequireNone),
    );
    let (data, pads) = base64_parts(text)?;
    if !padding_ok(data, pads) {
        return None;
    }
    DATA.decode(data).ok()
}

/// types.py `parse_timestamp`, as microseconds since the epoch (UTC): RFC 3339 with an offset, `T`/`Z`
/// in either case, a fraction of any length (cut to microseconds), years 0001-9999 (as a datetime holds
/// them: the project's decision, docs/decisions.md); offsets past `23:59` in either field are refused, per
/// RFC 3339 (Python's fromisoformat took `+05:75` as `+06:15`; types.py refuses it too now).
fn parse_timestamp(text: &str) -> Option<i128> {
    let stamp = timestamp_fields(text)?;
    let seconds = days_from_civil(stamp.year, stamp.month, stamp.day) * 86_400 + stamp.hour * 3_600
        + stamp.minute * 60 + stamp.second - stamp.offset_minutes * 60;
    Some(i128::from(seconds) * 1_000_000 + i128::from(stamp.micros))
}

/// Whether `parse_timestamp` reads the text (a type check needs no instant).
fn is_timestamp(text: &str) -> bool {
    timestamp_fields(text).is_some()
}

/// A timestamp's fields as written, every one in range.
struct Stamp {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    micros: i64,
    offset_minutes: i64,
}

/// The two digits at `at` as a number.
fn two_digits(bytes: &[u8], at: usize) -> Option<i64> {
    let (tens, ones) = (bytes.get(at)?.wrapping_sub(b'0'), bytes.get(at + 1)?.wrapping_sub(b'0'));
    (tens < 10 && ones < 10).then(|| i64::from(tens * 10 + ones))
}

/// `parse_timestamp`'s reading: the fixed 19 bytes of date and time read in place, then the fraction and
/// the offset.
fn timestamp_fields(text: &str) -> Option<Stamp> {
    let bytes = text.as_bytes();
    let head: &[u8; 19] = bytes.get(..19)?.try_into().ok()?;
    if head[4] != b'-' || head[7] != b'-' || !matches!(head[10], b'T' | b't') || head[13] != b':' || head[16] != b':' {
        return None;
    }
    let year = two_digits(head, 0)? * 100 + two_digits(head, 2)?;
    let (month, day) = (two_digits(head, 5)?, two_digits(head, 8)?);
    let (hour, minute, second) = (two_digits(head, 11)?, two_digits(head, 14)?, two_digits(head, 17)?);
    let mut rest = &bytes[19..];
    let mut micros = 0;
    if let Some(fraction) = rest.strip_prefix(b".") {
        let length = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
        if length == 0 {
            return None;
        }
        let digits = fraction[..length].iter().chain(b"000000").take(6);
        micros = digits.fold(0, |total, &b| total * 10 + i64::from(b - b'0'));
        rest = &fraction[length..];
    }
    let offset_minutes = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (hours, minutes) = (two_digits(rest, 1)?, two_digits(rest, 4)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            if *sign == b'-' { -(hours * 60 + minutes) } else { hours * 60 + minutes }
        }
        _ => return None,
    };
    // Python refuses a leap second (60) and 24:00 alike
    if year == 0 || !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) || hour > 23 || minute > 59
        || second > 59
    {
        return None;
    }
    Some(Stamp { year, month, day, hour, minute, second, micros, offset_minutes })
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
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
        python_eq(self.python(), other.python())
    }

    fn python(&self) -> Python<'_> {
        match self {
            Coerced::Int(i) => Python::Int(*i),
            Coerced::Float(f) => Python::Float(*f),
            Coerced::Bool(b) => Python::Int((*b).into()),
            Coerced::Str(s) => Python::Str(s),
            Coerced::Bytes(b) => Python::Bytes(b),
            Coerced::Instant(t) => Python::Instant(*t),
            Coerced::Json(v) => Python::of_json(v),
        }
    }
}

/// A value as Python's `==` sees it; a bool is the int 0 or 1 there (`True == 1`, `True == 1.0`).
#[derive(Clone, Copy)]
enum Python<'a> {
    None,
    Int(i128),
    Float(f64),
    Str(&'a str),
    Bytes(&'a [u8]),
    Instant(i128),
    List(&'a [Value]),
    Dict(&'a Map<String, Value>),
}

impl<'a> Python<'a> {
    /// The value orjson would give for this JSON value.
    fn of_json(value: &'a Value) -> Python<'a> {
        match value {
            Value::Null => Python::None,
            Value::Bool(b) => Python::Int((*b).into()),
            Value::Number(n) => json_int(n).map_or_else(|| Python::Float(json_float(n)), Python::Int),
            Value::String(s) => Python::Str(s),
            Value::Array(items) => Python::List(items),
            Value::Object(members) => Python::Dict(members),
        }
    }
}

fn python_eq(a: Python, b: Python) -> bool {
    match (a, b) {
        (Python::None, Python::None) => true,
        (Python::Int(x), Python::Int(y)) => x == y,
        (Python::Float(x), Python::Float(y)) => x == y,
        (Python::Int(i), Python::Float(f)) | (Python::Float(f), Python::Int(i)) => int_equals_float(i, f),
        (Python::Str(x), Python::Str(y)) => x == y,
        (Python::Bytes(x), Python::Bytes(y)) => x == y,
        (Python::Instant(x), Python::Instant(y)) => x == y,
        (Python::List(x), Python::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| python_eq(Python::of_json(v), Python::of_json(w)))
        }
        (Python::Dict(x), Python::Dict(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| python_eq(Python::of_json(v), Python::of_json(w))))
        }
        _ => false,
    }
}

/// i128's bounds, as a double (the float `1.7014118346046923e38` is 2^127 exactly)
const TWO_TO_127: f64 = 1.7014118346046923e38;

/// Python compares an int and a float exactly (`2**53 + 1 != 2.0**53`), not through a double.
fn int_equals_float(int: i128, float: f64) -> bool {
    float.fract() == 0.0 && (-TWO_TO_127..TWO_TO_127).contains(&float) && float as i128 == int
}

/// A float that Python's `coerce` turns into an int (`int(number) if number.is_integer()`); one past
/// i128 stays a float, which compares the same under `same`.
fn integral(number: f64) -> Coerced {
    if number.fract() == 0.0 && (-TWO_TO_127..TWO_TO_127).contains(&number) {
        Coerced::Int(number as i128)
    } else {
        Coerced::Float(number)
    }
}

/// The Python value types.py sees, unconverted.
fn plain(value: Val) -> Coerced {
    match value {
        Val::Text(s) => Coerced::Str(s.to_owned()),
        Val::Bytes(b) => Coerced::Bytes(b.to_vec()),
        Val::Int(i) => Coerced::Int(i.into()),
        Val::Json(Value::Bool(b)) => Coerced::Bool(*b),
        Val::Json(Value::Number(n)) => json_int(n).map_or_else(|| Coerced::Float(json_float(n)), Coerced::Int),
        Val::Json(Value::String(s)) => Coerced::Str(s.clone()),
        Val::Json(v) => Coerced::Json(v.clone()),
    }
}

/// types.py `coerce(value, type_name, text)`.
pub fn coerce(value: Val, kind: Kind, text: bool) -> Coerced {
    let _ = text; // types.py's coerce does not read it either
    match (kind, value.as_str()) {
        (Kind::Integer | Kind::Number, Some(s)) => {
            python_float(s).map_or_else(|| Coerced::Str(s.to_owned()), integral)
        }
        (Kind::Integer | Kind::Number, None) => match plain(value) {
            Coerced::Float(f) => integral(f),
            other => other,
        },
        (Kind::Boolean, Some("true")) => Coerced::Bool(true),
        (Kind::Boolean, Some("false")) => Coerced::Bool(false),
        (Kind::Boolean, _) | (Kind::Any | Kind::Map | Kind::Array, _) => plain(value),
        (Kind::Timestamp, Some(s)) => parse_timestamp(s).map_or_else(|| Coerced::Str(s.to_owned()), Coerced::Instant),
        (Kind::Binary, Some(s)) => b64decode(s).map_or_else(|| Coerced::Str(s.to_owned()), Coerced::Bytes),
        // the rest of types.py's coerce: a timestamp or binary that is no str lands here too
        _ => match plain(value) {
            Coerced::Bool(b) => Coerced::Str(if b { "true" } else { "false" }.to_owned()),
            Coerced::Int(i) if kind.string_like() => Coerced::Str(i.to_string()),
            Coerced::Float(f) if kind.string_like() => Coerced::Str(crate::pyrepr::repr_float(f)),
            other => other,
        },
    }
}

/// A JSON literal from a document (a rule's `value`) coerced as types.py does:
/// `coerce(value, type_name, isinstance(value, str))`.
pub fn coerce_literal(value: &serde_json::Value, kind: Kind) -> Coerced {
    coerce(Val::Json(value), kind, value.is_string())
}

/// Python's `float(text)`: other Unicode spaces and decimal digits first become ASCII (CPython's
/// `_PyUnicode_TransformDecimalAndSpaceToASCII`), `_` is allowed between digits only, ASCII whitespace is
/// stripped; what remains follows the grammar Rust's own float parsing has (sign, digits with an optional
/// point and exponent, `inf`, `infinity`, `nan` in any case). Values past the double range become
/// infinite, as in Python.
fn python_float(text: &str) -> Option<f64> {
    let mut ascii = String::with_capacity(text.len());
    for c in text.chars() {
        ascii.push(match c {
            '\0'..='\u{7e}' => c,
            c if is_py_space(c) => ' ',
            c => char::from(b'0' + unicode_decimal(c)?),
        });
    }
    let mut digits = String::with_capacity(ascii.len());
    let mut previous = '\0';
    for c in ascii.chars() {
        if c == '_' {
            if !previous.is_ascii_digit() {
                return None;
            }
        } else {
            if previous == '_' && !c.is_ascii_digit() {
                return None;
            }
            digits.push(c);
        }
        previous = c;
    }
    if previous == '_' {
        return None;
    }
    digits.trim_matches([' ', '\t', '\n', '\u{b}', '\u{c}', '\r']).parse().ok()
}

/// The first code point of each run of ten Unicode decimal digits (Nd), as of Python 3.11's Unicode 14.
const DECIMAL_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6, 0xE50,
    0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40,
    0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10, 0x104A0, 0x10D30, 0x11066,
    0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950,
    0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6,
    0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
];

/// Python's `unicodedata.decimal(c)`.
fn unicode_decimal(c: char) -> Option<u8> {
    let code = u32::from(c);
    let run = DECIMAL_ZEROS.partition_point(|&zero| zero <= code).checked_sub(1)?;
    let digit = code - DECIMAL_ZEROS[run];
    u8::try_from(digit).ok().filter(|&digit| digit < 10)
}


#[cfg(test)]
mod tests {
    use super::*;

    /// A test value: header text, a JSON value (its text), raw header bytes, or a protocol integer.
    #[derive(Clone, Copy, Debug)]
    enum V {
        T(&'static str),
        J(&'static str),
        B(&'static [u8]),
        I(i64),
    }

    impl V {
        fn with<R>(self, f: impl FnOnce(Val) -> R) -> R {
            match self {
                V::T(s) => f(Val::Text(s)),
                V::J(j) => f(Val::Json(&serde_json::from_str(j).expect("test JSON"))),
                V::B(b) => f(Val::Bytes(b)),
                V::I(i) => f(Val::Int(i)),
            }
        }

        /// `isinstance(value, str)`, as the vectors were made
        fn is_str(self) -> bool {
            matches!(self, V::T(_)) || matches!(self, V::J(j) if j.starts_with('"'))
        }
    }

    /// What types.py's `coerce` returned, variant and value exactly. `Plain`: the value unchanged (the
    /// row's `any` column); `Huge`: an int past i128, which Rust keeps as the double it was read as.
    #[derive(Debug)]
    enum E {
        Int(i128),
        Float(u64),
        Huge(u64),
        Bool(bool),
        Str(&'static str),
        Bytes(&'static [u8]),
        Instant(i128),
        Json(&'static str),
        Plain,
    }

    fn is(found: &Coerced, expected: &E) -> bool {
        match (found, expected) {
            (Coerced::Int(a), E::Int(b)) => a == b,
            (Coerced::Float(a), E::Float(b)) => a.to_bits() == *b,
            (Coerced::Float(a), E::Huge(b)) => a.to_bits() == *b && a.fract() == 0.0,
            (Coerced::Bool(a), E::Bool(b)) => a == b,
            (Coerced::Str(a), E::Str(b)) => a == b,
            (Coerced::Bytes(a), E::Bytes(b)) => a == b,
            (Coerced::Instant(a), E::Instant(b)) => a == b,
            (Coerced::Json(a), E::Json(b)) => *a == serde_json::from_str::<Value>(b).expect("test JSON"),
            _ => false,
        }
    }

    const KINDS: [Kind; 14] = [
        Kind::String, Kind::Symbol, Kind::Integer, Kind::Number, Kind::Boolean, Kind::Binary, Kind::Timestamp,
        Kind::Duration, Kind::Uri, Kind::UriReference, Kind::UriTemplate, Kind::Any, Kind::Map, Kind::Array,
    ];

    /// One kind of each of coerce's behaviours (the columns of COERCE) ...
    const COERCE_KINDS: [Kind; 7] =
        [Kind::Integer, Kind::Boolean, Kind::Timestamp, Kind::Binary, Kind::Any, Kind::String, Kind::Duration];
    /// ... and the kinds that behave as one of them
    const ALIKE: [(Kind, Kind); 7] = [
        (Kind::Number, Kind::Integer), (Kind::Map, Kind::Any), (Kind::Array, Kind::Any), (Kind::Symbol, Kind::String),
        (Kind::Uri, Kind::String), (Kind::UriReference, Kind::String), (Kind::UriTemplate, Kind::String),
    ];

    #[test]
    fn uri_reference_percents_and_bytes() {
        for (text, accepted) in [("", true), ("%41", true), ("a/%4F%4f?x#y", true), ("%", false), ("%%", false),
                                 ("%%%", false), ("ab%4", false), ("%g1", false), ("a b", false), ("aé", false),
                                 ("abcdefgh%41ijklmnop", true), ("abcdefghijklmnop{", false)] {
            assert_eq!(is_uri_reference(text), accepted, "{text:?}");
        }
    }

    #[test]
    fn is_type_as_python() {
        for &(value, text, accepted) in IS_TYPE {
            for (kind, bit) in KINDS.iter().zip(accepted.bytes()) {
                let found = value.with(|v| is_type(*kind, v, text));
                assert_eq!(found, bit == b'1', "{kind:?} of {value:?} (text {text})");
            }
        }
    }

    #[test]
    fn coerce_as_python() {
        for (value, row) in COERCE {
            for (kind, expected) in COERCE_KINDS.iter().zip(row) {
                let expected = if matches!(expected, E::Plain) { &row[4] } else { expected };
                let found = value.with(|v| coerce(v, *kind, value.is_str()));
                assert!(is(&found, expected), "{value:?} as {kind:?}: {found:?}, Python {expected:?}");
            }
            for (kind, like) in ALIKE {
                let text = value.is_str();
                let (found, wanted) = value.with(|v| (coerce(v, kind, text), coerce(v, like, text)));
                assert_eq!(format!("{found:?}"), format!("{wanted:?}"), "{value:?} as {kind:?}");
            }
        }
    }

    #[test]
    fn same_as_python_eq() {
        let coerced: Vec<Coerced> = SAME_INPUTS
            .iter()
            .map(|&(value, kind)| value.with(|v| coerce(v, Kind::from_name(kind), value.is_str())))
            .collect();
        for (a, row) in coerced.iter().zip(SAME) {
            for (b, bit) in coerced.iter().zip(row.bytes()) {
                assert_eq!(a.same(b), bit == b'1', "{a:?} == {b:?}");
            }
        }
    }

    #[test]
    fn timestamps_as_python() {
        for &(text, expected) in TIMESTAMPS {
            assert_eq!(parse_timestamp(text), expected, "{text:?}");
        }
    }

    /// RFC 3339's offsets; years as a datetime holds them (the project's decision).
    #[test]
    fn timestamps_as_rfc_3339() {
        assert_eq!(parse_timestamp("0000-01-01T00:00:00Z"), None);
        assert_eq!(parse_timestamp("0001-01-01T00:00:00Z"), Some(-62_135_596_800_000_000));
        // fromisoformat read `+05:75` as `+06:15`
        for text in ["2020-01-01T00:00:00+05:75", "2020-01-01T00:00:00-00:60", "2020-01-01T00:00:00+23:99"] {
            assert_eq!(parse_timestamp(text), None, "{text}");
        }
        assert_eq!(parse_timestamp("2020-01-01T00:00:00+23:59"), Some(1_577_836_800_000_000 - 86_340_000_000));
    }

    #[test]
    fn instants_compare_across_offsets() {
        let utc = coerce(Val::Text("2020-01-01T00:00:00Z"), Kind::Timestamp, true);
        for text in ["2020-01-01T01:30:00+01:30", "2019-12-31T19:00:00.0000009-05:00", "2020-01-01t00:00:00z"] {
            assert!(coerce(Val::Text(text), Kind::Timestamp, true).same(&utc), "{text}");
        }
        assert!(!coerce(Val::Text("2020-01-01T00:00:00.000001Z"), Kind::Timestamp, true).same(&utc));
        // a timestamp's text is no instant
        assert!(!Coerced::Str("2020-01-01T00:00:00Z".into()).same(&utc));
    }

    #[test]
    fn python_float_as_python() {
        for &(text, expected) in FLOATS {
            let found = python_float(text);
            match (found, expected) {
                (Some(f), Some(repr)) => {
                    let wanted: f64 = repr.parse().expect("a float repr");
                    assert!(f.to_bits() == wanted.to_bits() || f.is_nan() && wanted.is_nan(), "{text:?}: {f}");
                    assert_eq!(crate::pyrepr::repr_float(f), repr, "{text:?}");
                }
                (found, expected) => assert_eq!(found.is_some(), expected.is_some(), "{text:?}: {found:?}"),
            }
        }
    }

    #[test]
    fn float_repr_as_python() {
        for &(bits, repr) in REPRS {
            assert_eq!(crate::pyrepr::repr_float(f64::from_bits(bits)), repr);
        }
        assert_eq!(crate::pyrepr::repr_float(f64::NAN), "nan");
        assert_eq!(crate::pyrepr::repr_float(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn kind_from_name() {
        let names = [
            "string", "symbol", "integer", "number", "boolean", "binary", "timestamp", "duration", "uri",
            "urireference", "uritemplate", "any", "map", "array",
        ];
        for (name, kind) in names.iter().zip(KINDS) {
            assert_eq!(Kind::from_name(name), kind);
        }
        assert_eq!(Kind::from_name("var"), Kind::Any);
        assert_eq!(Kind::from_name("object"), Kind::Map);
        // canonical names only: aliases and other spellings were resolved in Python
        for unknown in ["", "String", "int", "uri-reference", "decimal"] {
            assert_eq!(Kind::from_name(unknown), Kind::String);
        }
    }

    #[test]
    fn literals_coerce_as_values_do() {
        let literal = |text: &str, kind| coerce_literal(&serde_json::from_str(text).expect("test JSON"), kind);
        assert!(literal("1", Kind::Integer).same(&coerce(Val::Text("+001"), Kind::Integer, true)));
        assert!(literal("\"1\"", Kind::Integer).same(&coerce(Val::Text("1.0"), Kind::Number, true)));
        assert!(literal("2.5", Kind::Number).same(&coerce(Val::Text("25e-1"), Kind::Number, true)));
        assert!(literal("true", Kind::Boolean).same(&coerce(Val::Text("true"), Kind::Boolean, true)));
        assert!(!literal("true", Kind::Boolean).same(&coerce(Val::Text("True"), Kind::Boolean, true)));
        assert!(literal("true", Kind::String).same(&coerce(Val::Text("true"), Kind::String, true)));
        assert!(literal("1.5", Kind::String).same(&coerce(Val::Text("1.5"), Kind::String, true)));
        assert!(!literal("1.50", Kind::String).same(&coerce(Val::Text("1.50"), Kind::String, true)));
        assert!(literal("1e16", Kind::Uri).same(&coerce(Val::Text("1e+16"), Kind::Uri, true)));
        assert!(literal("7", Kind::String).same(&coerce(Val::Int(7), Kind::String, false)));
        assert!(literal("\"AQID\"", Kind::Binary).same(&coerce(Val::Bytes(&[1, 2, 3]), Kind::Binary, true)));
        assert!(literal("\"AQID\"", Kind::Binary).same(&coerce(Val::Text("AQID"), Kind::Binary, true)));
        // b64decode ignores padding after a whole quad, as Python's does
        assert!(literal("\"AQID==\"", Kind::Binary).same(&coerce(Val::Text("AQID"), Kind::Binary, true)));
        assert!(literal("{\"a\": [1, true]}", Kind::Map).same(&coerce(
            Val::Json(&serde_json::json!({"a": [1.0, 1]})), Kind::Map, false)));
        // a duration is not string-like in types.py: a number stays a number
        assert!(matches!(literal("5", Kind::Duration), Coerced::Int(5)));
    }

    #[test]
    fn int_and_float_compare_exactly() {
        let two_to_53 = 9_007_199_254_740_992_i128;
        assert!(Coerced::Int(two_to_53).same(&Coerced::Float(9_007_199_254_740_992.0)));
        assert!(!Coerced::Int(two_to_53 + 1).same(&Coerced::Float(9_007_199_254_740_992.0)));
        assert!(Coerced::Int(i128::MIN).same(&Coerced::Float(-TWO_TO_127)));
        assert!(!Coerced::Int(i128::MAX).same(&Coerced::Float(TWO_TO_127)));
        assert!(!Coerced::Float(f64::NAN).same(&Coerced::Float(f64::NAN)));
        assert!(Coerced::Float(0.0).same(&Coerced::Float(-0.0)));
        assert!(Coerced::Bool(true).same(&Coerced::Float(1.0)));
        assert!(Coerced::Bool(false).same(&Coerced::Int(0)));
        assert!(!Coerced::Bool(true).same(&Coerced::Str("true".into())));
        // a scalar JSON value compares as its Python value
        assert!(Coerced::Json(serde_json::json!(1)).same(&Coerced::Float(1.0)));
        assert!(Coerced::Json(serde_json::json!("a")).same(&Coerced::Str("a".into())));
        assert!(Coerced::Json(serde_json::json!(null)).same(&Coerced::Json(serde_json::json!(null))));
        assert!(!Coerced::Bytes(b"a".to_vec()).same(&Coerced::Str("a".into())));
    }

    #[test]
    fn integer_text_range() {
        let long_zeros = format!("-{}2147483648", "0".repeat(5000));
        assert!(is_type(Kind::Integer, Val::Text(&long_zeros), true));
        let long = format!("1{}", "0".repeat(5000));
        assert!(!is_type(Kind::Integer, Val::Text(&long), true));
        assert!(is_type(Kind::Number, Val::Text(&long), true));
        assert!(matches!(coerce(Val::Text(&long), Kind::Integer, true), Coerced::Float(f) if f.is_infinite()));
        // a bool is no integer, 1.0 is no integer either (a JSON float)
        for json in ["true", "1.0", "1e2"] {
            let value: Value = serde_json::from_str(json).expect("test JSON");
            assert!(!is_type(Kind::Integer, Val::Json(&value), false), "{json}");
        }
    }

    #[test]
    fn python_spaces() {
        // Python 3.11: [c for c in range(0x110000) if chr(c).isspace()]
        const SPACES: [u32; 29] = [
            0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002,
            0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
        ];
        let found: Vec<u32> =
            (0..=0x10FFFF).filter_map(char::from_u32).filter(|&c| is_py_space(c)).map(u32::from).collect();
        assert_eq!(found, SPACES);
    }

    #[test]
    fn unicode_decimals() {
        assert_eq!(unicode_decimal('7'), Some(7));
        assert_eq!(unicode_decimal('\u{661}'), Some(1));
        assert_eq!(unicode_decimal('\u{ff19}'), Some(9));
        assert_eq!(unicode_decimal('\u{1d7ff}'), Some(9));
        assert_eq!(unicode_decimal('\u{1fbf9}'), Some(9));
        for c in ['a', '\u{bd}', '\u{2167}', '\u{1d7cd}', '\u{1fbfa}', '\u{10ffff}'] {
            assert_eq!(unicode_decimal(c), None, "{c:?}");
        }
    }

    // generated from gateway/compiler/types.py: for each value and `text`, which KINDS accept it
    const IS_TYPE: &[(V, bool, &str)] = &[
        (V::T("0"), true, "11110000011100"),
        (V::T("0"), false, "11000000011100"),
        (V::T("12"), true, "11110000011100"),
        (V::T("12"), false, "11000000011100"),
        (V::T("-12"), true, "10110000011100"),
        (V::T("-12"), false, "10000000011100"),
        (V::T("+12"), true, "10110000011100"),
        (V::T("+12"), false, "10000000011100"),
        (V::T("007"), true, "11110000011100"),
        (V::T("007"), false, "11000000011100"),
        (V::T("-0"), true, "10110000011100"),
        (V::T("-0"), false, "10000000011100"),
        (V::T("2147483647"), true, "11110000011100"),
        (V::T("2147483647"), false, "11000000011100"),
        (V::T("2147483648"), true, "11010000011100"),
        (V::T("2147483648"), false, "11000000011100"),
        (V::T("-2147483648"), true, "10110000011100"),
        (V::T("-2147483648"), false, "10000000011100"),
        (V::T("-2147483649"), true, "10010000011100"),
        (V::T("-2147483649"), false, "10000000011100"),
        (V::T("00000000002147483647"), true, "11110100011100"),
        (V::T("00000000002147483647"), false, "11000100011100"),
        (V::T("12345678901"), true, "11010000011100"),
        (V::T("12345678901"), false, "11000000011100"),
        (V::T("+-1"), true, "10000000011100"),
        (V::T("+-1"), false, "10000000011100"),
        (V::T("1.0"), true, "10010000011100"),
        (V::T("1.0"), false, "10000000011100"),
        (V::T("1e3"), true, "11010000011100"),
        (V::T("1e3"), false, "11000000011100"),
        (V::T(""), true, "10000100011100"),
        (V::T(""), false, "10000100011100"),
        (V::T("+"), true, "10000000011100"),
        (V::T("+"), false, "10000000011100"),
        (V::T("-"), true, "10000000011100"),
        (V::T("-"), false, "10000000011100"),
        (V::T(" 1"), true, "10000000000100"),
        (V::T(" 1"), false, "10000000000100"),
        (V::T("1 "), true, "10000000000100"),
        (V::T("1 "), false, "10000000000100"),
        (V::T("1\n"), true, "10000000000100"),
        (V::T("1\n"), false, "10000000000100"),
        (V::T("\u{661}\u{662}"), true, "10000000001100"),
        (V::T("\u{661}\u{662}"), false, "10000000001100"),
        (V::T("0x10"), true, "11000100011100"),
        (V::T("0x10"), false, "11000100011100"),
        (V::T("1_000"), true, "11000000011100"),
        (V::T("1_000"), false, "11000000011100"),
        (V::T("1.5"), true, "10010000011100"),
        (V::T("1.5"), false, "10000000011100"),
        (V::T(".5"), true, "10010000011100"),
        (V::T(".5"), false, "10000000011100"),
        (V::T("5."), true, "10010000011100"),
        (V::T("5."), false, "10000000011100"),
        (V::T("-.5e-3"), true, "10010000011100"),
        (V::T("-.5e-3"), false, "10000000011100"),
        (V::T("1E+10"), true, "10010000011100"),
        (V::T("1E+10"), false, "10000000011100"),
        (V::T("e5"), true, "11000000011100"),
        (V::T("e5"), false, "11000000011100"),
        (V::T("1e"), true, "11000000011100"),
        (V::T("1e"), false, "11000000011100"),
        (V::T("1.2.3"), true, "10000000011100"),
        (V::T("1.2.3"), false, "10000000011100"),
        (V::T("nan"), true, "11000000011100"),
        (V::T("nan"), false, "11000000011100"),
        (V::T("inf"), true, "11000000011100"),
        (V::T("inf"), false, "11000000011100"),
        (V::T("+1."), true, "10010000011100"),
        (V::T("+1."), false, "10000000011100"),
        (V::T("."), true, "10000000011100"),
        (V::T("."), false, "10000000011100"),
        (V::T("true"), true, "11001100011100"),
        (V::T("true"), false, "11000100011100"),
        (V::T("false"), true, "11001000011100"),
        (V::T("false"), false, "11000000011100"),
        (V::T("True"), true, "11000100011100"),
        (V::T("True"), false, "11000100011100"),
        (V::T("TRUE"), true, "11000100011100"),
        (V::T("TRUE"), false, "11000100011100"),
        (V::T("1"), true, "11110000011100"),
        (V::T("1"), false, "11000000011100"),
        (V::T("AAAA"), true, "11000100011100"),
        (V::T("AAAA"), false, "11000100011100"),
        (V::T("AB=="), true, "10000100011100"),
        (V::T("AB=="), false, "10000100011100"),
        (V::T("ABC="), true, "10000100011100"),
        (V::T("ABC="), false, "10000100011100"),
        (V::T("AAAA=="), true, "10000000011100"),
        (V::T("AAAA=="), false, "10000000011100"),
        (V::T("AAAA="), true, "10000000011100"),
        (V::T("AAAA="), false, "10000000011100"),
        (V::T("A==="), true, "10000000011100"),
        (V::T("A==="), false, "10000000011100"),
        (V::T("AB="), true, "10000000011100"),
        (V::T("AB="), false, "10000000011100"),
        (V::T("abc"), true, "11000000011100"),
        (V::T("abc"), false, "11000000011100"),
        (V::T("ab+/"), true, "10000100011100"),
        (V::T("ab+/"), false, "10000100011100"),
        (V::T("ab-_"), true, "10000000011100"),
        (V::T("ab-_"), false, "10000000011100"),
        (V::T("AAAAAAAA"), true, "11000100011100"),
        (V::T("AAAAAAAA"), false, "11000100011100"),
        (V::T("AA AA"), true, "10000000000100"),
        (V::T("AA AA"), false, "10000000000100"),
        (V::T("QUJD\n"), true, "10000000000100"),
        (V::T("QUJD\n"), false, "10000000000100"),
        (V::T("===="), true, "10000000011100"),
        (V::T("===="), false, "10000000011100"),
        (V::T("=AAA"), true, "10000000011100"),
        (V::T("=AAA"), false, "10000000011100"),
        (V::T("P"), true, "11000000011100"),
        (V::T("P"), false, "11000000011100"),
        (V::T("PT"), true, "11000000011100"),
        (V::T("PT"), false, "11000000011100"),
        (V::T("P1Y"), true, "11000001011100"),
        (V::T("P1Y"), false, "11000001011100"),
        (V::T("P1Y2M3W4DT5H6M7S"), true, "11000101011100"),
        (V::T("P1Y2M3W4DT5H6M7S"), false, "11000101011100"),
        (V::T("P1.5D"), true, "10000001011100"),
        (V::T("P1.5D"), false, "10000001011100"),
        (V::T("P1,5D"), true, "10000001011100"),
        (V::T("P1,5D"), false, "10000001011100"),
        (V::T("PT1H"), true, "11000101011100"),
        (V::T("PT1H"), false, "11000101011100"),
        (V::T("P1DT"), true, "11000100011100"),
        (V::T("P1DT"), false, "11000100011100"),
        (V::T("PT1.5S"), true, "10000001011100"),
        (V::T("PT1.5S"), false, "10000001011100"),
        (V::T("P1H"), true, "11000000011100"),
        (V::T("P1H"), false, "11000000011100"),
        (V::T("1Y"), true, "11000000011100"),
        (V::T("1Y"), false, "11000000011100"),
        (V::T("P1Y\n"), true, "10000000000100"),
        (V::T("P1Y\n"), false, "10000000000100"),
        (V::T("p1y"), true, "11000000011100"),
        (V::T("p1y"), false, "11000000011100"),
        (V::T("PT1H2M"), true, "11000001011100"),
        (V::T("PT1H2M"), false, "11000001011100"),
        (V::T("P1M1Y"), true, "11000000011100"),
        (V::T("P1M1Y"), false, "11000000011100"),
        (V::T("P\n"), true, "10000000000100"),
        (V::T("P\n"), false, "10000000000100"),
        (V::T("PT\n"), true, "10000000000100"),
        (V::T("PT\n"), false, "10000000000100"),
        (V::T("abc_123"), true, "11000000011100"),
        (V::T("abc_123"), false, "11000000011100"),
        (V::T("a-b"), true, "10000000011100"),
        (V::T("a-b"), false, "10000000011100"),
        (V::T("_"), true, "11000000011100"),
        (V::T("_"), false, "11000000011100"),
        (V::T("\u{e9}"), true, "10000000001100"),
        (V::T("\u{e9}"), false, "10000000001100"),
        (V::T("http://example.com/a?b#c"), true, "10000000111100"),
        (V::T("http://example.com/a?b#c"), false, "10000000111100"),
        (V::T("a:"), true, "10000000111100"),
        (V::T("a:"), false, "10000000111100"),
        (V::T("1a:b"), true, "10000000011100"),
        (V::T("1a:b"), false, "10000000011100"),
        (V::T(":b"), true, "10000000011100"),
        (V::T(":b"), false, "10000000011100"),
        (V::T("urn:isbn:1"), true, "10000000111100"),
        (V::T("urn:isbn:1"), false, "10000000111100"),
        (V::T("http://a b"), true, "10000000000100"),
        (V::T("http://a b"), false, "10000000000100"),
        (V::T("http://a/%41"), true, "10000000111100"),
        (V::T("http://a/%41"), false, "10000000111100"),
        (V::T("http://a/%4"), true, "10000000001100"),
        (V::T("http://a/%4"), false, "10000000001100"),
        (V::T("http://a/%zz"), true, "10000000001100"),
        (V::T("http://a/%zz"), false, "10000000001100"),
        (V::T("http://a/%4g"), true, "10000000001100"),
        (V::T("http://a/%4g"), false, "10000000001100"),
        (V::T("mailto:x@y"), true, "10000000111100"),
        (V::T("mailto:x@y"), false, "10000000111100"),
        (V::T("a+b.c-d:x"), true, "10000000111100"),
        (V::T("a+b.c-d:x"), false, "10000000111100"),
        (V::T("a_b:x"), true, "10000000011100"),
        (V::T("a_b:x"), false, "10000000011100"),
        (V::T("http://ex.com/{id}"), true, "10000000001100"),
        (V::T("http://ex.com/{id}"), false, "10000000001100"),
        (V::T("http://\u{e9}"), true, "10000000001100"),
        (V::T("http://\u{e9}"), false, "10000000001100"),
        (V::T("/a/b"), true, "10000100011100"),
        (V::T("/a/b"), false, "10000100011100"),
        (V::T("%"), true, "10000000001100"),
        (V::T("%"), false, "10000000001100"),
        (V::T("%%41"), true, "10000000001100"),
        (V::T("%%41"), false, "10000000001100"),
        (V::T("[::1]"), true, "10000000011100"),
        (V::T("[::1]"), false, "10000000011100"),
        (V::T("a|b"), true, "10000000001100"),
        (V::T("a|b"), false, "10000000001100"),
        (V::T("a^b"), true, "10000000001100"),
        (V::T("a^b"), false, "10000000001100"),
        (V::T("/a/{id}"), true, "10000000001100"),
        (V::T("/a/{id}"), false, "10000000001100"),
        (V::T("/a/{id,x*}"), true, "10000000001100"),
        (V::T("/a/{id,x*}"), false, "10000000001100"),
        (V::T("{}"), true, "10000000000100"),
        (V::T("{}"), false, "10000000000100"),
        (V::T("/a/{ id}"), true, "10000000000100"),
        (V::T("/a/{ id}"), false, "10000000000100"),
        (V::T("/a/{id"), true, "10000000000100"),
        (V::T("/a/{id"), false, "10000000000100"),
        (V::T("/a/}"), true, "10000000000100"),
        (V::T("/a/}"), false, "10000000000100"),
        (V::T("a\u{1c}b"), true, "10000000000100"),
        (V::T("a\u{1c}b"), false, "10000000000100"),
        (V::T("a\u{1f}b"), true, "10000000000100"),
        (V::T("a\u{1f}b"), false, "10000000000100"),
        (V::T("a\tb"), true, "10000000000100"),
        (V::T("a\tb"), false, "10000000000100"),
        (V::T("a\u{a0}b"), true, "10000000000100"),
        (V::T("a\u{a0}b"), false, "10000000000100"),
        (V::T("a\u{2003}b"), true, "10000000000100"),
        (V::T("a\u{2003}b"), false, "10000000000100"),
        (V::T("a\u{200b}b"), true, "10000000001100"),
        (V::T("a\u{200b}b"), false, "10000000001100"),
        (V::T("a\u{180e}b"), true, "10000000001100"),
        (V::T("a\u{180e}b"), false, "10000000001100"),
        (V::T("{a}{b}"), true, "10000000001100"),
        (V::T("{a}{b}"), false, "10000000001100"),
        (V::T("{a:3}"), true, "10000000001100"),
        (V::T("{a:3}"), false, "10000000001100"),
        (V::T("/x/{a-b}"), true, "10000000000100"),
        (V::T("/x/{a-b}"), false, "10000000000100"),
        (V::T("a b"), true, "10000000000100"),
        (V::T("a b"), false, "10000000000100"),
        (V::T("x"), true, "11000000011100"),
        (V::T("x"), false, "11000000011100"),
        (V::T("a\nb"), true, "10000000000100"),
        (V::T("a\nb"), false, "10000000000100"),
        (V::T("\u{a0}"), true, "10000000000100"),
        (V::T("\u{a0}"), false, "10000000000100"),
        (V::T("\u{85}"), true, "10000000000100"),
        (V::T("\u{85}"), false, "10000000000100"),
        (V::T("2020-01-01T00:00:00Z"), true, "10000010011100"),
        (V::T("2020-01-01T00:00:00Z"), false, "10000010011100"),
        (V::T("2020-02-30T00:00:00Z"), true, "10000000011100"),
        (V::T("2020-02-30T00:00:00Z"), false, "10000000011100"),
        (V::T("0000-01-01T00:00:00Z"), true, "10000000011100"),
        (V::T("0000-01-01T00:00:00Z"), false, "10000000011100"),
        (V::T("2020-01-01T00:00:00+05:75"), true, "10000000011100"), // not Python's: an offset's minutes stop at 59
        (V::T("2020-01-01T00:00:00+05:75"), false, "10000000011100"), // not Python's: an offset's minutes stop at 59
        (V::T("2020-01-01t10:00:00.1234567z"), true, "10000010011100"),
        (V::T("2020-01-01t10:00:00.1234567z"), false, "10000010011100"),
        (V::T("2020-01-01T00:00:00"), true, "10000000011100"),
        (V::T("2020-01-01T00:00:00"), false, "10000000011100"),
        (V::J("1"), false, "00110000000100"),
        (V::J("1.0"), false, "00010000000100"),
        (V::J("-0.0"), false, "00010000000100"),
        (V::J("1e2"), false, "00010000000100"),
        (V::J("1.5"), false, "00010000000100"),
        (V::J("true"), false, "00001000000100"),
        (V::J("false"), false, "00001000000100"),
        (V::J("null"), false, "00000000000100"),
        (V::J("\"12\""), false, "11000000011100"),
        (V::J("\"12\""), true, "11110000011100"),
        (V::J("\"abc\""), false, "11000000011100"),
        (V::J("\"abc\""), true, "11000000011100"),
        (V::J("{}"), false, "00000000000110"),
        (V::J("{\"a\":1}"), false, "00000000000110"),
        (V::J("[]"), false, "00000000000101"),
        (V::J("[1]"), false, "00000000000101"),
        (V::J("2147483647"), false, "00110000000100"),
        (V::J("2147483648"), false, "00010000000100"),
        (V::J("-2147483648"), false, "00110000000100"),
        (V::J("-2147483649"), false, "00010000000100"),
        (V::J("18446744073709551615"), false, "00010000000100"),
        (V::J("-9223372036854775808"), false, "00010000000100"),
        (V::J("1e300"), false, "00010000000100"),
        (V::J("\"AAAA\""), false, "11000100011100"),
        (V::J("\"AAAA\""), true, "11000100011100"),
        (V::J("\"2020-01-01T00:00:00Z\""), false, "10000010011100"),
        (V::J("\"2020-01-01T00:00:00Z\""), true, "10000010011100"),
        (V::J("\"P1D\""), false, "11000001011100"),
        (V::J("\"P1D\""), true, "11000001011100"),
        (V::J("\"http://a\""), false, "10000000111100"),
        (V::J("\"http://a\""), true, "10000000111100"),
        (V::J("\"true\""), false, "11000100011100"),
        (V::J("\"true\""), true, "11001100011100"),
        (V::J("\"1.5\""), false, "10000000011100"),
        (V::J("\"1.5\""), true, "10010000011100"),
        (V::J("\"a b\""), false, "10000000000100"),
        (V::J("\"a b\""), true, "10000000000100"),
        (V::J("0"), false, "00110000000100"),
        (V::J("-1"), false, "00110000000100"),
        (V::J("12.5e-1"), false, "00010000000100"),
        (V::J("\"{a}\""), false, "10000000001100"),
        (V::J("\"{a}\""), true, "10000000001100"),
        (V::B(b"\xff\xfe"), true, "00000100000100"),
        (V::B(b"\xff\xfe"), false, "00000100000100"),
        (V::B(b"AAAA"), true, "00000100000100"),
        (V::B(b"AAAA"), false, "00000100000100"),
        (V::B(b""), true, "00000100000100"),
        (V::B(b""), false, "00000100000100"),
        (V::B(b"12"), true, "00000100000100"),
        (V::B(b"12"), false, "00000100000100"),
        (V::I(0), false, "00110000000100"),
        (V::I(5), false, "00110000000100"),
        (V::I(-5), false, "00110000000100"),
        (V::I(2147483647), false, "00110000000100"),
        (V::I(2147483648), false, "00010000000100"),
        (V::I(-2147483649), false, "00010000000100"),
    ];
    // generated from types.py `coerce(value, kind, text)`, one kind of each behaviour
    const COERCE: &[(V, [E; 7])] = &[
        (V::T("0"), [E::Int(0), E::Plain, E::Plain, E::Plain, E::Str("0"), E::Plain, E::Plain]),
        (V::T("12"), [E::Int(12), E::Plain, E::Plain, E::Plain, E::Str("12"), E::Plain, E::Plain]),
        (V::T("-12"), [E::Int(-12), E::Plain, E::Plain, E::Plain, E::Str("-12"), E::Plain, E::Plain]),
        (V::T("+12"), [E::Int(12), E::Plain, E::Plain, E::Plain, E::Str("+12"), E::Plain, E::Plain]),
        (V::T("007"), [E::Int(7), E::Plain, E::Plain, E::Plain, E::Str("007"), E::Plain, E::Plain]),
        (V::T("-0"), [E::Int(0), E::Plain, E::Plain, E::Plain, E::Str("-0"), E::Plain, E::Plain]),
        (V::T("2147483647"), [E::Int(2147483647), E::Plain, E::Plain, E::Plain, E::Str("2147483647"), E::Plain,
            E::Plain]),
        (V::T("2147483648"), [E::Int(2147483648), E::Plain, E::Plain, E::Plain, E::Str("2147483648"), E::Plain,
            E::Plain]),
        (V::T("-2147483648"), [E::Int(-2147483648), E::Plain, E::Plain, E::Plain, E::Str("-2147483648"), E::Plain,
            E::Plain]),
        (V::T("-2147483649"), [E::Int(-2147483649), E::Plain, E::Plain, E::Plain, E::Str("-2147483649"), E::Plain,
            E::Plain]),
        (V::T("00000000002147483647"), [E::Int(2147483647), E::Plain, E::Plain,
            E::Bytes(b"\xd3M4\xd3M4\xd3M\xb5\xe3\xbe<\xdf\xae;"), E::Str("00000000002147483647"), E::Plain,
            E::Plain]),
        (V::T("12345678901"), [E::Int(12345678901), E::Plain, E::Plain, E::Plain, E::Str("12345678901"), E::Plain,
            E::Plain]),
        (V::T("+-1"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("+-1"), E::Plain, E::Plain]),
        (V::T("1.0"), [E::Int(1), E::Plain, E::Plain, E::Plain, E::Str("1.0"), E::Plain, E::Plain]),
        (V::T("1e3"), [E::Int(1000), E::Plain, E::Plain, E::Plain, E::Str("1e3"), E::Plain, E::Plain]),
        (V::T(""), [E::Plain, E::Plain, E::Plain, E::Bytes(b""), E::Str(""), E::Plain, E::Plain]),
        (V::T("+"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("+"), E::Plain, E::Plain]),
        (V::T("-"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("-"), E::Plain, E::Plain]),
        (V::T(" 1"), [E::Int(1), E::Plain, E::Plain, E::Plain, E::Str(" 1"), E::Plain, E::Plain]),
        (V::T("1 "), [E::Int(1), E::Plain, E::Plain, E::Plain, E::Str("1 "), E::Plain, E::Plain]),
        (V::T("1\n"), [E::Int(1), E::Plain, E::Plain, E::Plain, E::Str("1\n"), E::Plain, E::Plain]),
        (V::T("\u{661}\u{662}"), [E::Int(12), E::Plain, E::Plain, E::Plain, E::Str("\u{661}\u{662}"), E::Plain,
            E::Plain]),
        (V::T("0x10"), [E::Plain, E::Plain, E::Plain, E::Bytes(b"\xd3\x1dt"), E::Str("0x10"), E::Plain, E::Plain]),
        (V::T("1_000"), [E::Int(1000), E::Plain, E::Plain, E::Plain, E::Str("1_000"), E::Plain, E::Plain]),
        (V::T("1.5"), [E::Float(0x3ff8000000000000), E::Plain, E::Plain, E::Plain, E::Str("1.5"), E::Plain,
            E::Plain]),
        (V::T(".5"), [E::Float(0x3fe0000000000000), E::Plain, E::Plain, E::Plain, E::Str(".5"), E::Plain, E::Plain]),
        (V::T("5."), [E::Int(5), E::Plain, E::Plain, E::Plain, E::Str("5."), E::Plain, E::Plain]),
        (V::T("-.5e-3"), [E::Float(0xbf40624dd2f1a9fc), E::Plain, E::Plain, E::Plain, E::Str("-.5e-3"), E::Plain,
            E::Plain]),
        (V::T("1E+10"), [E::Int(10000000000), E::Plain, E::Plain, E::Plain, E::Str("1E+10"), E::Plain, E::Plain]),
        (V::T("e5"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("e5"), E::Plain, E::Plain]),
        (V::T("1e"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("1e"), E::Plain, E::Plain]),
        (V::T("1.2.3"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("1.2.3"), E::Plain, E::Plain]),
        (V::T("nan"), [E::Float(0x7ff8000000000000), E::Plain, E::Plain, E::Plain, E::Str("nan"), E::Plain,
            E::Plain]),
        (V::T("inf"), [E::Float(0x7ff0000000000000), E::Plain, E::Plain, E::Plain, E::Str("inf"), E::Plain,
            E::Plain]),
        (V::T("+1."), [E::Int(1), E::Plain, E::Plain, E::Plain, E::Str("+1."), E::Plain, E::Plain]),
        (V::T("."), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("."), E::Plain, E::Plain]),
        (V::T("true"), [E::Plain, E::Bool(true), E::Plain, E::Bytes(b"\xb6\xbb\x9e"), E::Str("true"), E::Plain,
            E::Plain]),
        (V::T("false"), [E::Plain, E::Bool(false), E::Plain, E::Plain, E::Str("false"), E::Plain, E::Plain]),
        (V::T("True"), [E::Plain, E::Plain, E::Plain, E::Bytes(b"N\xbb\x9e"), E::Str("True"), E::Plain, E::Plain]),
        (V::T("TRUE"), [E::Plain, E::Plain, E::Plain, E::Bytes(b"M\x15\x04"), E::Str("TRUE"), E::Plain, E::Plain]),
        (V::T("1"), [E::Int(1), E::Plain, E::Plain, E::Plain, E::Str("1"), E::Plain, E::Plain]),
        (V::T("AAAA"), [E::Plain, E::Plain, E::Plain, E::Bytes(b"\x00\x00\x00"), E::Str("AAAA"), E::Plain, E::Plain]),
        (V::T("AB=="), [E::Plain, E::Plain, E::Plain, E::Bytes(b"\x00"), E::Str("AB=="), E::Plain, E::Plain]),
        (V::T("ABC="), [E::Plain, E::Plain, E::Plain, E::Bytes(b"\x00\x10"), E::Str("ABC="), E::Plain, E::Plain]),
        (V::T("AAAA=="), [E::Plain, E::Plain, E::Plain, E::Bytes(b"\x00\x00\x00"), E::Str("AAAA=="), E::Plain,
            E::Plain]),
        (V::T("AAAA="), [E::Plain, E::Plain, E::Plain, E::Bytes(b"\x00\x00\x00"), E::Str("AAAA="), E::Plain,
            E::Plain]),
        (V::T("A==="), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("A==="), E::Plain, E::Plain]),
        (V::T("AB="), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("AB="), E::Plain, E::Plain]),
        (V::T("abc"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("abc"), E::Plain, E::Plain]),
        (V::T("ab+/"), [E::Plain, E::Plain, E::Plain, E::Bytes(b"i\xbf\xbf"), E::Str("ab+/"), E::Plain, E::Plain]),
        (V::T("ab-_"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("ab-_"), E::Plain, E::Plain]),
        (V::T("AAAAAAAA"), [E::Plain, E::Plain, E::Plain, E::Bytes(b"\x00\x00\x00\x00\x00\x00"), E::Str("AAAAAAAA"),
            E::Plain, E::Plain]),
        (V::T("AA AA"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("AA AA"), E::Plain, E::Plain]),
        (V::T("QUJD\n"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("QUJD\n"), E::Plain, E::Plain]),
        (V::T("===="), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("===="), E::Plain, E::Plain]),
        (V::T("=AAA"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("=AAA"), E::Plain, E::Plain]),
        (V::T("P1Y"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("P1Y"), E::Plain, E::Plain]),
        (V::T("P1Y2M3W4DT5H6M7S"), [E::Plain, E::Plain, E::Plain, E::Bytes(b"?V63u\xb8\x0d>G\xe8\xce\xd2"),
            E::Str("P1Y2M3W4DT5H6M7S"), E::Plain, E::Plain]),
        (V::T("P1.5D"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("P1.5D"), E::Plain, E::Plain]),
        (V::T("P1,5D"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("P1,5D"), E::Plain, E::Plain]),
        (V::T("PT1H"), [E::Plain, E::Plain, E::Plain, E::Bytes(b"==G"), E::Str("PT1H"), E::Plain, E::Plain]),
        (V::T("P1DT"), [E::Plain, E::Plain, E::Plain, E::Bytes(b"?P\xd3"), E::Str("P1DT"), E::Plain, E::Plain]),
        (V::T("PT1.5S"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("PT1.5S"), E::Plain, E::Plain]),
        (V::T("P1H"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("P1H"), E::Plain, E::Plain]),
        (V::T("1Y"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("1Y"), E::Plain, E::Plain]),
        (V::T("P1Y\n"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("P1Y\n"), E::Plain, E::Plain]),
        (V::T("PT1H2M"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("PT1H2M"), E::Plain, E::Plain]),
        (V::T("abc_123"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("abc_123"), E::Plain, E::Plain]),
        (V::T("a-b"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a-b"), E::Plain, E::Plain]),
        (V::T("_"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("_"), E::Plain, E::Plain]),
        (V::T("\u{e9}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("\u{e9}"), E::Plain, E::Plain]),
        (V::T("http://example.com/a?b#c"), [E::Plain, E::Plain, E::Plain, E::Plain,
            E::Str("http://example.com/a?b#c"), E::Plain, E::Plain]),
        (V::T("a:"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a:"), E::Plain, E::Plain]),
        (V::T("1a:b"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("1a:b"), E::Plain, E::Plain]),
        (V::T(":b"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str(":b"), E::Plain, E::Plain]),
        (V::T("urn:isbn:1"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("urn:isbn:1"), E::Plain, E::Plain]),
        (V::T("http://a b"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("http://a b"), E::Plain, E::Plain]),
        (V::T("http://a/%41"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("http://a/%41"), E::Plain, E::Plain]),
        (V::T("http://a/%4"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("http://a/%4"), E::Plain, E::Plain]),
        (V::T("http://a/%zz"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("http://a/%zz"), E::Plain, E::Plain]),
        (V::T("http://a/%4g"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("http://a/%4g"), E::Plain, E::Plain]),
        (V::T("mailto:x@y"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("mailto:x@y"), E::Plain, E::Plain]),
        (V::T("a+b.c-d:x"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a+b.c-d:x"), E::Plain, E::Plain]),
        (V::T("a_b:x"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a_b:x"), E::Plain, E::Plain]),
        (V::T("http://ex.com/{id}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("http://ex.com/{id}"), E::Plain,
            E::Plain]),
        (V::T("http://\u{e9}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("http://\u{e9}"), E::Plain,
            E::Plain]),
        (V::T("/a/b"), [E::Plain, E::Plain, E::Plain, E::Bytes(b"\xfd\xaf\xdb"), E::Str("/a/b"), E::Plain, E::Plain]),
        (V::T("%"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("%"), E::Plain, E::Plain]),
        (V::T("%%41"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("%%41"), E::Plain, E::Plain]),
        (V::T("[::1]"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("[::1]"), E::Plain, E::Plain]),
        (V::T("a|b"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a|b"), E::Plain, E::Plain]),
        (V::T("a^b"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a^b"), E::Plain, E::Plain]),
        (V::T("/a/{id}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("/a/{id}"), E::Plain, E::Plain]),
        (V::T("/a/{id,x*}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("/a/{id,x*}"), E::Plain, E::Plain]),
        (V::T("{}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("{}"), E::Plain, E::Plain]),
        (V::T("/a/{ id}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("/a/{ id}"), E::Plain, E::Plain]),
        (V::T("/a/{id"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("/a/{id"), E::Plain, E::Plain]),
        (V::T("/a/}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("/a/}"), E::Plain, E::Plain]),
        (V::T("a\u{1c}b"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a\u{1c}b"), E::Plain, E::Plain]),
        (V::T("a\u{1f}b"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a\u{1f}b"), E::Plain, E::Plain]),
        (V::T("a\tb"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a\tb"), E::Plain, E::Plain]),
        (V::T("a\u{a0}b"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a\u{a0}b"), E::Plain, E::Plain]),
        (V::T("a\u{2003}b"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a\u{2003}b"), E::Plain, E::Plain]),
        (V::T("a\u{200b}b"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a\u{200b}b"), E::Plain, E::Plain]),
        (V::T("a\u{180e}b"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a\u{180e}b"), E::Plain, E::Plain]),
        (V::T("{a}{b}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("{a}{b}"), E::Plain, E::Plain]),
        (V::T("{a:3}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("{a:3}"), E::Plain, E::Plain]),
        (V::T("/x/{a-b}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("/x/{a-b}"), E::Plain, E::Plain]),
        (V::T("a b"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a b"), E::Plain, E::Plain]),
        (V::T("x"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("x"), E::Plain, E::Plain]),
        (V::T("a\nb"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a\nb"), E::Plain, E::Plain]),
        (V::T("\u{a0}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("\u{a0}"), E::Plain, E::Plain]),
        (V::T("\u{85}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("\u{85}"), E::Plain, E::Plain]),
        (V::T("2020-01-01T00:00:00Z"), [E::Plain, E::Plain, E::Instant(1577836800000000), E::Plain,
            E::Str("2020-01-01T00:00:00Z"), E::Plain, E::Plain]),
        (V::T("2020-02-30T00:00:00Z"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("2020-02-30T00:00:00Z"),
            E::Plain, E::Plain]),
        (V::T("0000-01-01T00:00:00Z"), [E::Plain, E::Plain, E::Plain, E::Plain,
            E::Str("0000-01-01T00:00:00Z"), E::Plain, E::Plain]),
        (V::T("2020-01-01T00:00:00+05:75"), [E::Plain, E::Plain, E::Plain, E::Plain,
            E::Str("2020-01-01T00:00:00+05:75"), E::Plain, E::Plain]),
        (V::T("2020-01-01t10:00:00.1234567z"), [E::Plain, E::Plain, E::Instant(1577872800123456), E::Plain,
            E::Str("2020-01-01t10:00:00.1234567z"), E::Plain, E::Plain]),
        (V::T("2020-01-01T00:00:00"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("2020-01-01T00:00:00"),
            E::Plain, E::Plain]),
        (V::J("1"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(1), E::Str("1"), E::Plain]),
        (V::J("1.0"), [E::Int(1), E::Plain, E::Plain, E::Plain, E::Float(0x3ff0000000000000), E::Str("1.0"),
            E::Plain]),
        (V::J("-0.0"), [E::Int(0), E::Plain, E::Plain, E::Plain, E::Float(0x8000000000000000), E::Str("-0.0"),
            E::Plain]),
        (V::J("1e2"), [E::Int(100), E::Plain, E::Plain, E::Plain, E::Float(0x4059000000000000), E::Str("100.0"),
            E::Plain]),
        (V::J("1.5"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Float(0x3ff8000000000000), E::Str("1.5"),
            E::Plain]),
        (V::J("true"), [E::Plain, E::Plain, E::Str("true"), E::Str("true"), E::Bool(true), E::Str("true"),
            E::Str("true")]),
        (V::J("false"), [E::Plain, E::Plain, E::Str("false"), E::Str("false"), E::Bool(false), E::Str("false"),
            E::Str("false")]),
        (V::J("null"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Json("null"), E::Plain, E::Plain]),
        (V::J("\"12\""), [E::Int(12), E::Plain, E::Plain, E::Plain, E::Str("12"), E::Plain, E::Plain]),
        (V::J("\"abc\""), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("abc"), E::Plain, E::Plain]),
        (V::J("{}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Json("{}"), E::Plain, E::Plain]),
        (V::J("{\"a\":1}"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Json("{\"a\":1}"), E::Plain, E::Plain]),
        (V::J("[]"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Json("[]"), E::Plain, E::Plain]),
        (V::J("[1]"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Json("[1]"), E::Plain, E::Plain]),
        (V::J("2147483647"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(2147483647), E::Str("2147483647"),
            E::Plain]),
        (V::J("2147483648"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(2147483648), E::Str("2147483648"),
            E::Plain]),
        (V::J("-2147483648"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(-2147483648), E::Str("-2147483648"),
            E::Plain]),
        (V::J("-2147483649"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(-2147483649), E::Str("-2147483649"),
            E::Plain]),
        (V::J("18446744073709551615"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(18446744073709551615),
            E::Str("18446744073709551615"), E::Plain]),
        (V::J("-9223372036854775808"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(-9223372036854775808),
            E::Str("-9223372036854775808"), E::Plain]),
        (V::J("1e300"), [E::Huge(0x7e37e43c8800759c), E::Plain, E::Plain, E::Plain, E::Float(0x7e37e43c8800759c),
            E::Str("1e+300"), E::Plain]),
        (V::J("\"AAAA\""), [E::Plain, E::Plain, E::Plain, E::Bytes(b"\x00\x00\x00"), E::Str("AAAA"), E::Plain,
            E::Plain]),
        (V::J("\"2020-01-01T00:00:00Z\""), [E::Plain, E::Plain, E::Instant(1577836800000000), E::Plain,
            E::Str("2020-01-01T00:00:00Z"), E::Plain, E::Plain]),
        (V::J("\"P1D\""), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("P1D"), E::Plain, E::Plain]),
        (V::J("\"http://a\""), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("http://a"), E::Plain, E::Plain]),
        (V::J("\"true\""), [E::Plain, E::Bool(true), E::Plain, E::Bytes(b"\xb6\xbb\x9e"), E::Str("true"), E::Plain,
            E::Plain]),
        (V::J("\"1.5\""), [E::Float(0x3ff8000000000000), E::Plain, E::Plain, E::Plain, E::Str("1.5"), E::Plain,
            E::Plain]),
        (V::J("\"a b\""), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("a b"), E::Plain, E::Plain]),
        (V::J("0"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(0), E::Str("0"), E::Plain]),
        (V::J("-1"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(-1), E::Str("-1"), E::Plain]),
        (V::J("12.5e-1"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Float(0x3ff4000000000000), E::Str("1.25"),
            E::Plain]),
        (V::J("\"{a}\""), [E::Plain, E::Plain, E::Plain, E::Plain, E::Str("{a}"), E::Plain, E::Plain]),
        (V::B(b"\xff\xfe"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Bytes(b"\xff\xfe"), E::Plain, E::Plain]),
        (V::B(b"AAAA"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Bytes(b"AAAA"), E::Plain, E::Plain]),
        (V::B(b""), [E::Plain, E::Plain, E::Plain, E::Plain, E::Bytes(b""), E::Plain, E::Plain]),
        (V::B(b"12"), [E::Plain, E::Plain, E::Plain, E::Plain, E::Bytes(b"12"), E::Plain, E::Plain]),
        (V::I(0), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(0), E::Str("0"), E::Plain]),
        (V::I(5), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(5), E::Str("5"), E::Plain]),
        (V::I(-5), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(-5), E::Str("-5"), E::Plain]),
        (V::I(2147483647), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(2147483647), E::Str("2147483647"),
            E::Plain]),
        (V::I(2147483648), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(2147483648), E::Str("2147483648"),
            E::Plain]),
        (V::I(-2147483649), [E::Plain, E::Plain, E::Plain, E::Plain, E::Int(-2147483649), E::Str("-2147483649"),
            E::Plain]),
    ];
    // generated: the values `coerce` gives for these, and Python's `==` between each two of them
    const SAME_INPUTS: &[(V, &str)] = &[
        (V::T("1"), "integer"),
        (V::T("1.0"), "number"),
        (V::J("1"), "any"),
        (V::J("1.0"), "any"),
        (V::J("true"), "any"),
        (V::T("true"), "boolean"),
        (V::J("1"), "string"),
        (V::T("1"), "string"),
        (V::J("1.0"), "string"),
        (V::T("1.0"), "string"),
        (V::T("9007199254740993"), "integer"),
        (V::J("9007199254740993"), "integer"),
        (V::J("9007199254740992.0"), "any"),
        (V::T("2020-01-01T01:00:00+01:00"), "timestamp"),
        (V::T("2020-01-01T00:00:00Z"), "timestamp"),
        (V::T("2020-01-01t00:00:00.0000001z"), "timestamp"),
        (V::T("2020-01-01T00:00:00Z"), "string"),
        (V::T("QUJD"), "binary"),
        (V::B(b"ABC"), "binary"),
        (V::T("ABC"), "string"),
        (V::J("null"), "any"),
        (V::J("{\"a\":[1,true,null,\"x\"]}"), "any"),
        (V::J("{\"a\":[1.0,1,null,\"x\"]}"), "map"),
        (V::J("{\"a\":[1,true,null]}"), "any"),
        (V::J("[1,{\"b\":2}]"), "array"),
        (V::J("[1.0,{\"b\":2.0}]"), "any"),
        (V::J("[{\"b\":2},1]"), "any"),
        (V::J("false"), "any"),
        (V::T("0"), "integer"),
        (V::T("-0.0"), "number"),
        (V::T("nan"), "number"),
        (V::T("inf"), "number"),
        (V::T("1e400"), "number"),
        (V::J("1e300"), "integer"),
        (V::T("1e300"), "integer"),
        (V::T("abc"), "integer"),
        (V::J("\"abc\""), "string"),
        (V::I(1), "integer"),
        (V::I(1), "string"),
        (V::J("0.1"), "string"),
        (V::T("0.1"), "string"),
    ];
    const SAME: &[&str] = &[
        "11111100000000000000000000000000000001000",
        "11111100000000000000000000000000000001000",
        "11111100000000000000000000000000000001000",
        "11111100000000000000000000000000000001000",
        "11111100000000000000000000000000000001000",
        "11111100000000000000000000000000000001000",
        "00000011000000000000000000000000000000100",
        "00000011000000000000000000000000000000100",
        "00000000110000000000000000000000000000000",
        "00000000110000000000000000000000000000000",
        "00000000001010000000000000000000000000000",
        "00000000000100000000000000000000000000000",
        "00000000001010000000000000000000000000000",
        "00000000000001110000000000000000000000000",
        "00000000000001110000000000000000000000000",
        "00000000000001110000000000000000000000000",
        "00000000000000001000000000000000000000000",
        "00000000000000000110000000000000000000000",
        "00000000000000000110000000000000000000000",
        "00000000000000000001000000000000000000000",
        "00000000000000000000100000000000000000000",
        "00000000000000000000011000000000000000000",
        "00000000000000000000011000000000000000000",
        "00000000000000000000000100000000000000000",
        "00000000000000000000000011000000000000000",
        "00000000000000000000000011000000000000000",
        "00000000000000000000000000100000000000000",
        "00000000000000000000000000011100000000000",
        "00000000000000000000000000011100000000000",
        "00000000000000000000000000011100000000000",
        "00000000000000000000000000000000000000000",
        "00000000000000000000000000000001100000000",
        "00000000000000000000000000000001100000000",
        "00000000000000000000000000000000011000000",
        "00000000000000000000000000000000011000000",
        "00000000000000000000000000000000000110000",
        "00000000000000000000000000000000000110000",
        "11111100000000000000000000000000000001000",
        "00000011000000000000000000000000000000100",
        "00000000000000000000000000000000000000011",
        "00000000000000000000000000000000000000011",
    ];
    // generated from types.py `parse_timestamp`: microseconds since the epoch, or None
    const TIMESTAMPS: &[(&str, Option<i128>)] = &[
        ("2020-01-01T00:00:00Z", Some(1577836800000000)),
        ("2020-01-01T00:00:00.123456Z", Some(1577836800123456)),
        ("2020-01-01T00:00:00.1234567Z", Some(1577836800123456)),
        ("2020-01-01T00:00:00.123456789+01:00", Some(1577833200123456)),
        ("2020-01-01t00:00:00z", Some(1577836800000000)),
        ("2020-01-01T00:00:00z", Some(1577836800000000)),
        ("2020-01-01t00:00:00Z", Some(1577836800000000)),
        ("2020-02-29T12:00:00Z", Some(1582977600000000)),
        ("2019-02-29T12:00:00Z", None),
        ("1900-02-29T00:00:00Z", None),
        ("2000-02-29T00:00:00Z", Some(951782400000000)),
        ("2020-04-31T00:00:00Z", None),
        ("2020-04-30T00:00:00Z", Some(1588204800000000)),
        ("2020-13-01T00:00:00Z", None),
        ("2020-00-01T00:00:00Z", None),
        ("2020-01-00T00:00:00Z", None),
        ("2020-01-32T00:00:00Z", None),
        ("2020-12-31T00:00:00Z", Some(1609372800000000)),
        ("2020-01-01T24:00:00Z", None),
        ("2020-01-01T23:60:00Z", None),
        ("2020-01-01T23:59:60Z", None),
        ("2020-01-01T23:59:59-23:59", Some(1578009539000000)),
        ("2020-01-01T00:00:00+23:59", Some(1577750460000000)),
        ("2020-01-01T00:00:00+24:00", None),
        ("2020-01-01T00:00:00+0100", None),
        ("2020-01-01T00:00:00", None),
        ("2020-01-01 00:00:00Z", None),
        ("2020-01-01T00:00Z", None),
        ("2020-01-01T00:00:00.Z", None),
        ("2020-01-01T00:00:00,5Z", None),
        ("20200101T000000Z", None),
        ("2020-1-01T00:00:00Z", None),
        ("9999-12-31T23:59:59.999999Z", Some(253402300799999999)),
        ("9999-12-31T23:59:59.9999999-01:00", Some(253402304399999999)),
        ("0001-01-01T00:00:00Z", Some(-62135596800000000)),
        ("0001-01-01T00:00:00+01:00", Some(-62135600400000000)),
        ("1969-12-31T23:59:59.999999Z", Some(-1)),
        ("1970-01-01T00:00:00-00:00", Some(0)),
        ("2020-01-01T00:00:00Z\n", None),
        (" 2020-01-01T00:00:00Z", None),
        ("\u{ff12}020-01-01T00:00:00Z", None),
        ("2020-01-01T00:00:00+01:00:00", None),
        ("2020-01-01T00:00:00+1:00", None),
        ("2020-06-15T13:45:30.5-07:30", Some(1592255730500000)),
        ("2020-01-01T00:00:00.000000000000001Z", Some(1577836800000000)),
        ("2020-01-01T00:00:00.9999999Z", Some(1577836800999999)),
        ("1600-02-29T00:00:00Z", Some(-11670998400000000)),
        ("2100-02-29T00:00:00Z", None),
        ("2024-02-29T23:59:59+00:00", Some(1709251199000000)),
        ("2020-01-01T00:00:00+00:59", Some(1577833260000000)),
        ("2020-01-01T00:00:00-23:00", Some(1577919600000000)),
        ("2020-01-01T00:00:00Zz", None),
        ("2020-01-01T00:00:00.5", None),
        ("2020-01-01T00:00:00.\u{665}Z", None),
        ("2020-01-01T00:00:00+01:0a", None),
        ("1970-01-01T00:00:00.000001Z", Some(1)),
        ("2020-01-01", None),
    ];
    // generated from Python's `float(text)`: its repr, or None where it raises
    const FLOATS: &[(&str, Option<&str>)] = &[
        ("1", Some("1.0")),
        ("1.5", Some("1.5")),
        (" 1 ", Some("1.0")),
        ("\t1\n", Some("1.0")),
        ("\u{b}1\u{c}", Some("1.0")),
        ("\u{1c}1", None),
        ("1\u{1f}", None),
        ("\u{2003}1\u{2003}", Some("1.0")),
        ("\u{a0}1", Some("1.0")),
        ("\u{85}1", Some("1.0")),
        ("\u{661}\u{662}", Some("12.0")),
        ("\u{ff11}\u{ff12}.5", Some("12.5")),
        ("\u{1d7ce}\u{1d7cf}", Some("1.0")),
        ("1_0", Some("10.0")),
        ("1__0", None),
        ("_1", None),
        ("1_", None),
        ("1_.5", None),
        ("1._5", None),
        ("1.5e1_0", Some("15000000000.0")),
        ("1e_10", None),
        ("1_e10", None),
        ("1e", None),
        ("e1", None),
        (".", None),
        ("+", None),
        ("-", None),
        ("", None),
        (" ", None),
        ("+.5", Some("0.5")),
        ("-5.", Some("-5.0")),
        ("1.e5", Some("100000.0")),
        (".e5", None),
        ("1e+5", Some("100000.0")),
        ("1E-5", Some("1e-05")),
        ("0x10", None),
        ("1e500", Some("inf")),
        ("-1e500", Some("-inf")),
        ("1e-500", Some("0.0")),
        ("nan", Some("nan")),
        ("-nan", Some("nan")),
        ("+nan", Some("nan")),
        ("NaN", Some("nan")),
        ("inf", Some("inf")),
        ("-inf", Some("-inf")),
        ("+Infinity", Some("inf")),
        ("INFINITY", Some("inf")),
        ("infin", None),
        ("in", None),
        ("1\0", None),
        ("\u{bd}", None),
        ("\u{2167}", None),
        ("9007199254740993", Some("9007199254740992.0")),
        ("123456789012345678901234567890", Some("1.2345678901234568e+29")),
        ("0.1", Some("0.1")),
        ("2.5e-324", Some("5e-324")),
        ("1.7976931348623157e308", Some("1.7976931348623157e+308")),
        ("1.8e308", Some("inf")),
        ("00012", Some("12.0")),
        ("1 2", None),
        ("- 1", None),
        ("1,5", None),
        ("\u{665}.\u{665}", Some("5.5")),
        ("\u{7f}1", None),
        ("1\u{a0}", Some("1.0")),
        ("\u{3000}-1\u{3000}", Some("-1.0")),
    ];
    // generated from Python's `repr(float)`
    const REPRS: &[(u64, &str)] = &[
        (0x0000000000000000, "0.0"), (0x8000000000000000, "-0.0"),
        (0x3ff0000000000000, "1.0"), (0x4059000000000000, "100.0"),
        (0x430c6bf526340000, "1000000000000000.0"), (0x4341c37937e08000, "1e+16"),
        (0x434aa535d3d0c000, "1.5e+16"), (0x437b69b4ba630f35, "1.2345678901234568e+17"),
        (0x3f1a36e2eb1c432d, "0.0001"), (0x3ee4f8b588e368f1, "1e-05"),
        (0x3eef75104d551d69, "1.5e-05"), (0x0000000000000001, "5e-324"),
        (0x7fefffffffffffff, "1.7976931348623157e+308"), (0x3fb999999999999a, "0.1"),
        (0x3fd3333333333334, "0.30000000000000004"), (0x4004000000000000, "2.5"),
        (0x4480f0cf064dd592, "1e+22"), (0x4341c37937e07fff, "9999999999999998.0"),
        (0x42a674e780df0000, "12345678000000.0"), (0xc029800000000000, "-12.75"),
        (0x3e7ad7f29abcaf48, "1e-07"), (0x3f201f31f46ed246, "0.000123"),
        (0x430c6bf52633ffff, "999999999999999.9"), (0x4341c37937e08000, "1e+16"),
        (0x4340000000000000, "9007199254740992.0"), (0x43e0000000000000, "9.223372036854776e+18"),
        (0x3fd5555555555555, "0.3333333333333333"), (0x81a56e1fc2f8f359, "-1e-300"),
        (0x40c81c8000000000, "12345.0"), (0xf2a74de452e6b438, "-1.989032661366619e+244"),
        (0x6513270e269e0d37, "7.761117632285041e+178"), (0x0c5c7fd0a6a3a450, "3.980498358697587e-249"),
        (0xd23f0824128b2f33, "-1.5432835417340557e+88"), (0x1818e811892f902b, "1.3647584518757569e-192"),
        (0x9531985d5d9dc9f8, "-1.3701135617873088e-206"), (0xe8e25d940ed90475, "-1.7160537630466207e+197"),
        (0x36f675cc81e74ef5, "6.294675241195386e-44"), (0x1600a35a099950d8, "1.0613447212142254e-202"),
        (0x6b0d549b6f03675a, "4.708325160387546e+207"), (0x3d9c172411e20b8f, "6.387016158513563e-12"),
        (0x8d116ece1738f7d9, "-9.973130378568733e-246"), (0x0f21ddb66cad4a26, "8.779753225680271e-236"),
        (0x90c192cfd3ac94af, "-5.795503248498993e-228"), (0xf28c105d1fb17c23, "-5.988180159386011e+243"),
        (0xa170b33839263059, "-1.306052388527796e-147"), (0x953f48f1a09f76b5, "-2.436117699484841e-206"),
        (0x0fd630f1f29d0da9, "2.233386999150174e-232"), (0x95e60af593bd04cf, "-3.51527970626667e-203"),
        (0x0cb1e29c658cda14, "1.5987381841032883e-247"), (0x3898d190f9ebdacc, "4.6678633181812096e-36"),
        (0x8e81973e0becd7b0, "-8.441872792105456e-239"), (0x2217beaddbc496cb, "1.9015657400796622e-144"),
        (0x6b4cb2424a23d596, "7.370437700706684e+208"), (0x8a6a63ec24ede6a4, "-1.7163996725272777e-258"),
        (0x922766581e27a1c0, "-3.2367190832119987e-221"), (0x8f6d05584ef8aa38, "-2.2818334634712625e-234"),
        (0xae97ba94d0eda82f, "-3.0536383926309363e-84"), (0x1a61dbe22e44158b, "1.3449551894627777e-181"),
        (0x923a736994e3bf91, "-7.317495976062606e-221"), (0x301850c5a38fd547, "5.249822308814304e-77"),
        (0x18f135d25f557203, "1.5450754142984396e-188"), (0xb64ce4228c38fb29, "-3.953625698224792e-47"),
        (0x907a70c31012f037, "-2.72491267476498e-229"), (0x9e7769b10f4205b4, "-6.505141861548772e-162"),
        (0x7f15052434b9b5df, "1.441484839555994e+304"), (0x881ed162ae2eb154, "-1.4583679262758548e-269"),
        (0xc6f877186d76b07e, "-7.939416668807721e+33"), (0x7731af10506bf2ef, "1.4255183989699612e+266"),
        (0xec66a78795e761d1, "-1.525315701232403e+214"), (0x5c90a9587403e430, "7.750545741548908e+137"),
        (0x3f98e2774cbd87ad, "0.024301399287089676"), (0x2e05319acb5c7427, "5.326960081783017e-87"),
        (0xc7a2ea20b2f14c94, "-1.2570882301712172e+37"), (0x14f4733f3e7d1bfb, "9.952684009002448e-208"),
        (0x4cdd2055930d6eaf, "1.8721667527122837e+62"), (0x7ebff20686734721, "3.422978398947072e+302"),
        (0x57ee05cde00902c7, "3.6967297937384553e+115"), (0x72e6cc3ababced20, "3.113284956169447e+245"),
        (0x9be4bcfc49b64a08, "-2.6202582260546103e-174"), (0x12bd4acefaecbd38, "2.0745096302730225e-218"),
        (0x830e07bc1e398f10, "-5.877500503097409e-294"), (0x2a3af4d46b0a18e8, "2.938345597354166e-105"),
        (0x5790f82ec1d3fcff, "6.529598674765832e+113"), (0xeeeacbe226e87555, "-1.9837344250050814e+226"),
        (0x6bf46c697d2caf82, "1.0743030475716402e+212"), (0xf646e1f40a097c97, "-5.629271400715247e+261"),
        (0x13deef86ab1031d0, "5.743310614918485e-213"), (0x8ede0d7ac3baea9e, "-4.61515470702556e-237"),
        (0xca02135e92b1d3f2, "-3.302201168194502e+48"), (0x4052c61db19d2cb3, "75.09556236600001"),
        (0x4395aea0cea82a6a, "3.905907325473e+17"), (0x3cfabddd098bd935, "5.9378399999999995e-15"),
        (0x451d6d30d6678521, "8.893621902159e+24"), (0x4570f91138074eb7, "3.28304e+26"),
        (0x3fa4a1fe10c34f99, "0.04029840426088"), (0x3c1ff7f7789ea384, "4.332555888e-19"),
        (0x3e0e47f8b8758e64, "8.812971332900001e-10"), (0x3c799388c00d9695, "2.218390869662e-17"),
        (0xbd98c96594d16b37, "-5.635844504e-12"), (0x411d18db09691a76, "476726.75919"),
        (0x3d02c5905c2a249a, "8.336324523601e-15"), (0xc337b4c3105df300, "-6672674350560000.0"),
        (0xc1852fd970000000, "-44432174.0"), (0x454e1babc39569e5, "7.279689394e+25"),
        (0xc4c1efc8f5f3382b, "-1.6940696558e+23"), (0x3dd51f0889bb2fd2, "7.68385654e-11"),
        (0xbee17daaf1283b54, "-8.3403061e-06"), (0x42527428eb100000, "317033000000.0"),
        (0x3f45b2d4031a0c56, "0.00066218712"), (0xc150a32a66666666, "-4361385.6"),
        (0x3d68575a92707732, "6.918192460000001e-13"), (0x440085cf1304b83b, "3.8098731427196e+19"),
        (0x41e71780ba000000, "3099330000.0"), (0x412862b40a4ca199, "799066.0201159"),
        (0xbd16f3e2c0337388, "-2.03860738889e-14"), (0xbc510acd1c15731c, "-3.695436367e-18"),
        (0xc1c270ec7e800000, "-618780925.0"), (0xc3d76eb34ec1c133, "-6.753936244599999e+18"),
        (0xc373dea0add42e80, "-8.94849e+16"), (0xc0bb3eb374bc6a7f, "-6974.701"),
        (0x3e8e87f6dcb7d859, "2.274745e-07"), (0x4428bc19d82a9658, "2.2813798e+20"),
        (0xc3d130c94a01fce4, "-4.9548448689e+18"), (0xbd531e07096f2fd1, "-2.716731e-13"),
        (0x42303fa6fdd0eb85, "69787385296.92"), (0xbd8c7039f6e62bc1, "-3.23307e-12"),
        (0xc5b9b540fa294a0c, "-7.956247665e+27"), (0xc2c5652e3363c000, "-47048622000000.0"),
        (0xc0c2a10af4417b1f, "-9538.085579094999"), (0xbc2a137d42e0ecdb, "-7.067949222018199e-19"),
        (0x44717e1107836d3a, "5.162859191e+21"), (0x42d085a8f7ec7800, "72665006060000.0"),
        (0xc070a99b52007dd4, "-266.60042"), (0x42feea6f4dccedc0, "543875816804060.0"),
        (0x443e4154425ae7db, "5.5810978267999994e+20"), (0xbf0d0a8b21836f83, "-5.53916654e-05"),
        (0x3e71172279253075, "6.36665887e-08"), (0x453d2e4a508b9a64, "3.5277448490000003e+25"),
        (0xc65db9bd0f8507d4, "-9.4204e+30"), (0xbe67af4c0a22bd7d, "-4.411629219e-08"),
        (0x41b6f34dab666666, "385043883.4"), (0x40b81b509a671ef3, "6171.314856"),
        (0xbee197eff4263edc, "-8.389236999999999e-06"), (0xbe70102d0988dba1, "-5.984003549e-08"),
        (0xc1e9d92a24000000, "-3469300000.0"), (0x447bba797c2bde54, "8.183983959699999e+21"),
        (0xc0f44644cccccccd, "-83044.3"), (0x422a4aa010400001, "56460576800.00001"),
        (0x46588ccfcdf8b59a, "7.78022008814e+30"),
    ];
}
