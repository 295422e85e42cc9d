//! Kafka producer batches written in one call a partition: a route's conformant records and dead letters go
//! out as they came (value, key, headers, timestamp) without a Python step per record.
//!
//! `BatchWriter` is the record batch (magic 2, uncompressed) the Kafka sink hands to aiokafka's `send_batch`
//! in place of aiokafka's own builder: it has the methods aiokafka's producer calls on one (`closed`, `close`,
//! `record_count`, `size`, `_set_producer_state`, `_build`) and `append` as aiokafka's builder takes one record,
//! plus `extend`, which appends many records of a list (or of a `Fetched`, fetched.rs, as they were read).
//! `partition_records` picks each record's partition as the sink's partitioner does and sets apart the
//! records the producer would refuse for their size.
//!
//! The layout and the size rules are Kafka's record batch v2 as aiokafka writes it: the first record always
//! goes in, a later one only while the batch stays below its size; a record without a timestamp (or with a
//! negative one) is stamped with the current time; the size estimate that sends a record alone is aiokafka's
//! `estimate_size_in_bytes` (61 bytes of batch header, 21 of record overhead, then the parts).

use std::time::{SystemTime, UNIX_EPOCH};

use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::fetched::{self, Fetched};
use crate::murmur::murmur2;
use crate::record_batch::{crc32c, ATTRIBUTES_AT, CRC_AT, LENGTH_AT, RECORDS_AT as HEADER_SIZE};

const MAX_RECORD_OVERHEAD: usize = 21;
const TRANSACTIONAL: i16 = 0x10;
const RESERVED_MOST: usize = 1 << 20;

