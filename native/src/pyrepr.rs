//! Python's own text forms, so that violation messages read exactly as the Python judge writes them:
//! `repr` of a str, of a float, and the `actual` preview of gateway/verdict.py's `truncate`.

use std::fmt::Write;

use serde_json::Value;

/// A violation's `actual` as gateway/verdict.py `truncate` leaves it: scalars as they are (strings cut at
/// 120 characters plus "..."), containers as their cut JSON preview text.
#[derive(Clone, Debug, PartialEq)]
pub enum Actual {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
}

pub const ACTUAL_LIMIT: usize = 120;

/// Python `repr(text)`.
pub fn repr_str(text: &str) -> String {
    // single quotes unless only single quotes appear (unicode_repr)
    let quote = if text.contains('\'') && !text.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            c if is_printable(c) => out.push(c),
            c if (c as u32) <= 0xff => write!(out, "\\x{:02x}", c as u32).unwrap(),
            c if (c as u32) <= 0xffff => write!(out, "\\u{:04x}", c as u32).unwrap(),
            c => write!(out, "\\U{:08x}", c as u32).unwrap(),
        }
    }
    out.push(quote);
    out
}

/// Python `str.isprintable` of one character: false for the categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs
/// except the ASCII space.
pub fn is_printable(c: char) -> bool {
    let c = c as u32;
    let at = NOT_PRINTABLE.partition_point(|&(_, last)| last < c);
    NOT_PRINTABLE.get(at).is_none_or(|&(first, _)| first > c)
}

/// Python `repr(value)` of a float.
pub fn repr_float(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    shortest(value, -4..16, 2)
}

/// A finite `value` in its shortest digits, laid out by `lay_out_digits`. zmij (serde_json's float
/// writer) gives the shortest digits that read back as the same double, the nearest of them, ties to even:
/// Python's repr's digits and orjson's. Rust's `{:e}` rounds such ties up (268592061126924.125) and, with the
/// check that mended that, cost ~2,600 instructions a float where explaining a payload writes many.
fn shortest(value: f64, positional: std::ops::Range<i32>, width: usize) -> String {
    let mut digits = String::with_capacity(24);
    let exponent = shortest_digits(value.abs(), &mut digits);
    let mut out = String::with_capacity(digits.len() + 8);
    if value.is_sign_negative() {
        out.push('-');
    }
    lay_out_digits(&mut out, &digits, exponent, positional, width);
    out
}

/// The shortest digits of a finite `magnitude` into `digits` (no point, no leading or trailing zero; "0" for
/// zero) and the decimal exponent of the first, read off zmij's text ("0.0001", "123.0", "1.5e-7", "1e16").
fn shortest_digits(magnitude: f64, digits: &mut String) -> i32 {
    let mut buffer = zmij::Buffer::new();
    let text = buffer.format_finite(magnitude);
    let (mantissa, exponent) = match text.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i32>().expect("zmij writes an integer exponent")),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let leading = whole.bytes().chain(fraction.bytes()).take_while(|&b| b == b'0').count();
    digits.extend(whole.chars().chain(fraction.chars()).skip(leading));
    while digits.ends_with('0') {
        digits.pop();
    }
    if digits.is_empty() {
        digits.push('0');
        return 0;
    }
    exponent + whole.len() as i32 - 1 - leading as i32
}

/// Shortest digits (no point) with their decimal exponent, written as Python's repr and orjson write floats:
/// scientific outside `positional` with at least `width` exponent digits (`1e+16`, `1.5e-05`), else
/// positional with at least one fraction digit (`100.0`, `0.0001`).
fn lay_out_digits(out: &mut String, digits: &str, exponent: i32, positional: std::ops::Range<i32>, width: usize) {
    use std::fmt::Write;
    if !positional.contains(&exponent) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let sign = if exponent < 0 { '-' } else { '+' };
        write!(out, "e{sign}{:0width$}", exponent.abs()).expect("a String takes any write");
    } else if exponent < 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
        out.push_str(digits);
    } else {
        let point = exponent as usize + 1;
        if digits.len() > point {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        } else {
            out.push_str(digits);
            out.extend(std::iter::repeat_n('0', point - digits.len()));
            out.push_str(".0");
        }
    }
}

/// orjson's float: the shortest digits that read back (`shortest`), scientific (`1e+16`, `1.5e-6`) from 1e16 up
/// and below 1e-5, otherwise positional with at least one fraction digit. Rust's `{:e}`, used here before,
/// rounds a tie up: 268592061126924.125 became ...13, orjson's ...12.
pub fn orjson_float(value: f64) -> String {
    if value == 0.0 {
        return if value.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    shortest(value, -5..16, 1)
}

/// orjson's string: `"` and `\` escaped, control characters as \b \t \n \f \r or \u00xx, the rest as is.
pub fn orjson_str(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if c < ' ' => write!(out, "\\u{:04x}", c as u32).expect("a String takes any write"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// verdict.py `truncate` of the Python value orjson reads from this JSON value.
pub fn truncate_json(value: &Value) -> Actual {
    match value {
        Value::Null => Actual::Null,
        Value::Bool(flag) => Actual::Bool(*flag),
        Value::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(int), _) => Actual::Int(int.into()),
            (_, Some(int)) => Actual::Int(int.into()),
            // serde_json's numbers are finite, and with neither integer form they are f64
            _ => Actual::Float(number.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(text) => truncate_str(text),
        Value::Array(_) | Value::Object(_) => Actual::Str(json_preview(value)),
    }
}

/// verdict.py `truncate` of a str.
pub fn truncate_str(text: &str) -> Actual {
    match text.char_indices().nth(ACTUAL_LIMIT) {
        Some((cut, _)) => Actual::Str(format!("{}...", &text[..cut])),
        None => Actual::Str(text.to_owned()),
    }
}

/// verdict.py `truncate` of bytes (UTF-8 with replacement, cut at 120 bytes plus "...").
pub fn truncate_bytes(bytes: &[u8]) -> Actual {
    // Python's decoder and from_utf8_lossy both replace each maximal ill-formed subsequence with one U+FFFD
    let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(ACTUAL_LIMIT)]).into_owned();
    if bytes.len() > ACTUAL_LIMIT {
        text.push_str("...");
    }
    Actual::Str(text)
}

/// payload/base.py `one_line(text, limit)`: whitespace runs become one space, cut at `limit` with "...".
pub fn one_line(text: &str, limit: usize) -> String {
    let line = text.split(is_python_space).filter(|word| !word.is_empty()).collect::<Vec<_>>().join(" ");
    let length = line.chars().count();
    if length <= limit {
        return line;
    }
    // `line[:limit - 3]`: a negative end counts from the end of the line
    let keep = if limit >= 3 { limit - 3 } else { length.saturating_sub(3 - limit) };
    let cut = line.char_indices().nth(keep).map_or(line.len(), |(at, _)| at);
    format!("{}...", &line[..cut])
}

/// Python `str.isspace`: Unicode White_Space plus the ASCII separators U+001C..U+001F.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// verdict.py `_json_preview` then `truncate`'s cut: `json.dumps(value)` (", " and ": " separators, ASCII
/// escapes), written without recursion and stopped just past the limit, so any depth or length costs the same.
fn json_preview(value: &Value) -> String {
    enum Open<'a> {
        List(std::slice::Iter<'a, Value>),
        Dict(serde_json::map::Iter<'a>),
    }
    // all ASCII (strings are written with ASCII escapes), so bytes count characters as Python does
    let mut out = String::new();
    let mut stack: Vec<(Open, bool)> = Vec::new();
    let mut pending = Some(value);
    while out.len() <= ACTUAL_LIMIT {
        if let Some(value) = pending.take() {
            match value {
                Value::Array(items) => {
                    out.push('[');
                    stack.push((Open::List(items.iter()), true));
                }
                Value::Object(map) => {
                    out.push('{');
                    stack.push((Open::Dict(map.iter()), true));
                }
                scalar => write_scalar(&mut out, scalar),
            }
            continue;
        }
        let Some((open, first)) = stack.last_mut() else { break };
        let separator = if *first { "" } else { ", " };
        *first = false;
        match open {
            Open::List(items) => match items.next() {
                Some(item) => {
                    out.push_str(separator);
                    pending = Some(item);
                }
                None => {
                    out.push(']');
                    stack.pop();
                }
            },
            Open::Dict(members) => match members.next() {
                Some((name, item)) => {
                    out.push_str(separator);
                    write_string(&mut out, name);
                    out.push_str(": ");
                    pending = Some(item);
                }
                None => {
                    out.push('}');
                    stack.pop();
                }
            },
        }
    }
    if out.len() > ACTUAL_LIMIT {
        out.truncate(ACTUAL_LIMIT);
        out.push_str("...");
    }
    out
}

fn write_scalar(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => match number.as_f64().filter(|_| number.is_f64()) {
            Some(float) => out.push_str(&repr_float(float)),
            None => write!(out, "{number}").unwrap(),
        },
        Value::String(text) => write_string(out, text),
        Value::Array(_) | Value::Object(_) => unreachable!("containers are opened by json_preview"),
    }
}

/// json's `encode_basestring_ascii` of the first 121 characters (verdict.py `_scalar` cuts long strings so).
fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars().take(ACTUAL_LIMIT + 1) {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            c => {
                let mut units = [0; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(out, "\\u{unit:04x}").unwrap();
                }
            }
        }
    }
    out.push('"');
}

