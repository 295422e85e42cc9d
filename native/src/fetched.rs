//! A Kafka to Kafka route's fetched records read in place (gateway/runtime/record_lane.py): the batches a fetch
//! returned stay the bytes the broker sent, and no Python object is made for a record that conforms.
//!
//! `split_batches` finds the batches of a fetch's partition data and says which are plain (record_batch.rs:
//! magic 2, uncompressed, not a control batch, the CRC-32C matching, at least one record); the source hands
//! the plain ones on as spans of that data and leaves every other batch to aiokafka's reader, so that what
//! aiokafka refuses (a bad CRC), skips (control batches) or decodes (codecs, older magics) stays its own.
//! `Core.judge_fetched` (lib.rs) reads the spans into a `Fetched` and judges each record as `judge_kafka`
//! judges the ConsumerRecord aiokafka would have made of it. The sink's `BatchWriter.extend` and
//! `partition_records` (batch_writer.rs) copy a `Fetched`'s records into producer batches as they are;
//! `record` gives one record's fields for the few that need a ConsumerRecord (a failed batch), `offsets` where
//! dead letters were read (their `xgate-source-position` header).

use std::ops::Range;
use std::sync::Arc;

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyBytes, PyTuple};

use crate::record_batch::{self, crc32c, int32, int64, ATTRIBUTES_AT, COMPRESSION, CONTROL, COUNT_AT, CRC_AT,
                          LAST_OFFSET_DELTA_AT, LENGTH_AT, MAGIC_AT, RECORDS_AT};

/// Where a part lies in its batch's data.
pub(crate) type Span = Range<usize>;

/// One record: its parts as spans of its batch's data (a fetch's partition data, which its batches share), its
/// headers `headers[range]` of the Fetched.
#[derive(Clone)]
pub(crate) struct Record {
    pub batch: usize,
    pub offset: i64,
    pub timestamp: i64,
    pub log_append: bool,
    pub key: Option<Span>,
    pub value: Option<Span>,
    pub headers: Range<usize>,
    /// its bytes from the key on, where the header count begins in them, and whether a writer may copy them
    /// whole (record_batch.rs `Parsed`)
    pub body: Span,
    pub headers_at: usize,
    pub canonical: bool,
}

/// A header: its name's span (UTF-8, checked when read) and its value's, or None for a null value.
pub(crate) type Header = (Span, Option<Span>);

#[pyclass(frozen, module = "xgate_core")]
pub struct Fetched {
    /// each batch's data
    pub(crate) batches: Arc<Vec<PyBackedBytes>>,
    pub(crate) headers: Arc<Vec<Header>>,
    pub(crate) records: Vec<Record>,
}

fn span_of(part: &[u8], data: &[u8]) -> Span {
    // a part borrowed from `data` (record_batch::read): its place in it
    let start = part.as_ptr() as usize - data.as_ptr() as usize;
    start..start + part.len()
}

impl Fetched {
    /// Read `batches` (topic, partition, data, start, end): each span one plain batch. Calls `each` with every
    /// record as record_batch.rs reads it, in order. None when a span does not read (the caller decodes it).
    pub(crate) fn read(batches: Vec<(PyBackedStr, i64, PyBackedBytes, usize, usize)>,
                       mut each: impl FnMut(&str, i64, &record_batch::Parsed<'_>, &[(&str, Option<&[u8]>)]))
                       -> Option<Fetched> {
        let mut records = Vec::new();
        let mut headers = Vec::new();
        let mut kept = Vec::with_capacity(batches.len());
        for (number, (topic, partition, data, start, end)) in batches.into_iter().enumerate() {
            let (parsed, read_headers) = record_batch::read(data.get(start..end)?)?;
            for one in &parsed {
                each(&topic, partition, one, &read_headers);
                let first = headers.len();
                headers.extend(read_headers[one.headers.clone()].iter().map(|(name, value)| {
                    (span_of(name.as_bytes(), &data), value.map(|value| span_of(value, &data)))
                }));
                records.push(Record {
                    batch: number,
                    offset: one.offset,
                    timestamp: one.timestamp,
                    log_append: one.log_append,
                    key: one.key.map(|key| span_of(key, &data)),
                    value: one.value.map(|value| span_of(value, &data)),
                    headers: first..headers.len(),
                    body: span_of(one.body, &data),
                    headers_at: one.headers_at,
                    canonical: one.canonical,
                });
            }
            kept.push(data);
        }
        Some(Fetched { batches: Arc::new(kept), headers: Arc::new(headers), records })
    }

    pub(crate) fn data(&self, record: &Record) -> &[u8] {
        &self.batches[record.batch]
    }

    pub(crate) fn key<'a>(&'a self, record: &Record) -> Option<&'a [u8]> {
        record.key.clone().map(|span| &self.data(record)[span])
    }

    pub(crate) fn value<'a>(&'a self, record: &Record) -> Option<&'a [u8]> {
        record.value.clone().map(|span| &self.data(record)[span])
    }

    /// The record's bytes from its key on as a writer writes them from its parts, and where its header count
    /// begins in them; None where the batch holds them otherwise (a varint longer than it needs to be).
    pub(crate) fn body<'a>(&'a self, record: &Record) -> Option<(&'a [u8], usize)> {
        record.canonical.then(|| (&self.data(record)[record.body.clone()], record.headers_at))
    }

    /// Each header of `record` as (name, value or None).
    pub(crate) fn each_header<'a>(&'a self, record: &'a Record)
                                  -> impl Iterator<Item = (&'a str, Option<&'a [u8]>)> + 'a {
        let data = self.data(record);
        self.headers[record.headers.clone()].iter().map(move |(name, value)| {
            // checked as UTF-8 when read; a name that somehow is not reads as empty rather than panicking
            (std::str::from_utf8(&data[name.clone()]).unwrap_or_default(), value.clone().map(|value| &data[value]))
        })
    }
}