/// A record's key or value: a Python bytes object, or bytes of fetched data read in place.
enum Bytes<'a, 'py> {
    Object(Bound<'py, PyBytes>),
    Read(&'a [u8]),
}

impl Bytes<'_, '_> {
    fn get(&self) -> &[u8] {
        match self {
            Bytes::Object(bytes) => bytes.as_bytes(),
            Bytes::Read(bytes) => bytes,
        }
    }
}

/// A record's headers: a Python iterable of (name, value) pairs, or those of a fetched record.
enum Headers<'a, 'py> {
    None,
    Object(Bound<'py, PyAny>),
    Read(&'a Fetched, &'a fetched::Record),
}

/// One record's parts, borrowed from its Python object while the GIL is held (an `OutgoingRecord` tuple
/// (value, key, headers, timestamp) or any object with those attributes, aiokafka's ConsumerRecord), or from
/// a `Fetched` (fetched.rs).
struct Parts<'a, 'py> {
    key: Option<Bytes<'a, 'py>>,
    value: Option<Bytes<'a, 'py>>,
    headers: Headers<'a, 'py>,
    timestamp: Option<i64>,
    /// a fetched record's bytes from its key on, where its header count begins in them and that count, where
    /// they are what `push` would write from the parts (fetched.rs `Fetched::body`): copied whole
    whole: Option<(&'a [u8], usize, usize)>,
}

impl<'a, 'py> Parts<'a, 'py> {
    fn of(item: &Bound<'py, PyAny>, default_key: Option<&Bound<'py, PyBytes>>) -> PyResult<Self> {
        let py = item.py();
        let (value, key, headers, timestamp) = match item.cast::<PyTuple>() {
            Ok(tuple) => (tuple.get_item(0)?, tuple.get_item(1)?, tuple.get_item(2)?, tuple.get_item(3)?),
            Err(_) => (item.getattr(intern!(py, "value"))?, item.getattr(intern!(py, "key"))?,
                       item.getattr(intern!(py, "headers"))?, item.getattr(intern!(py, "timestamp"))?),
        };
        let key = optional_bytes(key, "key")?.or_else(|| default_key.cloned());
        Ok(Parts {
            key: key.map(Bytes::Object),
            value: optional_bytes(value, "value")?.map(Bytes::Object),
            headers: if headers.is_none() { Headers::None } else { Headers::Object(headers) },
            timestamp: timestamp.extract::<Option<i64>>()?.filter(|stamp| *stamp >= 0),
            whole: None,
        })
    }

    fn read(fetched: &'a Fetched, record: &'a fetched::Record, default_key: Option<&'a Bound<'py, PyBytes>>) -> Self {
        // a keyless record given the default key is written from its parts: its bytes hold no key
        let keyed = record.key.is_some() || default_key.is_none();
        Parts {
            key: fetched.key(record).map(Bytes::Read).or_else(|| default_key.map(|key| Bytes::Read(key.as_bytes()))),
            value: fetched.value(record).map(Bytes::Read),
            headers: Headers::Read(fetched, record),
            timestamp: Some(record.timestamp).filter(|stamp| *stamp >= 0),
            whole: fetched.body(record).filter(|_| keyed).map(|(body, at)| (body, at, record.headers.len())),
        }
    }

    fn key(&self) -> Option<&[u8]> {
        self.key.as_ref().map(Bytes::get)
    }

    fn value(&self) -> Option<&[u8]> {
        self.value.as_ref().map(Bytes::get)
    }
}

/// Record `index` of `records`: a list of records (`Parts::of`) or a `Fetched`.
fn parts_at<'a, 'py>(records: &'a Records<'a, 'py>, index: usize, default_key: Option<&'a Bound<'py, PyBytes>>)
                     -> PyResult<Parts<'a, 'py>> {
    match records {
        Records::List(list) => Parts::of(&list.get_item(index)?, default_key),
        Records::Read(fetched) => {
            let record = fetched.records.get(index).ok_or_else(|| PyIndexError::new_err(index))?;
            Ok(Parts::read(fetched, record, default_key))
        }
    }
}

enum Records<'a, 'py> {
    List(&'a Bound<'py, PyList>),
    Read(&'a Fetched),
}

impl<'a, 'py> Records<'a, 'py> {
    fn of(records: &'a Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(fetched) = records.cast::<Fetched>() {
            return Ok(Records::Read(fetched.get()));
        }
        Ok(Records::List(records.cast::<PyList>()?))
    }

    fn len(&self) -> usize {
        match self {
            Records::List(list) => list.len(),
            Records::Read(fetched) => fetched.records.len(),
        }
    }
}

fn optional_bytes<'py>(object: Bound<'py, PyAny>, what: &str) -> PyResult<Option<Bound<'py, PyBytes>>> {
    if object.is_none() {
        return Ok(None);
    }
    match object.cast_into::<PyBytes>() {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) => Err(PyTypeError::new_err(format!("a record's {what} must be bytes or None, not {}",
                                                       error.into_inner().get_type().name()?))),
    }
}

/// Each header as (name, value or None): the record's own, then the `added` text ones.
fn for_each_header<'py>(headers: &Headers<'_, 'py>, added: Option<&Bound<'py, PyAny>>,
                        mut each: impl FnMut(&str, Option<&[u8]>)) -> PyResult<()> {
    if let Headers::Read(fetched, record) = headers {
        fetched.each_header(record).for_each(|(name, value)| each(name, value));
    }
    if let Headers::Object(headers) = headers {
        for pair in headers.try_iter()? {
            let pair = pair?;
            let pair = pair.cast::<PyTuple>()?;
            let name = pair.get_borrowed_item(0)?;
            let name = name.cast::<PyString>()?;
            let value = pair.get_borrowed_item(1)?;
            if value.is_none() {
                each(name.to_str()?, None);
            } else {
                each(name.to_str()?, Some(value.cast::<PyBytes>()?.as_bytes()));
            }
        }
    }
    if let Some(added) = added.filter(|added| !added.is_none()) {
        for pair in added.try_iter()? {
            let pair = pair?;
            let pair = pair.cast::<PyTuple>()?;
            let name = pair.get_borrowed_item(0)?;
            let text = pair.get_borrowed_item(1)?;
            let (name, text) = (name.cast::<PyString>()?, text.cast::<PyString>()?);
            each(name.to_str()?, Some(text.to_str()?.as_bytes()));
        }
    }
    Ok(())
}

pub(crate) fn varint_size(value: i64) -> usize {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    let mut size = 1;
    while zigzag >= 0x80 {
        zigzag >>= 7;
        size += 1;
    }
    size
}

/// A zigzag varint (varlong) as Kafka writes them (record_batch.rs reads them).
pub(crate) fn put_varint(out: &mut Vec<u8>, value: i64) {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag >= 0x80 {
        out.push((zigzag as u8) | 0x80);
        zigzag >>= 7;
    }
    out.push(zigzag as u8);
}

/// A length-prefixed part, -1 for null.
pub(crate) fn put_field(out: &mut Vec<u8>, part: Option<&[u8]>) {
    match part {
        Some(part) => {
            put_varint(out, part.len() as i64);
            out.extend_from_slice(part);
        }
        None => put_varint(out, -1),
    }
}

pub(crate) fn field_size(part: Option<&[u8]>) -> usize {
    part.map_or(1, |part| varint_size(part.len() as i64) + part.len())
}

/// aiokafka's `estimate_size_in_bytes` for a record: what the producer checks against max_request_size.
fn estimate(parts: &Parts<'_, '_>, added: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
    if let Some((whole, _, count)) = parts.whole {
        // the parts' sizes are the bytes they take; the header count grows by the added headers
        let mut size = HEADER_SIZE + MAX_RECORD_OVERHEAD + whole.len() - varint_size(count as i64);
        let mut added_count = 0usize;
        for_each_header(&Headers::None, added, |name, value| {
            added_count += 1;
            size += field_size(Some(name.as_bytes())) + field_size(value);
        })?;
        return Ok(size + varint_size((count + added_count) as i64));
    }
    let mut size = HEADER_SIZE + MAX_RECORD_OVERHEAD + field_size(parts.key()) + field_size(parts.value());
    let mut count = 0usize;
    for_each_header(&parts.headers, added, |name, value| {
        count += 1;
        size += varint_size(name.len() as i64) + name.len() + field_size(value);
    })?;
    Ok(size + varint_size(count as i64))
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis() as i64)
}