/// Code points Python 3.11's `str.isprintable` refuses (Unicode 14.0), as inclusive ranges. Generated with
/// the venv's Python: runs of `not chr(c).isprintable()` over 0..=0x10FFFF.
#[rustfmt::skip]
static NOT_PRINTABLE: &[(u32, u32)] = &[
    (0x0, 0x1f), (0x7f, 0xa0), (0xad, 0xad), (0x378, 0x379), (0x380, 0x383), (0x38b, 0x38b), (0x38d, 0x38d),
    (0x3a2, 0x3a2), (0x530, 0x530), (0x557, 0x558), (0x58b, 0x58c), (0x590, 0x590), (0x5c8, 0x5cf), (0x5eb, 0x5ee),
    (0x5f5, 0x605), (0x61c, 0x61c), (0x6dd, 0x6dd), (0x70e, 0x70f), (0x74b, 0x74c), (0x7b2, 0x7bf), (0x7fb, 0x7fc),
    (0x82e, 0x82f), (0x83f, 0x83f), (0x85c, 0x85d), (0x85f, 0x85f), (0x86b, 0x86f), (0x88f, 0x897), (0x8e2, 0x8e2),
    (0x984, 0x984), (0x98d, 0x98e), (0x991, 0x992), (0x9a9, 0x9a9), (0x9b1, 0x9b1), (0x9b3, 0x9b5), (0x9ba, 0x9bb),
    (0x9c5, 0x9c6), (0x9c9, 0x9ca), (0x9cf, 0x9d6), (0x9d8, 0x9db), (0x9de, 0x9de), (0x9e4, 0x9e5), (0x9ff, 0xa00),
    (0xa04, 0xa04), (0xa0b, 0xa0e), (0xa11, 0xa12), (0xa29, 0xa29), (0xa31, 0xa31), (0xa34, 0xa34), (0xa37, 0xa37),
    (0xa3a, 0xa3b), (0xa3d, 0xa3d), (0xa43, 0xa46), (0xa49, 0xa4a), (0xa4e, 0xa50), (0xa52, 0xa58), (0xa5d, 0xa5d),
    (0xa5f, 0xa65), (0xa77, 0xa80), (0xa84, 0xa84), (0xa8e, 0xa8e), (0xa92, 0xa92), (0xaa9, 0xaa9), (0xab1, 0xab1),
    (0xab4, 0xab4), (0xaba, 0xabb), (0xac6, 0xac6), (0xaca, 0xaca), (0xace, 0xacf), (0xad1, 0xadf), (0xae4, 0xae5),
    (0xaf2, 0xaf8), (0xb00, 0xb00), (0xb04, 0xb04), (0xb0d, 0xb0e), (0xb11, 0xb12), (0xb29, 0xb29), (0xb31, 0xb31),
    (0xb34, 0xb34), (0xb3a, 0xb3b), (0xb45, 0xb46), (0xb49, 0xb4a), (0xb4e, 0xb54), (0xb58, 0xb5b), (0xb5e, 0xb5e),
    (0xb64, 0xb65), (0xb78, 0xb81), (0xb84, 0xb84), (0xb8b, 0xb8d), (0xb91, 0xb91), (0xb96, 0xb98), (0xb9b, 0xb9b),
    (0xb9d, 0xb9d), (0xba0, 0xba2), (0xba5, 0xba7), (0xbab, 0xbad), (0xbba, 0xbbd), (0xbc3, 0xbc5), (0xbc9, 0xbc9),
    (0xbce, 0xbcf), (0xbd1, 0xbd6), (0xbd8, 0xbe5), (0xbfb, 0xbff), (0xc0d, 0xc0d), (0xc11, 0xc11), (0xc29, 0xc29),
    (0xc3a, 0xc3b), (0xc45, 0xc45), (0xc49, 0xc49), (0xc4e, 0xc54), (0xc57, 0xc57), (0xc5b, 0xc5c), (0xc5e, 0xc5f),
    (0xc64, 0xc65), (0xc70, 0xc76), (0xc8d, 0xc8d), (0xc91, 0xc91), (0xca9, 0xca9), (0xcb4, 0xcb4), (0xcba, 0xcbb),
    (0xcc5, 0xcc5), (0xcc9, 0xcc9), (0xcce, 0xcd4), (0xcd7, 0xcdc), (0xcdf, 0xcdf), (0xce4, 0xce5), (0xcf0, 0xcf0),
    (0xcf3, 0xcff), (0xd0d, 0xd0d), (0xd11, 0xd11), (0xd45, 0xd45), (0xd49, 0xd49), (0xd50, 0xd53), (0xd64, 0xd65),
    (0xd80, 0xd80), (0xd84, 0xd84), (0xd97, 0xd99), (0xdb2, 0xdb2), (0xdbc, 0xdbc), (0xdbe, 0xdbf), (0xdc7, 0xdc9),
    (0xdcb, 0xdce), (0xdd5, 0xdd5), (0xdd7, 0xdd7), (0xde0, 0xde5), (0xdf0, 0xdf1), (0xdf5, 0xe00), (0xe3b, 0xe3e),
    (0xe5c, 0xe80), (0xe83, 0xe83), (0xe85, 0xe85), (0xe8b, 0xe8b), (0xea4, 0xea4), (0xea6, 0xea6), (0xebe, 0xebf),
    (0xec5, 0xec5), (0xec7, 0xec7), (0xece, 0xecf), (0xeda, 0xedb), (0xee0, 0xeff), (0xf48, 0xf48), (0xf6d, 0xf70),
    (0xf98, 0xf98), (0xfbd, 0xfbd), (0xfcd, 0xfcd), (0xfdb, 0xfff), (0x10c6, 0x10c6), (0x10c8, 0x10cc),
    (0x10ce, 0x10cf), (0x1249, 0x1249), (0x124e, 0x124f), (0x1257, 0x1257), (0x1259, 0x1259), (0x125e, 0x125f),
    (0x1289, 0x1289), (0x128e, 0x128f), (0x12b1, 0x12b1), (0x12b6, 0x12b7), (0x12bf, 0x12bf), (0x12c1, 0x12c1),
    (0x12c6, 0x12c7), (0x12d7, 0x12d7), (0x1311, 0x1311), (0x1316, 0x1317), (0x135b, 0x135c), (0x137d, 0x137f),
    (0x139a, 0x139f), (0x13f6, 0x13f7), (0x13fe, 0x13ff), (0x1680, 0x1680), (0x169d, 0x169f), (0x16f9, 0x16ff),
    (0x1716, 0x171e), (0x1737, 0x173f), (0x1754, 0x175f), (0x176d, 0x176d), (0x1771, 0x1771), (0x1774, 0x177f),
    (0x17de, 0x17df), (0x17ea, 0x17ef), (0x17fa, 0x17ff), (0x180e, 0x180e), (0x181a, 0x181f), (0x1879, 0x187f),
    (0x18ab, 0x18af), (0x18f6, 0x18ff), (0x191f, 0x191f), (0x192c, 0x192f), (0x193c, 0x193f), (0x1941, 0x1943),
    (0x196e, 0x196f), (0x1975, 0x197f), (0x19ac, 0x19af), (0x19ca, 0x19cf), (0x19db, 0x19dd), (0x1a1c, 0x1a1d),
    (0x1a5f, 0x1a5f), (0x1a7d, 0x1a7e), (0x1a8a, 0x1a8f), (0x1a9a, 0x1a9f), (0x1aae, 0x1aaf), (0x1acf, 0x1aff),
    (0x1b4d, 0x1b4f), (0x1b7f, 0x1b7f), (0x1bf4, 0x1bfb), (0x1c38, 0x1c3a), (0x1c4a, 0x1c4c), (0x1c89, 0x1c8f),
    (0x1cbb, 0x1cbc), (0x1cc8, 0x1ccf), (0x1cfb, 0x1cff), (0x1f16, 0x1f17), (0x1f1e, 0x1f1f), (0x1f46, 0x1f47),
    (0x1f4e, 0x1f4f), (0x1f58, 0x1f58), (0x1f5a, 0x1f5a), (0x1f5c, 0x1f5c), (0x1f5e, 0x1f5e), (0x1f7e, 0x1f7f),
    (0x1fb5, 0x1fb5), (0x1fc5, 0x1fc5), (0x1fd4, 0x1fd5), (0x1fdc, 0x1fdc), (0x1ff0, 0x1ff1), (0x1ff5, 0x1ff5),
    (0x1fff, 0x200f), (0x2028, 0x202f), (0x205f, 0x206f), (0x2072, 0x2073), (0x208f, 0x208f), (0x209d, 0x209f),
    (0x20c1, 0x20cf), (0x20f1, 0x20ff), (0x218c, 0x218f), (0x2427, 0x243f), (0x244b, 0x245f), (0x2b74, 0x2b75),
    (0x2b96, 0x2b96), (0x2cf4, 0x2cf8), (0x2d26, 0x2d26), (0x2d28, 0x2d2c), (0x2d2e, 0x2d2f), (0x2d68, 0x2d6e),
    (0x2d71, 0x2d7e), (0x2d97, 0x2d9f), (0x2da7, 0x2da7), (0x2daf, 0x2daf), (0x2db7, 0x2db7), (0x2dbf, 0x2dbf),
    (0x2dc7, 0x2dc7), (0x2dcf, 0x2dcf), (0x2dd7, 0x2dd7), (0x2ddf, 0x2ddf), (0x2e5e, 0x2e7f), (0x2e9a, 0x2e9a),
    (0x2ef4, 0x2eff), (0x2fd6, 0x2fef), (0x2ffc, 0x3000), (0x3040, 0x3040), (0x3097, 0x3098), (0x3100, 0x3104),
    (0x3130, 0x3130), (0x318f, 0x318f), (0x31e4, 0x31ef), (0x321f, 0x321f), (0xa48d, 0xa48f), (0xa4c7, 0xa4cf),
    (0xa62c, 0xa63f), (0xa6f8, 0xa6ff), (0xa7cb, 0xa7cf), (0xa7d2, 0xa7d2), (0xa7d4, 0xa7d4), (0xa7da, 0xa7f1),
    (0xa82d, 0xa82f), (0xa83a, 0xa83f), (0xa878, 0xa87f), (0xa8c6, 0xa8cd), (0xa8da, 0xa8df), (0xa954, 0xa95e),
    (0xa97d, 0xa97f), (0xa9ce, 0xa9ce), (0xa9da, 0xa9dd), (0xa9ff, 0xa9ff), (0xaa37, 0xaa3f), (0xaa4e, 0xaa4f),
    (0xaa5a, 0xaa5b), (0xaac3, 0xaada), (0xaaf7, 0xab00), (0xab07, 0xab08), (0xab0f, 0xab10), (0xab17, 0xab1f),
    (0xab27, 0xab27), (0xab2f, 0xab2f), (0xab6c, 0xab6f), (0xabee, 0xabef), (0xabfa, 0xabff), (0xd7a4, 0xd7af),
    (0xd7c7, 0xd7ca), (0xd7fc, 0xf8ff), (0xfa6e, 0xfa6f), (0xfada, 0xfaff), (0xfb07, 0xfb12), (0xfb18, 0xfb1c),
    (0xfb37, 0xfb37), (0xfb3d, 0xfb3d), (0xfb3f, 0xfb3f), (0xfb42, 0xfb42), (0xfb45, 0xfb45), (0xfbc3, 0xfbd2),
    (0xfd90, 0xfd91), (0xfdc8, 0xfdce), (0xfdd0, 0xfdef), (0xfe1a, 0xfe1f), (0xfe53, 0xfe53), (0xfe67, 0xfe67),
    (0xfe6c, 0xfe6f), (0xfe75, 0xfe75), (0xfefd, 0xff00), (0xffbf, 0xffc1), (0xffc8, 0xffc9), (0xffd0, 0xffd1),
    (0xffd8, 0xffd9), (0xffdd, 0xffdf), (0xffe7, 0xffe7), (0xffef, 0xfffb), (0xfffe, 0xffff), (0x1000c, 0x1000c),
    (0x10027, 0x10027), (0x1003b, 0x1003b), (0x1003e, 0x1003e), (0x1004e, 0x1004f), (0x1005e, 0x1007f),
    (0x100fb, 0x100ff), (0x10103, 0x10106), (0x10134, 0x10136), (0x1018f, 0x1018f), (0x1019d, 0x1019f),
    (0x101a1, 0x101cf), (0x101fe, 0x1027f), (0x1029d, 0x1029f), (0x102d1, 0x102df), (0x102fc, 0x102ff),
    (0x10324, 0x1032c), (0x1034b, 0x1034f), (0x1037b, 0x1037f), (0x1039e, 0x1039e), (0x103c4, 0x103c7),
    (0x103d6, 0x103ff), (0x1049e, 0x1049f), (0x104aa, 0x104af), (0x104d4, 0x104d7), (0x104fc, 0x104ff),
    (0x10528, 0x1052f), (0x10564, 0x1056e), (0x1057b, 0x1057b), (0x1058b, 0x1058b), (0x10593, 0x10593),
    (0x10596, 0x10596), (0x105a2, 0x105a2), (0x105b2, 0x105b2), (0x105ba, 0x105ba), (0x105bd, 0x105ff),
    (0x10737, 0x1073f), (0x10756, 0x1075f), (0x10768, 0x1077f), (0x10786, 0x10786), (0x107b1, 0x107b1),
    (0x107bb, 0x107ff), (0x10806, 0x10807), (0x10809, 0x10809), (0x10836, 0x10836), (0x10839, 0x1083b),
    (0x1083d, 0x1083e), (0x10856, 0x10856), (0x1089f, 0x108a6), (0x108b0, 0x108df), (0x108f3, 0x108f3),
    (0x108f6, 0x108fa), (0x1091c, 0x1091e), (0x1093a, 0x1093e), (0x10940, 0x1097f), (0x109b8, 0x109bb),
    (0x109d0, 0x109d1), (0x10a04, 0x10a04), (0x10a07, 0x10a0b), (0x10a14, 0x10a14), (0x10a18, 0x10a18),
    (0x10a36, 0x10a37), (0x10a3b, 0x10a3e), (0x10a49, 0x10a4f), (0x10a59, 0x10a5f), (0x10aa0, 0x10abf),
    (0x10ae7, 0x10aea), (0x10af7, 0x10aff), (0x10b36, 0x10b38), (0x10b56, 0x10b57), (0x10b73, 0x10b77),
    (0x10b92, 0x10b98), (0x10b9d, 0x10ba8), (0x10bb0, 0x10bff), (0x10c49, 0x10c7f), (0x10cb3, 0x10cbf),
    (0x10cf3, 0x10cf9), (0x10d28, 0x10d2f), (0x10d3a, 0x10e5f), (0x10e7f, 0x10e7f), (0x10eaa, 0x10eaa),
    (0x10eae, 0x10eaf), (0x10eb2, 0x10eff), (0x10f28, 0x10f2f), (0x10f5a, 0x10f6f), (0x10f8a, 0x10faf),
    (0x10fcc, 0x10fdf), (0x10ff7, 0x10fff), (0x1104e, 0x11051), (0x11076, 0x1107e), (0x110bd, 0x110bd),
    (0x110c3, 0x110cf), (0x110e9, 0x110ef), (0x110fa, 0x110ff), (0x11135, 0x11135), (0x11148, 0x1114f),
    (0x11177, 0x1117f), (0x111e0, 0x111e0), (0x111f5, 0x111ff), (0x11212, 0x11212), (0x1123f, 0x1127f),
    (0x11287, 0x11287), (0x11289, 0x11289), (0x1128e, 0x1128e), (0x1129e, 0x1129e), (0x112aa, 0x112af),
    (0x112eb, 0x112ef), (0x112fa, 0x112ff), (0x11304, 0x11304), (0x1130d, 0x1130e), (0x11311, 0x11312),
    (0x11329, 0x11329), (0x11331, 0x11331), (0x11334, 0x11334), (0x1133a, 0x1133a), (0x11345, 0x11346),
    (0x11349, 0x1134a), (0x1134e, 0x1134f), (0x11351, 0x11356), (0x11358, 0x1135c), (0x11364, 0x11365),
    (0x1136d, 0x1136f), (0x11375, 0x113ff), (0x1145c, 0x1145c), (0x11462, 0x1147f), (0x114c8, 0x114cf),
    (0x114da, 0x1157f), (0x115b6, 0x115b7), (0x115de, 0x115ff), (0x11645, 0x1164f), (0x1165a, 0x1165f),
    (0x1166d, 0x1167f), (0x116ba, 0x116bf), (0x116ca, 0x116ff), (0x1171b, 0x1171c), (0x1172c, 0x1172f),
    (0x11747, 0x117ff), (0x1183c, 0x1189f), (0x118f3, 0x118fe), (0x11907, 0x11908), (0x1190a, 0x1190b),
    (0x11914, 0x11914), (0x11917, 0x11917), (0x11936, 0x11936), (0x11939, 0x1193a), (0x11947, 0x1194f),
    (0x1195a, 0x1199f), (0x119a8, 0x119a9), (0x119d8, 0x119d9), (0x119e5, 0x119ff), (0x11a48, 0x11a4f),
    (0x11aa3, 0x11aaf), (0x11af9, 0x11bff), (0x11c09, 0x11c09), (0x11c37, 0x11c37), (0x11c46, 0x11c4f),
    (0x11c6d, 0x11c6f), (0x11c90, 0x11c91), (0x11ca8, 0x11ca8), (0x11cb7, 0x11cff), (0x11d07, 0x11d07),
    (0x11d0a, 0x11d0a), (0x11d37, 0x11d39), (0x11d3b, 0x11d3b), (0x11d3e, 0x11d3e), (0x11d48, 0x11d4f),
    (0x11d5a, 0x11d5f), (0x11d66, 0x11d66), (0x11d69, 0x11d69), (0x11d8f, 0x11d8f), (0x11d92, 0x11d92),
    (0x11d99, 0x11d9f), (0x11daa, 0x11edf), (0x11ef9, 0x11faf), (0x11fb1, 0x11fbf), (0x11ff2, 0x11ffe),
    (0x1239a, 0x123ff), (0x1246f, 0x1246f), (0x12475, 0x1247f), (0x12544, 0x12f8f), (0x12ff3, 0x12fff),
    (0x1342f, 0x143ff), (0x14647, 0x167ff), (0x16a39, 0x16a3f), (0x16a5f, 0x16a5f), (0x16a6a, 0x16a6d),
    (0x16abf, 0x16abf), (0x16aca, 0x16acf), (0x16aee, 0x16aef), (0x16af6, 0x16aff), (0x16b46, 0x16b4f),
    (0x16b5a, 0x16b5a), (0x16b62, 0x16b62), (0x16b78, 0x16b7c), (0x16b90, 0x16e3f), (0x16e9b, 0x16eff),
    (0x16f4b, 0x16f4e), (0x16f88, 0x16f8e), (0x16fa0, 0x16fdf), (0x16fe5, 0x16fef), (0x16ff2, 0x16fff),
    (0x187f8, 0x187ff), (0x18cd6, 0x18cff), (0x18d09, 0x1afef), (0x1aff4, 0x1aff4), (0x1affc, 0x1affc),
    (0x1afff, 0x1afff), (0x1b123, 0x1b14f), (0x1b153, 0x1b163), (0x1b168, 0x1b16f), (0x1b2fc, 0x1bbff),
    (0x1bc6b, 0x1bc6f), (0x1bc7d, 0x1bc7f), (0x1bc89, 0x1bc8f), (0x1bc9a, 0x1bc9b), (0x1bca0, 0x1ceff),
    (0x1cf2e, 0x1cf2f), (0x1cf47, 0x1cf4f), (0x1cfc4, 0x1cfff), (0x1d0f6, 0x1d0ff), (0x1d127, 0x1d128),
    (0x1d173, 0x1d17a), (0x1d1eb, 0x1d1ff), (0x1d246, 0x1d2df), (0x1d2f4, 0x1d2ff), (0x1d357, 0x1d35f),
    (0x1d379, 0x1d3ff), (0x1d455, 0x1d455), (0x1d49d, 0x1d49d), (0x1d4a0, 0x1d4a1), (0x1d4a3, 0x1d4a4),
    (0x1d4a7, 0x1d4a8), (0x1d4ad, 0x1d4ad), (0x1d4ba, 0x1d4ba), (0x1d4bc, 0x1d4bc), (0x1d4c4, 0x1d4c4),
    (0x1d506, 0x1d506), (0x1d50b, 0x1d50c), (0x1d515, 0x1d515), (0x1d51d, 0x1d51d), (0x1d53a, 0x1d53a),
    (0x1d53f, 0x1d53f), (0x1d545, 0x1d545), (0x1d547, 0x1d549), (0x1d551, 0x1d551), (0x1d6a6, 0x1d6a7),
    (0x1d7cc, 0x1d7cd), (0x1da8c, 0x1da9a), (0x1daa0, 0x1daa0), (0x1dab0, 0x1deff), (0x1df1f, 0x1dfff),
    (0x1e007, 0x1e007), (0x1e019, 0x1e01a), (0x1e022, 0x1e022), (0x1e025, 0x1e025), (0x1e02b, 0x1e0ff),
    (0x1e12d, 0x1e12f), (0x1e13e, 0x1e13f), (0x1e14a, 0x1e14d), (0x1e150, 0x1e28f), (0x1e2af, 0x1e2bf),
    (0x1e2fa, 0x1e2fe), (0x1e300, 0x1e7df), (0x1e7e7, 0x1e7e7), (0x1e7ec, 0x1e7ec), (0x1e7ef, 0x1e7ef),
    (0x1e7ff, 0x1e7ff), (0x1e8c5, 0x1e8c6), (0x1e8d7, 0x1e8ff), (0x1e94c, 0x1e94f), (0x1e95a, 0x1e95d),
    (0x1e960, 0x1ec70), (0x1ecb5, 0x1ed00), (0x1ed3e, 0x1edff), (0x1ee04, 0x1ee04), (0x1ee20, 0x1ee20),
    (0x1ee23, 0x1ee23), (0x1ee25, 0x1ee26), (0x1ee28, 0x1ee28), (0x1ee33, 0x1ee33), (0x1ee38, 0x1ee38),
    (0x1ee3a, 0x1ee3a), (0x1ee3c, 0x1ee41), (0x1ee43, 0x1ee46), (0x1ee48, 0x1ee48), (0x1ee4a, 0x1ee4a),
    (0x1ee4c, 0x1ee4c), (0x1ee50, 0x1ee50), (0x1ee53, 0x1ee53), (0x1ee55, 0x1ee56), (0x1ee58, 0x1ee58),
    (0x1ee5a, 0x1ee5a), (0x1ee5c, 0x1ee5c), (0x1ee5e, 0x1ee5e), (0x1ee60, 0x1ee60), (0x1ee63, 0x1ee63),
    (0x1ee65, 0x1ee66), (0x1ee6b, 0x1ee6b), (0x1ee73, 0x1ee73), (0x1ee78, 0x1ee78), (0x1ee7d, 0x1ee7d),
    (0x1ee7f, 0x1ee7f), (0x1ee8a, 0x1ee8a), (0x1ee9c, 0x1eea0), (0x1eea4, 0x1eea4), (0x1eeaa, 0x1eeaa),
    (0x1eebc, 0x1eeef), (0x1eef2, 0x1efff), (0x1f02c, 0x1f02f), (0x1f094, 0x1f09f), (0x1f0af, 0x1f0b0),
    (0x1f0c0, 0x1f0c0), (0x1f0d0, 0x1f0d0), (0x1f0f6, 0x1f0ff), (0x1f1ae, 0x1f1e5), (0x1f203, 0x1f20f),
    (0x1f23c, 0x1f23f), (0x1f249, 0x1f24f), (0x1f252, 0x1f25f), (0x1f266, 0x1f2ff), (0x1f6d8, 0x1f6dc),
    (0x1f6ed, 0x1f6ef), (0x1f6fd, 0x1f6ff), (0x1f774, 0x1f77f), (0x1f7d9, 0x1f7df), (0x1f7ec, 0x1f7ef),
    (0x1f7f1, 0x1f7ff), (0x1f80c, 0x1f80f), (0x1f848, 0x1f84f), (0x1f85a, 0x1f85f), (0x1f888, 0x1f88f),
    (0x1f8ae, 0x1f8af), (0x1f8b2, 0x1f8ff), (0x1fa54, 0x1fa5f), (0x1fa6e, 0x1fa6f), (0x1fa75, 0x1fa77),
    (0x1fa7d, 0x1fa7f), (0x1fa87, 0x1fa8f), (0x1faad, 0x1faaf), (0x1fabb, 0x1fabf), (0x1fac6, 0x1facf),
    (0x1fada, 0x1fadf), (0x1fae8, 0x1faef), (0x1faf7, 0x1faff), (0x1fb93, 0x1fb93), (0x1fbcb, 0x1fbef),
    (0x1fbfa, 0x1ffff), (0x2a6e0, 0x2a6ff), (0x2b739, 0x2b73f), (0x2b81e, 0x2b81f), (0x2cea2, 0x2ceaf),
    (0x2ebe1, 0x2f7ff), (0x2fa1e, 0x2ffff), (0x3134b, 0xe00ff), (0xe01f0, 0x10ffff),
];

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values from the venv's Python 3.11 (gateway/verdict.py `truncate`, payload/base.py `one_line`,
    // orjson 3.13 reading the JSON text), generated with a script rather than written by hand.

    #[test]
    fn repr_str_matches_python() {
        let cases = [
            ("", "''"),
            ("a", "'a'"),
            ("it's", "\"it's\""),
            ("say \"hi\"", "'say \"hi\"'"),
            ("it's \"x\"", "'it\\'s \"x\"'"),
            ("back\\slash", "'back\\\\slash'"),
            ("tab\u{9}here\u{a}nl\u{d}cr", "'tab\\there\\nnl\\rcr'"),
            ("\u{0}\u{1}\u{1f}\u{7f}", "'\\x00\\x01\\x1f\\x7f'"),
            ("\u{e9} \u{fc} \u{df}", "'\u{e9} \u{fc} \u{df}'"),
            ("日本語", "'日本語'"),
            ("😀 emoji", "'😀 emoji'"),
            ("\u{80}\u{9f}\u{a0}\u{ad}", "'\\x80\\x9f\\xa0\\xad'"),
            ("\u{a0}nbsp", "'\\xa0nbsp'"),
            ("\u{200b}\u{200e}\u{2028}\u{2029}\u{202f}\u{3000}", "'\\u200b\\u200e\\u2028\\u2029\\u202f\\u3000'"),
            ("\u{feff} bom", "'\\ufeff bom'"),
            ("\u{e000} private", "'\\ue000 private'"),
            ("\u{f0000} plane15", "'\\U000f0000 plane15'"),
            ("\u{10ffff}", "'\\U0010ffff'"),
            ("\u{378} unassigned", "'\\u0378 unassigned'"),
            ("\u{1fbfa}", "'\\U0001fbfa'"),
            ("\u{300}combining", "'\u{300}combining'"),
            ("a\u{301}", "'a\u{301}'"),
            ("\u{61c} arabic mark", "'\\u061c arabic mark'"),
            ("Ω≈\u{e7}√", "'Ω≈\u{e7}√'"),
            ("🇺🇸", "'🇺🇸'"),
            ("\u{2060}\u{2066}", "'\\u2060\\u2066'"),
            ("\u{85} nel", "'\\x85 nel'"),
            ("\u{1680}", "'\\u1680'"),
            ("\u{e0001} tag", "'\\U000e0001 tag'"),
            ("\u{e0100} vs", "'\u{e0100} vs'"),
            ("𰀀", "'𰀀'"),
            ("\u{3134b}", "'\\U0003134b'"),
            ("\u{2000}\u{200a}", "'\\u2000\\u200a'"),
            ("'", "\"'\""),
            ("\"", "'\"'"),
            ("'\"", "'\\'\"'"),
            ("\\'", "\"\\\\'\""),
            ("𝐀 math", "'𝐀 math'"),
            ("\u{600}", "'\\u0600'"),
            ("\u{8e2}", "'\\u08e2'"),
            ("\u{ffff}", "'\\uffff'"),
            ("�", "'�'"),
            ("\u{fff9}", "'\\ufff9'"),
        ];
        for (text, repr) in cases {
            assert_eq!(repr_str(text), repr, "{text:?}");
        }
    }

    #[test]
    fn printable_table() {
        assert!(NOT_PRINTABLE.windows(2).all(|pair| pair[0].1 < pair[1].0));
        for c in ['a', ' ', '~', '\u{e9}', '\u{300}', '\u{4e00}', '\u{1f600}', '\u{fffd}', '\u{2f800}'] {
            assert!(is_printable(c), "{c:?}");
        }
        for c in ['\0', '\n', '\u{7f}', '\u{a0}', '\u{ad}', '\u{2028}', '\u{e000}', '\u{fffe}', '\u{10ffff}'] {
            assert!(!is_printable(c), "{c:?}");
        }
    }

    #[test]
    fn repr_float_reads_back_in_as_few_digits_as_rust_finds() {
        // 200,000 doubles from every binade (a fixed linear congruential sequence of bit patterns): each text
        // reads back as the same double, with as many significant digits as Rust's shortest `{:e}`
        let mut bits: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            bits = bits.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let value = f64::from_bits(bits);
            if !value.is_finite() {
                continue;
            }
            let text = repr_float(value);
            assert_eq!(text.parse::<f64>().map(f64::to_bits), Ok(bits), "{text}");
            let significant = |t: &str| t.split(['e', 'E']).next().unwrap_or("").bytes()
                .filter(u8::is_ascii_digit).skip_while(|&b| b == b'0').collect::<Vec<_>>();
            let mut ours = significant(&text);
            while ours.len() > 1 && ours.last() == Some(&b'0') {
                ours.pop();
            }
            assert_eq!(ours.len(), significant(&format!("{:e}", value.abs())).len(), "{text} {value:e}");
        }
    }

    #[test]
    fn repr_float_matches_python() {
        let cases = [
            (0.0_f64, "0.0"),
            (-0.0_f64, "-0.0"),
            (1.0_f64, "1.0"),
            (-1.0_f64, "-1.0"),
            (0.1_f64, "0.1"),
            (0.30000000000000004_f64, "0.30000000000000004"),
            (5.0_f64, "5.0"),
            (100.0_f64, "100.0"),
            (1e+16_f64, "1e+16"),
            (1000000000000000.0_f64, "1000000000000000.0"),
            (1.2345678901234568e+17_f64, "1.2345678901234568e+17"),
            (9999999999999998.0_f64, "9999999999999998.0"),
            (1e-05_f64, "1e-05"),
            (1.5e-05_f64, "1.5e-05"),
            (0.0001_f64, "0.0001"),
            (0.00012345_f64, "0.00012345"),
            (0.0001_f64, "0.0001"),
            (9.999e-05_f64, "9.999e-05"),
            (1e+308_f64, "1e+308"),
            (1.7976931348623157e+308_f64, "1.7976931348623157e+308"),
            (5e-324_f64, "5e-324"),
            (2.2250738585072014e-308_f64, "2.2250738585072014e-308"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (1e+22_f64, "1e+22"),
            (1e+23_f64, "1e+23"),
            (1.5_f64, "1.5"),
            (2.5e-07_f64, "2.5e-07"),
            (7.389_f64, "7.389"),
            (-2.5e+100_f64, "-2.5e+100"),
            (1234.5678_f64, "1234.5678"),
            (1.2345678901234568e+16_f64, "1.2345678901234568e+16"),
            (0.3_f64, "0.3"),
            (0.6666666666666666_f64, "0.6666666666666666"),
            (1e-10_f64, "1e-10"),
            (4.35_f64, "4.35"),
            (1e+100_f64, "1e+100"),
            (6.02214076e+23_f64, "6.02214076e+23"),
            (1.4411518807585587e+17_f64, "1.4411518807585587e+17"),
            (9007199254740992.0_f64, "9007199254740992.0"),
            (0.000123_f64, "0.000123"),
            // two shortest strings equally near: Python rounds to even
            (268592061126924.12_f64, "268592061126924.12"),
            (9622177977455.062_f64, "9622177977455.062"),
            (-192799456815746.62_f64, "-192799456815746.62"),
        ];
        for (value, repr) in cases {
            assert_eq!(repr_float(value), repr, "{value:e}");
        }
        assert_eq!(repr_float(f64::NAN), "nan");
    }

    #[test]
    fn truncate_json_matches_python() {
        let cases = [
            ("null".to_owned(), Actual::Null),
            ("true".to_owned(), Actual::Bool(true)),
            ("false".to_owned(), Actual::Bool(false)),
            ("0".to_owned(), Actual::Int(0)),
            ("-5".to_owned(), Actual::Int(-5)),
            ("18446744073709551615".to_owned(), Actual::Int(18446744073709551615)),
            ("-9223372036854775808".to_owned(), Actual::Int(-9223372036854775808)),
            ("18446744073709551616".to_owned(), Actual::Float(1.8446744073709552e+19_f64)),
            ("1.0".to_owned(), Actual::Float(1.0_f64)),
            ("1e16".to_owned(), Actual::Float(1e+16_f64)),
            ("1e-5".to_owned(), Actual::Float(1e-05_f64)),
            ("-0.0".to_owned(), Actual::Float(-0.0_f64)),
            ("0.1".to_owned(), Actual::Float(0.1_f64)),
            ("1e308".to_owned(), Actual::Float(1e+308_f64)),
            ("123456789012345678".to_owned(), Actual::Int(123456789012345678)),
            ("1234567890123456.5".to_owned(), Actual::Float(1234567890123456.5_f64)),
            ("1e15".to_owned(), Actual::Float(1000000000000000.0_f64)),
            ("-1e15".to_owned(), Actual::Float(-1000000000000000.0_f64)),
            ("\"\"".to_owned(), Actual::Str("".to_owned())),
            ("\"short\"".to_owned(), Actual::Str("short".to_owned())),
            (["\"".to_owned(), "\\u00e9".repeat(119), "\\ud83d\\ude00\"".to_owned()].concat(), Actual::Str(["\u{e9}".repeat(119), "😀".to_owned()].concat())),
            (["\"".to_owned(), "\\u00e9".repeat(120), "\\ud83d\\ude00\"".to_owned()].concat(), Actual::Str(["\u{e9}".repeat(120), "...".to_owned()].concat())),
            (["\"".to_owned(), "\\ud83d\\ude00".repeat(121), "\"".to_owned()].concat(), Actual::Str(["😀".repeat(120), "...".to_owned()].concat())),
            (["\"".to_owned(), "x".repeat(200), "\"".to_owned()].concat(), Actual::Str(["x".repeat(120), "...".to_owned()].concat())),
            (["\"".to_owned(), "a".repeat(121), "\"".to_owned()].concat(), Actual::Str(["a".repeat(120), "...".to_owned()].concat())),
            (["\"".to_owned(), "a".repeat(120), "\"".to_owned()].concat(), Actual::Str("a".repeat(120))),
            ("[]".to_owned(), Actual::Str("[]".to_owned())),
            ("{}".to_owned(), Actual::Str("{}".to_owned())),
            ("[1, 2.5, true, false, null, \"s\"]".to_owned(), Actual::Str("[1, 2.5, true, false, null, \"s\"]".to_owned())),
            ("{\"a\": 1, \"b\": [1, {\"c\": null}]}".to_owned(), Actual::Str("{\"a\": 1, \"b\": [1, {\"c\": null}]}".to_owned())),
            ("[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99]".to_owned(), Actual::Str("[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 3...".to_owned())),
            (["{\"k\": \"".to_owned(), "x".repeat(130), "\"}".to_owned()].concat(), Actual::Str(["{\"k\": \"".to_owned(), "x".repeat(113), "...".to_owned()].concat())),
            (["[\"".to_owned(), "\\u00e9".repeat(50), "\", \"\\u65e5\\u672c\"]".to_owned()].concat(), Actual::Str(["[\"".to_owned(), "\\u00e9".repeat(19), "\\u00...".to_owned()].concat())),
            ("[\"\\u0000\\u001f\\u007f\\\"\\\\\\n\\r\\t\\b\\f/\", \"\\ud83d\\ude00\"]".to_owned(), Actual::Str("[\"\\u0000\\u001f\\u007f\\\"\\\\\\n\\r\\t\\b\\f/\", \"\\ud83d\\ude00\"]".to_owned())),
            ("[1e+16, 1e-05, 1000000000000000.0, -0.0, 0.1, 5.0, 1e+308, 123456789012345678, 1000000000000000, -1000000000000000, 999999999999999]".to_owned(), Actual::Str("[1e+16, 1e-05, 1000000000000000.0, -0.0, 0.1, 5.0, 1e+308, 123456789012345678, 1000000000000000, -1000000000000000, 9999...".to_owned())),
            (["[".repeat(128), "]".repeat(128)].concat(), Actual::Str(["[".repeat(120), "...".to_owned()].concat())),
            ("[[[[[[[[[[]]]]]]]]]]".to_owned(), Actual::Str("[[[[[[[[[[]]]]]]]]]]".to_owned())),
            (["{\"".to_owned(), "a".repeat(118), "\": 1}".to_owned()].concat(), Actual::Str(["{\"".to_owned(), "a".repeat(118), "...".to_owned()].concat())),
            (["{\"".to_owned(), "a".repeat(117), "\": 1}".to_owned()].concat(), Actual::Str(["{\"".to_owned(), "a".repeat(117), "\"...".to_owned()].concat())),
            (["[\"".to_owned(), "a".repeat(114), "\"]".to_owned()].concat(), Actual::Str(["[\"".to_owned(), "a".repeat(114), "\"]".to_owned()].concat())),
            (["[\"".to_owned(), "a".repeat(115), "\"]".to_owned()].concat(), Actual::Str(["[\"".to_owned(), "a".repeat(115), "\"]".to_owned()].concat())),
            (["[\"".to_owned(), "a".repeat(116), "\"]".to_owned()].concat(), Actual::Str(["[\"".to_owned(), "a".repeat(116), "\"]".to_owned()].concat())),
            (["[\"".to_owned(), "a".repeat(200), "\"]".to_owned()].concat(), Actual::Str(["[\"".to_owned(), "a".repeat(118), "...".to_owned()].concat())),
            ("[{\"\": []}, {}, [[], {}]]".to_owned(), Actual::Str("[{\"\": []}, {}, [[], {}]]".to_owned())),
            ("{\"\\u00e9\\ud83d\\ude00\": \"\\u2028\"}".to_owned(), Actual::Str("{\"\\u00e9\\ud83d\\ude00\": \"\\u2028\"}".to_owned())),
            (["[\"".to_owned(), "x".repeat(119), "\", 1]".to_owned()].concat(), Actual::Str(["[\"".to_owned(), "x".repeat(118), "...".to_owned()].concat())),
            (["[[".to_owned(), "1, ".repeat(59), "1]]".to_owned()].concat(), Actual::Str(["[[".to_owned(), "1, ".repeat(39), "1...".to_owned()].concat())),
            (["{\"a\": {\"b\": {\"c\": {\"d\": \"".to_owned(), "e".repeat(100), "\"}}}}".to_owned()].concat(), Actual::Str(["{\"a\": {\"b\": {\"c\": {\"d\": \"".to_owned(), "e".repeat(95), "...".to_owned()].concat())),
        ];
        for (text, actual) in cases {
            let value = crate::json::parse(text.as_bytes(), false).unwrap();
            assert_eq!(truncate_json(&value), actual, "{text}");
        }
    }

    #[test]
    fn preview_is_bounded() {
        // 100,000 levels: built by hand (serde_json would not read it), dropped by hand (Drop recurses)
        let mut value = Value::Array(vec![]);
        for _ in 0..100_000 {
            value = Value::Array(vec![value]);
        }
        let preview = truncate_json(&value);
        assert_eq!(preview, Actual::Str(format!("{}...", "[".repeat(ACTUAL_LIMIT))));
        let mut stack = vec![value];
        while let Some(Value::Array(items)) = stack.pop() {
            stack.extend(items);
        }
        // a long list costs as much as a short one
        let long = Value::Array((0..1_000_000).map(Value::from).collect());
        assert!(matches!(truncate_json(&long), Actual::Str(text) if text.starts_with("[0, 1, 2") && text.len() == 123));
    }

    /// Members in document order, as Python dicts keep them (Cargo.toml turns on serde_json's `preserve_order`).
    #[test]
    fn preview_member_order() {
        let value = crate::json::parse(br#"{"b": 1, "a": 2, "b": 3}"#, false).unwrap();
        assert_eq!(truncate_json(&value), Actual::Str(r#"{"b": 3, "a": 2}"#.to_owned()));
    }

    #[test]
    fn truncate_str_matches_python() {
        let cases = [
            ("".to_owned(), Actual::Str("".to_owned())),
            ("a".repeat(120), Actual::Str("a".repeat(120))),
            ("a".repeat(121), Actual::Str(["a".repeat(120), "...".to_owned()].concat())),
            ("\u{e9}".repeat(121), Actual::Str(["\u{e9}".repeat(120), "...".to_owned()].concat())),
            ("😀".repeat(130), Actual::Str(["😀".repeat(120), "...".to_owned()].concat())),
            ("ab".repeat(100), Actual::Str(["ab".repeat(60), "...".to_owned()].concat())),
            ("x\u{301}".repeat(70), Actual::Str(["x\u{301}".repeat(60), "...".to_owned()].concat())),
        ];
        for (text, actual) in cases {
            assert_eq!(truncate_str(&text), actual, "{text}");
        }
    }

    #[test]
    fn truncate_bytes_matches_python() {
        let cases = [
            (b"".to_vec(), Actual::Str("".to_owned())),
            (b"abc".to_vec(), Actual::Str("abc".to_owned())),
            (b"a".repeat(120), Actual::Str("a".repeat(120))),
            (b"a".repeat(121), Actual::Str(["a".repeat(120), "...".to_owned()].concat())),
            ([b"a".repeat(119), b"\xc3\xa9".to_vec()].concat(), Actual::Str(["a".repeat(119), "�...".to_owned()].concat())),
            ([b"a".repeat(118), b"\xe2\x82\xac".to_vec()].concat(), Actual::Str(["a".repeat(118), "�...".to_owned()].concat())),
            ([b"a".repeat(119), b"\xe2\x82\xac".to_vec()].concat(), Actual::Str(["a".repeat(119), "�...".to_owned()].concat())),
            (b"\xff\xfe abc".to_vec(), Actual::Str("�� abc".to_owned())),
            (b"\xed\xa0\x80".to_vec(), Actual::Str("���".to_owned())),
            (b"\xf0\x9f\x98".to_vec(), Actual::Str("�".to_owned())),
            (b"\xf0\x9f\x98 x".to_vec(), Actual::Str("� x".to_owned())),
            (b"\xe2\x82".to_vec(), Actual::Str("�".to_owned())),
            (b"\xc0\xaf".to_vec(), Actual::Str("��".to_owned())),
            (b"\xf4\x90\x80\x80".to_vec(), Actual::Str("����".to_owned())),
            (b"\xf8\x88\x80\x80\x80".to_vec(), Actual::Str("�����".to_owned())),
            (b"\x80\x80".to_vec(), Actual::Str("��".to_owned())),
            (b"\xf0\x9f\x98\x80".repeat(31), Actual::Str(["😀".repeat(30), "...".to_owned()].concat())),
            (b"\x00\x1f\x7f".to_vec(), Actual::Str("\u{0}\u{1f}\u{7f}".to_owned())),
            (b"\xe0\x80\x80".to_vec(), Actual::Str("���".to_owned())),
            (b"\xe0\xa0".to_vec(), Actual::Str("�".to_owned())),
            (b"a\xf1\x80\x80b".to_vec(), Actual::Str("a�b".to_owned())),
        ];
        for (bytes, actual) in cases {
            assert_eq!(truncate_bytes(&bytes), actual, "{bytes:?}");
        }
    }

    #[test]
    fn one_line_matches_python() {
        let cases = [
            ("".to_owned(), 300, ""),
            ("a".to_owned(), 300, "a"),
            ("  a  b\u{a}\u{9}c  ".to_owned(), 300, "a b c"),
            ("a\u{1c} b\u{1d}\u{1e}\u{1f}c".to_owned(), 300, "a b c"),
            ("x\u{a0}y\u{2003}z\u{3000}w\u{85}v\u{2028}u".to_owned(), 300, "x y z w v u"),
            ("a\u{200b}b".to_owned(), 300, "a\u{200b}b"),
            ("abcdefghij".to_owned(), 10, "abcdefghij"),
            ("abcdefghijk".to_owned(), 10, "abcdefg..."),
            ("abcdefghijk".to_owned(), 3, "..."),
            ("abcdefghijk".to_owned(), 2, "abcdefghij..."),
            ("abcdefghijk".to_owned(), 0, "abcdefgh..."),
            ("\u{e9}".repeat(20), 10, "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}..."),
            ("😀 ".repeat(10), 8, "😀 😀 😀..."),
            ("line one\u{a}line two\u{d}\u{a}line three".to_owned(), 15, "line one lin..."),
            ("\u{b}\u{c} a".to_owned(), 300, "a"),
            ("ab".to_owned(), 1, "..."),
        ];
        for (text, limit, line) in cases {
            assert_eq!(one_line(&text, limit), line, "{text:?} {limit}");
        }
    }
}
