//! Kafka record batches read in place: the partition data of a produce request (`xgate proxy`), or a fetch's
//! (a Kafka to Kafka route's source, fetched.rs), judged with no Python object made per record.
//!
//! Only the plain case is read here: batches of magic 2, uncompressed, not control batches, each CRC-32C
//! matching, every record and the batch ending where their lengths say. Anything else (an older magic, a
//! codec, a CRC that does not match, bytes that do not read) is not read at all: the caller decodes that data
//! with its Kafka client's reader, so that which batch is refused, and the reason given, stay that reader's.

use crate::batch_writer::{field_size, varint_size};
use crate::event::Record;

/// Where a v2 batch's fields lie (Kafka's DefaultRecordBatch); batch_writer.rs writes the same layout.
pub(crate) const LENGTH_AT: usize = 8; // batchLength: the bytes after it
pub(crate) const MAGIC_AT: usize = 16;
pub(crate) const CRC_AT: usize = 17; // the CRC-32C of everything from the attributes on
pub(crate) const ATTRIBUTES_AT: usize = 21;
pub(crate) const LAST_OFFSET_DELTA_AT: usize = 23;
const FIRST_TIMESTAMP_AT: usize = 27;
const MAX_TIMESTAMP_AT: usize = 35;
pub(crate) const COUNT_AT: usize = 57;
pub(crate) const RECORDS_AT: usize = 61;
pub(crate) const COMPRESSION: i16 = 0x07;
const LOG_APPEND_TIME: i16 = 0x08;
pub(crate) const CONTROL: i16 = 0x20;

/// A header as a record holds it: its name, and its value or null.
type Header<'a> = (&'a str, Option<&'a [u8]>);

/// One record of a batch, its parts borrowed from the request; its headers are `headers[range]` of the read.
pub struct Parsed<'a> {
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub timestamp: i64,
    /// the batch's timestamps are the broker's (LogAppendTime): Kafka's timestamp type 1, else 0
    pub log_append: bool,
    /// the batch's base offset plus the record's delta (a produce request's batches start at 0)
    pub offset: i64,
    pub headers: std::ops::Range<usize>,
    /// the record's bytes from its key on (key, value, header count, headers), as the batch holds them
    pub body: &'a [u8],
    /// where the header count begins in `body`
    pub headers_at: usize,
    /// every length in `body` a varint of the fewest bytes: `body` is byte for byte what a writer writes
    /// from the parts (batch_writer.rs `put_field`), so that a writer may copy it whole
    pub canonical: bool,
}

/// Every record of `data` (batches one after another) with the headers of all of them, or None when the data
/// is not plainly readable here (module docs).
pub fn read<'a>(data: &'a [u8]) -> Option<(Vec<Parsed<'a>>, Vec<Header<'a>>)> {
    let mut records = Vec::new();
    let mut headers = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let length = usize::try_from(int32(data, at + LENGTH_AT)?).ok()?;
        let batch = data.get(at..(at + LENGTH_AT + 4).checked_add(length)?)?;
        read_batch(batch, &mut records, &mut headers)?;
        at += batch.len();
    }
    Some((records, headers))
}