#[pyclass(module = "xgate_core")]
pub struct BatchWriter {
    batch_size: usize,
    transactional: bool,
    buffer: Vec<u8>,
    /// one record's body and its headers, reused from record to record
    body: Vec<u8>,
    scratch: Vec<u8>,
    first_timestamp: Option<i64>,
    max_timestamp: i64,
    count: i32,
    closed: bool,
    producer: (i64, i16, i32),
    built: Option<Py<PyBytes>>,
}

impl BatchWriter {
    /// Append one record unless the batch is closed, or full and not empty; whether it went in.
    fn push(&mut self, parts: &Parts<'_, '_>, added: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        if self.closed {
            return Ok(false);
        }
        let timestamp = parts.timestamp.unwrap_or_else(now_ms);
        let first = self.first_timestamp.unwrap_or(timestamp);
        let body = &mut self.body;
        body.clear();
        body.push(0); // attributes
        put_varint(body, timestamp - first);
        put_varint(body, i64::from(self.count)); // offset delta
        // the header count goes before the headers: they are written apart first
        let scratch = &mut self.scratch;
        scratch.clear();
        let mut headers = 0i64;
        if let Some((whole, headers_at, count)) = parts.whole {
            // key, value and the headers copied as they lie; the count written anew when headers are added
            for_each_header(&Headers::None, added, |name, value| {
                headers += 1;
                put_field(scratch, Some(name.as_bytes()));
                put_field(scratch, value);
            })?;
            body.extend_from_slice(&whole[..headers_at]);
            if headers == 0 {
                body.extend_from_slice(&whole[headers_at..]);
            } else {
                put_varint(body, count as i64 + headers);
                body.extend_from_slice(&whole[headers_at + varint_size(count as i64)..]);
                body.extend_from_slice(scratch);
            }
        } else {
            put_field(body, parts.key());
            put_field(body, parts.value());
            for_each_header(&parts.headers, added, |name, value| {
                headers += 1;
                put_field(scratch, Some(name.as_bytes()));
                put_field(scratch, value);
            })?;
            put_varint(body, headers);
            body.extend_from_slice(scratch);
        }
        let required = body.len() + varint_size(body.len() as i64);
        // aiokafka's compiled builder (the one its producer runs) keeps a batch below its size, not at it
        if self.count > 0 && self.buffer.len() + required >= self.batch_size {
            self.closed = true; // full: as aiokafka's builder, closed once a record did not fit
            return Ok(false);
        }
        self.first_timestamp = Some(first);
        self.max_timestamp = if self.count == 0 { timestamp } else { self.max_timestamp.max(timestamp) };
        put_varint(&mut self.buffer, self.body.len() as i64);
        self.buffer.extend_from_slice(&self.body);
        self.count += 1;
        Ok(true)
    }
}

