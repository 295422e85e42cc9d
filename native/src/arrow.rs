//! Kafka records read straight from Arrow columns (Spark's `mapInArrow` batches), without a Python object per
//! row. The Python side (gateway/spark/routing.py) hands each column's buffers as `bytes`: one copy per column
//! and batch, none per record. Every read is bounds-checked: a malformed buffer gives a record without that
//! part (the Python side checks the lengths it sends), never a panic.

use crate::event::Record;

/// An Arrow validity bitmap (absent: every slot valid), as Arrow lays it out: bit `i % 8` of byte `i / 8`.
fn is_valid(bitmap: Option<&[u8]>, slot: usize) -> bool {
    bitmap.is_none_or(|bits| bits.get(slot / 8).is_some_and(|byte| byte & (1 << (slot % 8)) != 0))
}

fn int32_at(buffer: &[u8], index: usize) -> Option<usize> {
    let bytes = buffer.get(index * 4..index * 4 + 4)?;
    usize::try_from(i32::from_le_bytes(bytes.try_into().ok()?)).ok()
}

/// A binary or string column: validity, 32-bit offsets and data, and the array's own offset into them.
pub struct Variable<'a> {
    pub validity: Option<&'a [u8]>,
    pub offsets: &'a [u8],
    pub data: &'a [u8],
    pub offset: usize,
}

impl<'a> Variable<'a> {
    pub fn bytes(&self, row: usize) -> Option<&'a [u8]> {
        let slot = self.offset + row;
        if !is_valid(self.validity, slot) {
            return None;
        }
        self.data.get(int32_at(self.offsets, slot)?..int32_at(self.offsets, slot + 1)?)
    }

    pub fn text(&self, row: usize) -> Option<&'a str> {
        std::str::from_utf8(self.bytes(row)?).ok()
    }
}

/// A column of fixed-width integers (32-bit partitions, 64-bit milliseconds).
pub struct Fixed<'a> {
    pub validity: Option<&'a [u8]>,
    pub data: &'a [u8],
    pub offset: usize,
    pub width: usize,
}

impl Fixed<'_> {
    pub fn int(&self, row: usize) -> Option<i64> {
        let slot = self.offset + row;
        if !is_valid(self.validity, slot) {
            return None;
        }
        match self.width {
            4 => self.data.get(slot * 4..slot * 4 + 4).and_then(|b| b.try_into().ok()).map(|b| i32::from_le_bytes(b) as i64),
            _ => self.data.get(slot * 8..slot * 8 + 8).and_then(|b| b.try_into().ok()).map(i64::from_le_bytes),
        }
    }
}

/// Kafka headers: `list<struct<key: string, value: binary>>`, the list's offsets over the two child columns.
pub struct Headers<'a> {
    pub validity: Option<&'a [u8]>,
    pub offsets: &'a [u8],
    pub offset: usize,
    pub keys: Variable<'a>,
    pub values: Variable<'a>,
}

/// The columns of one batch of Kafka records, as Spark's Kafka source gives them.
pub struct Columns<'a> {
    pub topic: Variable<'a>,
    pub partition: Fixed<'a>,
    pub key: Variable<'a>,
    pub value: Variable<'a>,
    pub headers: Headers<'a>,
    pub timestamp: Fixed<'a>,
}

impl<'a> Columns<'a> {
    /// Row `row` as the judge reads a record; None when a header's name is not text (the Python judge decides).
    pub fn record(&self, row: usize) -> Option<Record<'a>> {
        let mut headers = Vec::new();
        let list = self.headers.offset + row;
        if is_valid(self.headers.validity, list) {
            for entry in int32_at(self.headers.offsets, list)?..int32_at(self.headers.offsets, list + 1)? {
                headers.push((self.headers.keys.text(entry)?, self.headers.values.bytes(entry)));
            }
        }
        Some(Record {
            topic: self.topic.text(row),
            partition: self.partition.int(row),
            key: self.key.bytes(row),
            headers,
            value: self.value.bytes(row).unwrap_or_default(),
            timestamp: self.timestamp.int(row),
            values_text: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(values: &[i32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn reads_variable_columns_with_nulls_and_an_offset() {
        let offs = offsets(&[0, 2, 2, 5]);
        let column = Variable { validity: Some(&[0b101]), offsets: &offs, data: b"abcde", offset: 0 };
        assert_eq!(column.bytes(0), Some(&b"ab"[..]));
        assert_eq!(column.bytes(1), None);
        assert_eq!(column.bytes(2), Some(&b"cde"[..]));
        assert_eq!(column.bytes(3), None); // past the end: absent, no panic
        let sliced = Variable { validity: None, offsets: &offs, data: b"abcde", offset: 2 };
        assert_eq!(sliced.text(0), Some("cde"));
    }

    #[test]
    fn reads_headers_and_integers() {
        let list = offsets(&[0, 2, 2]);
        let key_offsets = offsets(&[0, 4, 7]);
        let value_offsets = offsets(&[0, 3, 3]);
        let parts = offsets(&[-1, 3]);
        let stamps: Vec<u8> = [5_i64, 7].iter().flat_map(|v| v.to_le_bytes()).collect();
        let columns = Columns {
            topic: Variable { validity: Some(&[0]), offsets: &offsets(&[0, 0, 0]), data: b"", offset: 0 },
            partition: Fixed { validity: None, data: &parts, offset: 0, width: 4 },
            key: Variable { validity: Some(&[0]), offsets: &offsets(&[0, 0, 0]), data: b"", offset: 0 },
            value: Variable { validity: None, offsets: &offsets(&[0, 2, 4]), data: b"{}[]", offset: 0 },
            headers: Headers {
                validity: None, offsets: &list, offset: 0,
                keys: Variable { validity: None, offsets: &key_offsets, data: b"ce_idce_", offset: 0 },
                values: Variable { validity: Some(&[0b01]), offsets: &value_offsets, data: b"one", offset: 0 },
            },
            timestamp: Fixed { validity: Some(&[0b10]), data: &stamps, offset: 0, width: 8 },
        };
        let first = columns.record(0).unwrap();
        assert_eq!(first.headers, vec![("ce_i", Some(&b"one"[..])), ("dce", None)]);
        assert_eq!((first.partition, first.timestamp, first.topic, first.value), (Some(-1), None, None, &b"{}"[..]));
        let second = columns.record(1).unwrap();
        assert!(second.headers.is_empty());
        assert_eq!((second.partition, second.timestamp), (Some(3), Some(7)));
    }
}