fn read_batch<'a>(batch: &'a [u8], records: &mut Vec<Parsed<'a>>, headers: &mut Vec<Header<'a>>) -> Option<()> {
    if batch.len() < RECORDS_AT || batch[MAGIC_AT] != 2 {
        return None;
    }
    let attributes = i16::from_be_bytes(batch[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].try_into().ok()?);
    if attributes & (COMPRESSION | CONTROL) != 0 {
        return None;
    }
    let crc = u32::from_be_bytes(batch[CRC_AT..CRC_AT + 4].try_into().ok()?);
    if crc32c(&batch[ATTRIBUTES_AT..]) != crc {
        return None;
    }
    let base_offset = int64(batch, 0)?;
    let first_timestamp = int64(batch, FIRST_TIMESTAMP_AT)?;
    let max_timestamp = int64(batch, MAX_TIMESTAMP_AT)?;
    let count = usize::try_from(int32(batch, COUNT_AT)?).ok()?;
    let mut at = RECORDS_AT;
    for _ in 0..count {
        let length = usize::try_from(varint(batch, &mut at)?).ok()?;
        let start = at;
        varint(batch, &mut at)?; // the record's attributes: unused
        let delta = varint(batch, &mut at)?;
        let offset = base_offset.checked_add(varint(batch, &mut at)?)?;
        let body_at = at;
        let key = bytes(batch, &mut at)?;
        let value = bytes(batch, &mut at)?;
        let headers_at = at - body_at;
        let count = usize::try_from(varint(batch, &mut at)?).ok()?;
        let first = headers.len();
        let mut written = field_size(key) + field_size(value) + varint_size(count as i64);
        for _ in 0..count {
            let name = std::str::from_utf8(bytes(batch, &mut at)??).ok()?;
            let value = bytes(batch, &mut at)?;
            written += field_size(Some(name.as_bytes())) + field_size(value);
            headers.push((name, value));
        }
        if at - start != length {
            return None;
        }
        let log_append = attributes & LOG_APPEND_TIME != 0;
        let timestamp = if log_append { max_timestamp } else { first_timestamp.checked_add(delta)? };
        let body = &batch[body_at..at];
        records.push(Parsed { key, value, timestamp, log_append, offset, headers: first..headers.len(), body,
                              headers_at, canonical: written == body.len() });
    }
    (at == batch.len()).then_some(())
}

impl<'a> Parsed<'a> {
    /// Fill `record` (its header vector reused from record to record) with this record's parts.
    pub fn fill(&self, topic: &'a str, partition: i64, headers: &[Header<'a>], record: &mut Record<'a>) {
        record.topic = Some(topic);
        record.partition = Some(partition);
        record.key = self.key;
        record.headers.clear();
        record.headers.extend_from_slice(&headers[self.headers.clone()]);
        record.value = self.value.unwrap_or_default();
        record.timestamp = Some(self.timestamp);
    }
}

pub(crate) fn int32(data: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

pub(crate) fn int64(data: &[u8], at: usize) -> Option<i64> {
    Some(i64::from_be_bytes(data.get(at..at + 8)?.try_into().ok()?))
}

/// A zigzag varint (varlong) as Kafka writes them; None past the end or past ten bytes.
fn varint(data: &[u8], at: &mut usize) -> Option<i64> {
    let mut value: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *data.get(*at)?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some((value >> 1) as i64 ^ -((value & 1) as i64));
        }
    }
    None
}

/// Nullable bytes: a varint length (negative: null), then that many bytes.
fn bytes<'a>(data: &'a [u8], at: &mut usize) -> Option<Option<&'a [u8]>> {
    let length = varint(data, at)?;
    if length < 0 {
        return Some(None);
    }
    let end = at.checked_add(usize::try_from(length).ok()?)?;
    let found = data.get(*at..end)?;
    *at = end;
    Some(Some(found))
}