#[pymethods]
impl Fetched {
    fn __len__(&self) -> usize {
        self.records.len()
    }

    /// The records at `indexes`, in that order, over the same data.
    fn select(&self, indexes: Vec<usize>) -> PyResult<Fetched> {
        let records = indexes.into_iter().map(|index| {
            self.records.get(index).cloned().ok_or_else(|| PyIndexError::new_err(index))
        }).collect::<PyResult<Vec<_>>>()?;
        Ok(Fetched { batches: Arc::clone(&self.batches), headers: Arc::clone(&self.headers), records })
    }

    /// Record `index` as aiokafka's ConsumerRecord holds it: `(offset, timestamp, timestamp_type, key, value,
    /// headers)`, the headers a tuple of (name, value or None) tuples.
    fn record<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyTuple>> {
        let record = self.records.get(index).ok_or_else(|| PyIndexError::new_err(index))?;
        let headers = self.each_header(record)
            .map(|(name, value)| (name, value.map(|value| PyBytes::new(py, value))))
            .collect::<Vec<_>>();
        (record.offset, record.timestamp, i32::from(record.log_append),
         self.key(record).map(|key| PyBytes::new(py, key)), self.value(record).map(|value| PyBytes::new(py, value)),
         PyTuple::new(py, headers)?).into_pyobject(py)
    }

    /// The offsets of the records at `indexes` (where a dead letter was read: its `xgate-source-position`).
    fn offsets(&self, indexes: Vec<usize>) -> PyResult<Vec<i64>> {
        indexes.into_iter().map(|index| {
            self.records.get(index).map(|record| record.offset).ok_or_else(|| PyIndexError::new_err(index))
        }).collect()
    }

    /// The records' value bytes together (what a sample of recent traffic holds of them).
    fn value_bytes(&self) -> usize {
        self.records.iter().map(|record| record.value.as_ref().map_or(0, |span| span.len())).sum()
    }
}

/// The batches of a fetch's partition data, as `(start, end, base_offset, next_offset, count)`: a plain batch
/// (module docs) has its next offset (the one after its last record's) and its record count, any other -1
/// for both. A batch cut short at the end of the data (a fetch stops at its byte limit) is not listed.
#[pyfunction]
pub fn split_batches(data: &[u8]) -> Vec<(usize, usize, i64, i64, i32)> {
    let mut found = Vec::new();
    let mut at = 0;
    while let (Some(base), Some(length)) = (int64(data, at), int32(data, at + LENGTH_AT)) {
        let Some(end) = usize::try_from(length).ok().and_then(|length| (at + LENGTH_AT + 4).checked_add(length))
            .filter(|end| *end <= data.len()) else { break };
        let batch = &data[at..end];
        let plain = batch.len() >= RECORDS_AT && batch[MAGIC_AT] == 2
            && int32(batch, COUNT_AT).is_some_and(|count| count > 0)
            && i16::from_be_bytes([batch[ATTRIBUTES_AT], batch[ATTRIBUTES_AT + 1]]) & (COMPRESSION | CONTROL) == 0
            && int32(batch, CRC_AT).is_some_and(|crc| crc as u32 == crc32c(&batch[ATTRIBUTES_AT..]));
        let (next, count) = match (plain, int32(batch, LAST_OFFSET_DELTA_AT), int32(batch, COUNT_AT)) {
            (true, Some(delta), Some(count)) => (base + i64::from(delta) + 1, count),
            _ => (-1, -1),
        };
        found.push((at, end, base, next, count));
        at = end;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::split_batches;
    use crate::record_batch::tests::batch;
    use crate::record_batch::CONTROL;

    fn at_offset(mut data: Vec<u8>, base: i64) -> Vec<u8> {
        data[..8].copy_from_slice(&base.to_be_bytes()); // the base offset is not under the CRC
        data
    }

    #[test]
    fn plain_batches_with_their_next_offsets_and_counts_a_cut_one_left_out() {
        let first = at_offset(batch(&[(None, Some(b"a"), vec![]), (None, Some(b"b"), vec![("h", None)])], 0), 40);
        let gzip = at_offset(batch(&[(None, Some(b"c"), vec![])], 1), 42);
        let control = at_offset(batch(&[(None, Some(b"d"), vec![])], CONTROL), 43);
        let mut bad_crc = at_offset(batch(&[(None, Some(b"e"), vec![])], 0), 44);
        *bad_crc.last_mut().unwrap() ^= 1;
        let last = at_offset(batch(&[(Some(b"k"), None, vec![])], 0), 45);
        let data = [first.clone(), gzip.clone(), control.clone(), bad_crc.clone(), last.clone(), last[..30].to_vec()]
            .concat();
        let mut at = 0;
        let mut spans = Vec::new();
        for part in [&first, &gzip, &control, &bad_crc, &last] {
            spans.push((at, at + part.len()));
            at += part.len();
        }
        let found = split_batches(&data);
        assert_eq!(found.len(), 5, "the batch cut short at the end is not listed");
        assert_eq!(found[0], (spans[0].0, spans[0].1, 40, 42, 2));
        for (index, base) in [(1, 42), (2, 43), (3, 44)] {
            assert_eq!(found[index], (spans[index].0, spans[index].1, base, -1, -1), "not plain: aiokafka's");
        }
        assert_eq!(found[4], (spans[4].0, spans[4].1, 45, 46, 1));
    }

    #[test]
    fn nothing_listed_in_data_too_short_for_a_batch() {
        assert!(split_batches(b"").is_empty());
        assert!(split_batches(&[0u8; 11]).is_empty());
    }
}