#[pymethods]
impl BatchWriter {
    #[new]
    #[pyo3(signature = (batch_size, transactional = false))]
    fn new(batch_size: usize, transactional: bool) -> Self {
        // room for a full batch from the start (bounded: a large batch_size grows as records come)
        let mut buffer = Vec::with_capacity(batch_size.clamp(HEADER_SIZE, RESERVED_MOST));
        buffer.resize(HEADER_SIZE, 0);
        BatchWriter { batch_size, transactional, buffer, body: Vec::new(), scratch: Vec::new(),
                      first_timestamp: None,
                      max_timestamp: 0, count: 0, closed: false, producer: (-1, -1, 0), built: None }
    }

    /// aiokafka's `BatchBuilder.append`: True once appended, None when the batch is full or closed.
    #[pyo3(signature = (*, timestamp, key, value, headers = None))]
    fn append<'py>(&mut self, timestamp: Option<i64>, key: Option<Bound<'py, PyAny>>, value: Option<Bound<'py, PyAny>>,
                   headers: Option<Bound<'py, PyAny>>) -> PyResult<Option<bool>> {
        let parts = Parts {
            key: key.map(|key| optional_bytes(key, "key")).transpose()?.flatten().map(Bytes::Object),
            value: value.map(|value| optional_bytes(value, "value")).transpose()?.flatten().map(Bytes::Object),
            headers: headers.filter(|headers| !headers.is_none()).map_or(Headers::None, Headers::Object),
            timestamp: timestamp.filter(|stamp| *stamp >= 0),
            whole: None,
        };
        Ok(self.push(&parts, None)?.then_some(true))
    }

    /// Append `records[i]` for i in `indexes[start:]`, in order, while they fit (each with its `added[i]` text
    /// headers when `added` is given, a key of None as `default_key`); the position in `indexes` after the
    /// last one appended. Full before the end: the batch is closed, as `append` closes it. `records` is a
    /// list of records or a `Fetched`.
    #[pyo3(signature = (records, indexes, start, default_key = None, added = None))]
    fn extend<'py>(&mut self, records: &Bound<'py, PyAny>, indexes: Vec<usize>, start: usize,
                   default_key: Option<Bound<'py, PyBytes>>, added: Option<Bound<'py, PyList>>) -> PyResult<usize> {
        let records = Records::of(records)?;
        for (position, &index) in indexes.iter().enumerate().skip(start) {
            let parts = parts_at(&records, index, default_key.as_ref())?;
            let extra = added.as_ref().map(|added| added.get_item(index)).transpose()?;
            if !self.push(&parts, extra.as_ref())? {
                return Ok(position);
            }
        }
        Ok(indexes.len())
    }

    fn close(&mut self) {
        self.closed = true;
    }

    fn closed(&self) -> bool {
        self.closed
    }

    fn record_count(&self) -> i32 {
        self.count
    }

    fn size(&self) -> usize {
        self.buffer.len()
    }

    fn _set_producer_state(&mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) {
        self.producer = (producer_id, producer_epoch, base_sequence);
    }

    /// The batch's bytes, its header written now (the producer state set last counts); built once.
    fn _build<'py>(&mut self, py: Python<'py>) -> Py<PyBytes> {
        self.closed = true;
        if let Some(built) = &self.built {
            return built.clone_ref(py);
        }
        let length = (self.buffer.len() - LENGTH_AT - 4) as i32;
        let attributes: i16 = if self.transactional { TRANSACTIONAL } else { 0 };
        let (producer_id, epoch, sequence) = self.producer;
        let mut header = Vec::with_capacity(HEADER_SIZE);
        header.extend(0i64.to_be_bytes()); // base offset: the broker's to set
        header.extend(length.to_be_bytes());
        header.extend((-1i32).to_be_bytes()); // partition leader epoch: none
        header.push(2); // magic
        header.extend(0u32.to_be_bytes()); // crc, below
        header.extend(attributes.to_be_bytes());
        header.extend((self.count - 1).max(0).to_be_bytes()); // last offset delta
        header.extend(self.first_timestamp.unwrap_or(0).to_be_bytes());
        header.extend(if self.count == 0 { 0 } else { self.max_timestamp }.to_be_bytes());
        header.extend(producer_id.to_be_bytes());
        header.extend(epoch.to_be_bytes());
        header.extend(sequence.to_be_bytes());
        header.extend(self.count.to_be_bytes());
        self.buffer[..HEADER_SIZE].copy_from_slice(&header);
        let crc = crc32c(&self.buffer[ATTRIBUTES_AT..]);
        self.buffer[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        let built = PyBytes::new(py, &self.buffer).unbind();
        self.buffer = Vec::new();
        self.built = Some(built.clone_ref(py));
        built
    }
}