/// CRC-32C (Castagnoli), as a record batch v2 carries it: the `crc32c` crate, which uses the CPU's CRC
/// instruction where there is one (a 16 KB batch in about a microsecond; eight-byte table steps took ~10).
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::batch_writer::{put_field, put_varint};

    /// A batch as a producer writes one: (key, value, headers) per record, timestamps 1000 + index.
    pub(crate) fn batch(records: &[(Option<&[u8]>, Option<&[u8]>, Vec<(&str, Option<&[u8]>)>)], attributes: i16)
                        -> Vec<u8> {
        let mut body = Vec::new();
        for (index, (key, value, headers)) in records.iter().enumerate() {
            let mut record = vec![0u8];
            put_varint(&mut record, index as i64); // timestamp delta
            put_varint(&mut record, index as i64); // offset delta
            put_field(&mut record, *key);
            put_field(&mut record, *value);
            put_varint(&mut record, headers.len() as i64);
            for (name, value) in headers {
                put_field(&mut record, Some(name.as_bytes()));
                put_field(&mut record, *value);
            }
            put_varint(&mut body, record.len() as i64);
            body.extend(record);
        }
        let mut after_crc = Vec::new();
        after_crc.extend(attributes.to_be_bytes());
        after_crc.extend((records.len() as i32 - 1).to_be_bytes());
        after_crc.extend(1000i64.to_be_bytes());
        after_crc.extend(2000i64.to_be_bytes());
        after_crc.extend((-1i64).to_be_bytes());
        after_crc.extend((-1i16).to_be_bytes());
        after_crc.extend((-1i32).to_be_bytes());
        after_crc.extend((records.len() as i32).to_be_bytes());
        after_crc.extend(body);
        let mut out = Vec::new();
        out.extend(0i64.to_be_bytes());
        out.extend(((after_crc.len() + 9) as i32).to_be_bytes());
        out.extend(0i32.to_be_bytes());
        out.push(2);
        out.extend(crc32c(&after_crc).to_be_bytes());
        out.extend(after_crc);
        out
    }

    #[test]
    fn crc32c_of_the_check_string() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn reads_records_and_headers_of_two_batches() {
        let mut data = batch(&[(Some(b"k"), Some(b"{}"), vec![("ce_id", Some(b"1")), ("n", None)]),
                               (None, None, vec![])], 0);
        data.extend(batch(&[(None, Some(b"v"), vec![("h", Some(b""))])], 0));
        let (records, headers) = read(&data).expect("readable");
        assert_eq!(records.len(), 3);
        assert_eq!((records[0].key, records[0].value, records[0].timestamp), (Some(&b"k"[..]), Some(&b"{}"[..]), 1000));
        assert_eq!(&headers[records[0].headers.clone()], &[("ce_id", Some(&b"1"[..])), ("n", None)]);
        assert_eq!((records[1].key, records[1].value, records[1].timestamp), (None, None, 1001));
        assert_eq!(&headers[records[2].headers.clone()], &[("h", Some(&b""[..]))]);
    }

    #[test]
    fn log_append_time_gives_every_record_the_max_timestamp() {
        let data = batch(&[(None, Some(b"a"), vec![]), (None, Some(b"b"), vec![])], LOG_APPEND_TIME);
        let (records, _) = read(&data).expect("readable");
        assert!(records.iter().all(|r| r.timestamp == 2000));
    }

    #[test]
    fn anything_not_plain_is_left_to_the_caller() {
        let plain = batch(&[(None, Some(b"a"), vec![])], 0);
        assert!(read(&plain).is_some());
        let mut bad_crc = plain.clone();
        *bad_crc.last_mut().unwrap() ^= 1;
        assert!(read(&bad_crc).is_none());
        assert!(read(&batch(&[(None, Some(b"a"), vec![])], 1)).is_none()); // gzip
        assert!(read(&batch(&[(None, Some(b"a"), vec![])], CONTROL)).is_none());
        assert!(read(&plain[..plain.len() - 1]).is_none()); // truncated
        let mut magic1 = plain.clone();
        magic1[MAGIC_AT] = 1;
        assert!(read(&magic1).is_none());
        assert!(read(&batch(&[(None, Some(b"a"), vec![("\u{e9}", None)])], 0)).is_some());
        let mut bad_name = batch(&[(None, Some(b"a"), vec![("x", None)])], 0);
        let at = bad_name.iter().rposition(|&b| b == b'x').unwrap();
        bad_name[at] = 0xff;
        // the CRC written over the bad name still matches: the name itself is refused
        let crc = crc32c(&bad_name[ATTRIBUTES_AT..]);
        bad_name[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        assert!(read(&bad_name).is_none());
        assert_eq!(read(&[]).map(|(r, _)| r.len()), Some(0));
    }
}
