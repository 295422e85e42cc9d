//! A recorded Kafka message (validation rule 7) read from its line on the tape, as gateway/recorded.py
//! `envelope_from_record` and gateway/check.py `read_record` read it. Only the plain form is read here: text
//! body and key, text or null header values, integer or null `partition`/`timestamp`, a string `topic`.
//! Anything else (base64 forms, another protocol, an endpoint the line names but the registry lacks, fields
//! of other types) gives None and the line goes to the Python reading, which decides it, errors included.

use crate::event::Record;
use crate::tape::{Doc, Node};

/// How a line's endpoint and protocol are settled when the line does not say.
pub struct Defaults<'a> {
    /// the endpoint of a line that names none (`--endpoint`, else the registry's default), by position
    pub endpoint: Option<usize>,
    /// each endpoint's position by id
    pub ids: &'a std::collections::HashMap<String, usize>,
    /// whether each endpoint (by position) is a Kafka one: a line without `protocol` takes its endpoint's
    pub kafka: &'a [bool],
}

/// A Kafka record and the position of the endpoint it is judged on.
pub struct Recorded<'a> {
    pub endpoint: usize,
    pub record: Record<'a>,
}

pub fn read_kafka<'a>(doc: &'a Doc<'a>, defaults: &Defaults) -> Option<Recorded<'a>> {
    let mut named: Option<&str> = None;
    let mut protocol: Option<&str> = None;
    let mut record = Record { topic: None, partition: None, key: None, headers: Vec::new(), value: b"", timestamp: None,
                              values_text: None };
    for (name, value) in doc.root().members()? {
        match name {
            // a null endpoint is not an absent one in recorded.py: that case is left to it
            "endpoint" => named = Some(value.as_str()?),
            "protocol" => protocol = Some(value.as_str()?),
            "topic" => record.topic = text_or_null(value)?,
            "partition" => record.partition = int_or_null(value)?,
            "timestamp" => record.timestamp = int_or_null(value)?,
            "key" => record.key = text_or_null(value)?.map(str::as_bytes),
            "body" => record.value = text_or_null(value)?.map_or(b"", str::as_bytes),
            "headers" if value.is_null() => record.headers.clear(),
            "headers" => {
                record.headers.clear();
                for (header, item) in value.members()? {
                    record.headers.push((header, text_or_null(item)?.map(str::as_bytes)));
                }
            }
            "key_base64" | "body_base64" => return None,
            _ => {}
        }
    }
    let endpoint = match named {
        None => defaults.endpoint?,
        Some("") => return None,
        Some(id) => *defaults.ids.get(id)?,
    };
    let kafka = match protocol {
        None => *defaults.kafka.get(endpoint)?,
        Some(written) => written.trim().eq_ignore_ascii_case("kafka"),
    };
    kafka.then_some(Recorded { endpoint, record })
}

/// Some(None) for null, Some(Some(text)) for a string, None for anything else.
fn text_or_null<'a>(value: Node<'a>) -> Option<Option<&'a str>> {
    if value.is_null() {
        return Some(None);
    }
    value.as_str().map(Some)
}

fn int_or_null(value: Node) -> Option<Option<i64>> {
    if value.is_null() {
        return Some(None);
    }
    value.as_i64().map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tape::parse;
    use std::collections::HashMap;

    fn read(line: &str, endpoint: Option<usize>) -> Option<(usize, String)> {
        let ids: HashMap<String, usize> = [("k".to_owned(), 0), ("m".to_owned(), 1)].into();
        let defaults = Defaults { endpoint, ids: &ids, kafka: &[true, false] };
        let doc = parse(line.as_bytes())?;
        read_kafka(&doc, &defaults).map(|r| {
            let record = r.record;
            (r.endpoint, format!("{:?} {:?} {:?} {:?} {:?} {:?}", record.topic, record.partition,
                                 record.key.map(|k| String::from_utf8_lossy(k).into_owned()),
                                 record.headers.iter().map(|(n, v)| (n.to_string(), v.map(|v| v.len())))
                                     .collect::<Vec<_>>(),
                                 String::from_utf8_lossy(record.value), record.timestamp))
        })
    }

    #[test]
    fn plain_kafka_lines_read() {
        let line = r#"{"endpoint": "k", "topic": "t", "partition": 3, "key": "k1", "headers": {"ce_id": "1", "x": null},
                       "body": "{}", "timestamp": 1700000000000, "other": [1]}"#;
        assert_eq!(read(line, None).unwrap(),
                   (0, r#"Some("t") Some(3) Some("k1") [("ce_id", Some(1)), ("x", None)] "{}" Some(1700000000000)"#.into()));
        // no endpoint: the default; no protocol: the endpoint's
        assert_eq!(read(r#"{"body": null}"#, Some(0)).unwrap().0, 0);
        assert!(read(r#"{"body": null}"#, Some(1)).is_none());
        assert!(read(r#"{"body": null}"#, None).is_none());
        assert_eq!(read(r#"{"endpoint": "m", "protocol": " Kafka "}"#, None).unwrap().0, 1);
    }

    #[test]
    fn other_forms_are_left_to_python() {
        for line in [
            r#"{"endpoint": "k", "body_base64": "e30="}"#, r#"{"endpoint": "k", "key_base64": "AA=="}"#,
            r#"{"endpoint": "k", "key": {"base64": "AA=="}}"#, r#"{"endpoint": "k", "headers": {"a": {"base64": "AA=="}}}"#,
            r#"{"endpoint": "k", "headers": [["a", "b"]]}"#, r#"{"endpoint": "k", "partition": "1"}"#,
            r#"{"endpoint": "k", "partition": 1.0}"#, r#"{"endpoint": "k", "topic": 5}"#, r#"{"endpoint": "k", "body": 5}"#,
            r#"{"endpoint": null}"#, r#"{"endpoint": ""}"#, r#"{"endpoint": "nope"}"#,
            r#"{"endpoint": "k", "protocol": "MQTT"}"#, r#"{"endpoint": "k", "protocol": "KAFKA/3.0"}"#, "[1]",
        ] {
            assert!(read(line, Some(0)).is_none(), "{line}");
        }
    }
}