/// The sink's partitioner over a list of records (or a `Fetched`): `fixed` when given, else a keyed record's
/// murmur2 partition among `partitions` and a keyless one's `keyless`. Returns each partition's record indexes
/// (partitions in the order first met, records in list order) and the indexes of records whose estimated size
/// is over `max_size` (aiokafka's producer refuses those; the sink sends each alone to fail by itself).
#[pyfunction]
#[pyo3(signature = (records, partitions, keyless, fixed, max_size, default_key = None, added = None))]
pub fn partition_records<'py>(records: &Bound<'py, PyAny>, partitions: Vec<i64>, keyless: i64, fixed: Option<i64>,
                              max_size: usize, default_key: Option<Bound<'py, PyBytes>>,
                              added: Option<Bound<'py, PyList>>) -> PyResult<(Vec<(i64, Vec<usize>)>, Vec<usize>)> {
    let mut groups: Vec<(i64, Vec<usize>)> = Vec::new();
    let mut alone = Vec::new();
    let records = Records::of(records)?;
    for index in 0..records.len() {
        let parts = parts_at(&records, index, default_key.as_ref())?;
        let extra = added.as_ref().map(|added| added.get_item(index)).transpose()?;
        if estimate(&parts, extra.as_ref())? > max_size {
            alone.push(index);
            continue;
        }
        let partition = match (fixed, parts.key()) {
            (Some(fixed), _) => fixed,
            (None, None) => keyless,
            (None, Some(key)) if !partitions.is_empty() => {
                partitions[((murmur2(key) & 0x7FFF_FFFF) as usize) % partitions.len()]
            }
            (None, Some(_)) => keyless,
        };
        match groups.iter_mut().find(|(known, _)| *known == partition) {
            Some((_, indexes)) => indexes.push(index),
            None => groups.push((partition, vec![index])),
        }
    }
    Ok((groups, alone))
}

#[cfg(test)]
mod tests {
    use super::{put_varint, varint_size};

    #[test]
    fn varints_are_zigzag_and_sized() {
        for (value, bytes) in [(0i64, vec![0u8]), (-1, vec![1]), (1, vec![2]), (63, vec![126]), (64, vec![128, 1]),
                               (-65, vec![129, 1]), (150, vec![172, 2])] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(out, bytes, "{value}");
            assert_eq!(varint_size(value), bytes.len());
        }
    }
}
