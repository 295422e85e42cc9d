//! xgate's judging core. The Python compiler lowers a compiled registry to a plan (gateway/compiler/lower.py);
//! `Core` is built once from it and judges a batch of Kafka records in one call, with the GIL released while
//! it judges. Keys and values are borrowed from their Python objects; header bytes are copied (`Headers` says why).
//!
//! `judge_arrow` takes the same records as Arrow columns (Spark's `mapInArrow`), with no Python object per row.
//!
//! Each message's result is a plain value: an int (the index of the definition it conforms to), a tuple
//! `(closest index or None, violations)` where each violation is `(path, rule index, expected, actual,
//! message)`, or None when a candidate has no lowered form and the Python judge must decide.

mod arrow;
mod batch_writer;
mod check;
mod event;
mod fetched;
mod json;
mod murmur;
mod judge;
mod payload;
mod plan;
mod pyrepr;
mod reasons;
mod record_batch;
mod recorded;
mod rules;
mod tape;
mod templates;
mod types;
mod value;
mod verdict;

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::event::Record;
use crate::judge::Core as Judge;
use crate::pyrepr::Actual;
use crate::verdict::{Expected, Outcome, Violation};

// the judging allocates small, short-lived buffers for every message: mimalloc serves them from per-thread
// pages, whatever state the Python process left the C heap in
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Records held (their objects referenced) per release of the GIL: few enough that letting go of them
/// touches objects still in the cache (a binary record holds ~30), many enough that the release is cheap.
const HELD_RECORDS: usize = 64;

/// One record's parts, held as Python-backed buffers so that they outlive the GIL's release. Its headers
/// are a range of the chunk's `Headers`, copied out: one set of buffers for the whole chunk, not one per record.
struct Held {
    topic: Option<PyBackedStr>,
    partition: Option<i64>,
    key: Option<PyBackedBytes>,
    headers: std::ops::Range<usize>,
    value: Option<PyBackedBytes>,
    timestamp: Option<i64>,
}

/// The headers of a chunk of held records, in record order: names and values copied into two buffers, each
/// header a pair of spans. A binary record's header values are a few dozen bytes: copying them cost less than
/// holding each as a Python-backed buffer (a reference taken and later let go per name and per value), ~10%
/// of a conformant binary record's judging in an interleaved A/B.
#[derive(Default)]
struct Headers {
    names: String,
    values: Vec<u8>,
    spans: Vec<(std::ops::Range<usize>, Option<std::ops::Range<usize>>)>,
}

impl Headers {
    fn len(&self) -> usize {
        self.spans.len()
    }

    /// Forget the headers from `count` on (their bytes stay until `clear`).
    fn truncate(&mut self, count: usize) {
        self.spans.truncate(count)
    }

    fn clear(&mut self) {
        self.names.clear();
        self.values.clear();
        self.spans.clear();
    }

    fn push(&mut self, name: &str, value: Option<&[u8]>) {
        let name_span = self.names.len()..self.names.len() + name.len();
        self.names.push_str(name);
        let value_span = value.map(|value| {
            let span = self.values.len()..self.values.len() + value.len();
            self.values.extend_from_slice(value);
            span
        });
        self.spans.push((name_span, value_span));
    }

    fn get(&self, index: usize) -> (&str, Option<&[u8]>) {
        let (name, value) = &self.spans[index];
        (&self.names[name.clone()], value.clone().map(|value| &self.values[value]))
    }
}

impl Held {
    /// Fill `record` (its header vector reused from record to record) with this record's parts.
    fn fill<'a>(&'a self, headers: &'a Headers, record: &mut Record<'a>) {
        record.topic = self.topic.as_deref();
        record.partition = self.partition;
        record.key = self.key.as_deref();
        record.headers.clear();
        record.headers.extend(self.headers.clone().map(|index| headers.get(index)));
        record.value = self.value.as_deref().unwrap_or_default();
        record.timestamp = self.timestamp;
    }
}

/// A record: a tuple `(topic, partition, key, headers, value, timestamp)` or any object with those
/// attributes (aiokafka's ConsumerRecord). Its headers are appended to `headers`; on an error, whatever
/// was appended stays (the caller cuts it off).
fn hold<'py>(item: &Bound<'py, PyAny>, headers: &mut Headers) -> PyResult<Held> {
    let py = item.py();
    let tuple = item.cast::<PyTuple>().ok();
    // attribute names interned once: a fresh str per lookup would cost more than the lookup
    let part = |index: usize, name: &Bound<'py, PyString>| -> PyResult<Bound<'py, PyAny>> {
        match tuple {
            Some(tuple) => tuple.get_item(index),
            None => item.getattr(name),
        }
    };
    let headers_object = part(3, intern!(py, "headers"))?;
    let first = headers.len();
    if !headers_object.is_none() {
        // a (str, bytes) tuple is read in place; any other pair (a list, say) through PyO3's extraction
        let mut copy = |pair: &Bound<'py, PyAny>| -> PyResult<()> {
            match pair.cast::<PyTuple>() {
                Ok(tuple) if tuple.len() == 2 => {
                    let name = tuple.get_borrowed_item(0)?;
                    let name = name.cast::<PyString>()?;
                    let name = name.to_str()?;
                    let value = tuple.get_borrowed_item(1)?;
                    match value.cast::<PyBytes>() {
                        Ok(bytes) => headers.push(name, Some(bytes.as_bytes())),
                        Err(_) if value.is_none() => headers.push(name, None),
                        // a bytearray (or any buffer PyO3 reads as bytes) is judged here as before, copied
                        Err(_) => headers.push(name, Some(&value.extract::<PyBackedBytes>()?)),
                    }
                }
                _ => {
                    let (name, value): (PyBackedStr, Option<PyBackedBytes>) = pair.extract()?;
                    headers.push(&name, value.as_deref());
                }
            }
            Ok(())
        };
        // a list (as a consumer gives) walked by index, anything else iterated
        match headers_object.cast::<PyList>() {
            Ok(list) => list.iter().try_for_each(|pair| copy(&pair))?,
            Err(_) => headers_object.try_iter()?.try_for_each(|pair| copy(&pair?))?,
        }
    }
    Ok(Held {
        topic: part(0, intern!(py, "topic"))?.extract()?,
        partition: part(1, intern!(py, "partition"))?.extract()?,
        key: part(2, intern!(py, "key"))?.extract()?,
        headers: first..headers.len(),
        value: part(4, intern!(py, "value"))?.extract()?,
        timestamp: part(5, intern!(py, "timestamp"))?.extract()?,
    })
}

/// The plan's texts from the Python side: `texts(kind, index)` with kind "rules" or "schema" gives the
/// JSON text (lower.py `LoweredPlan.text_of`), called with the GIL taken back on the first message that
/// needs it. A call that fails or gives no str leaves the definition with the Python judge.
struct PyTexts(Py<PyAny>);

impl PyTexts {
    fn ask(&self, kind: &str, index: usize) -> Option<String> {
        Python::attach(|py| self.0.call1(py, (kind, index)).and_then(|text| text.extract::<String>(py)).ok())
    }
}

impl plan::Texts for PyTexts {
    fn rules(&self, definition: usize) -> Option<String> {
        self.ask("rules", definition)
    }

    fn schema(&self, schema: usize) -> Option<String> {
        self.ask("schema", schema)
    }
}

#[pyclass(frozen, module = "xgate_core")]
struct Core {
    judge: Judge,
    /// the document values violations name as `expected` (lower.py's constants), as they were
    constants: Vec<Py<PyAny>>,
}

#[pymethods]
impl Core {
    #[new]
    fn new(plan: &str, texts: Py<PyAny>, constants: Vec<Py<PyAny>>) -> PyResult<Core> {
        let plan: plan::Plan = serde_json::from_str(plan)
            .map_err(|e| PyValueError::new_err(format!("the plan does not read: {e}")))?;
        let judge = Judge::from_plan(plan, Box::new(PyTexts(texts))).map_err(PyValueError::new_err)?;
        Ok(Core { judge, constants })
    }

    /// The position of an endpoint in the plan.
    fn endpoint(&self, id: &str) -> PyResult<usize> {
        self.judge.endpoint_ids.get(id).copied().ok_or_else(|| PyKeyError::new_err(id.to_string()))
    }

    /// Judge a batch of Kafka records read on one endpoint; one result per record, in order.
    fn judge_kafka<'py>(&self, py: Python<'py>, endpoint: usize, records: &Bound<'py, PyAny>)
                        -> PyResult<Bound<'py, PyList>> {
        self.known(endpoint)?;
        let judge = &self.judge;
        let out = PyList::empty(py);
        let mut items = records.try_iter()?;
        let mut held: Vec<Option<Held>> = Vec::with_capacity(HELD_RECORDS);
        let mut headers: Headers = Headers::default();
        loop {
            // a record whose parts are not of the types a Kafka client gives (str names, bytes values) is
            // left to the Python judge, which reads any shape
            for item in items.by_ref().take(HELD_RECORDS) {
                let first = headers.len();
                let one = hold(&item?, &mut headers).ok();
                if one.is_none() {
                    headers.truncate(first);
                }
                held.push(one);
            }
            if held.is_empty() {
                return Ok(out);
            }
            let outcomes: Vec<Outcome> = py.detach(|| {
                let mut record = Record::empty();
                // every header value of the chunk validated as UTF-8 in one pass (record.header_text)
                record.values_text = std::str::from_utf8(&headers.values).ok();
                held.iter().map(|h| match h {
                    None => Outcome::Defer,
                    Some(h) => {
                        h.fill(&headers, &mut record);
                        judge.judge(endpoint, &record)
                    }
                }).collect()
            });
            // the records' references are let go while their objects are still in the cache
            held.clear();
            headers.clear();
            for outcome in outcomes {
                out.append(self.result(py, outcome)?)?;
            }
        }
    }

    /// Judge the records of a produce request's partition data (Kafka record batches) on one endpoint, read
    /// in place (record_batch.rs). Returns `(count, [(index, result)])`, with a result as `judge_kafka` gives
    /// it for every record that did not conform, or None when the data is not plain uncompressed v2 batches
    /// that read cleanly: the caller then decodes it with its Kafka client and judges the records it gets.
    fn judge_batches<'py>(&self, py: Python<'py>, endpoint: usize, topic: PyBackedStr, partition: i64,
                          data: PyBackedBytes) -> PyResult<Option<(usize, Bound<'py, PyList>)>> {
        self.known(endpoint)?;
        let judge = &self.judge;
        let judged: Option<(usize, Vec<(usize, Outcome)>)> = py.detach(|| {
            let (records, headers) = record_batch::read(&data)?;
            let mut record = Record::empty();
            let others = records.iter().enumerate().filter_map(|(index, parsed)| {
                parsed.fill(&topic, partition, &headers, &mut record);
                match judge.judge(endpoint, &record) {
                    Outcome::Conformant(_) => None,
                    outcome => Some((index, outcome)),
                }
            }).collect();
            Some((records.len(), others))
        });
        let Some((count, others)) = judged else { return Ok(None) };
        let out = PyList::empty(py);
        for (index, outcome) in others {
            out.append((index, self.result(py, outcome)?))?;
        }
        Ok(Some((count, out)))
    }

    /// Judge a route's fetched batches read in place (fetched.rs): `batches` as (topic, partition, data, start,
    /// end), each span one plain batch. Returns the records as a `Fetched`, one result per record, as
    /// `judge_kafka` gives it for the ConsumerRecord aiokafka would make of the record, and, given `reasons`,
    /// each nonconformant record's `xgate-*` headers as remap.py `reason_headers` gives them (reasons.rs; None
    /// for any other record and where remap.py must write them). None when a span does not read (the caller
    /// decodes those batches with its Kafka client).
    #[allow(clippy::type_complexity)]
    #[pyo3(signature = (endpoint, batches, reasons = None))]
    fn judge_fetched<'py>(&self, py: Python<'py>, endpoint: usize,
                          batches: Vec<(PyBackedStr, i64, PyBackedBytes, usize, usize)>,
                          reasons: Option<&Bound<'py, reasons::ReasonWriter>>)
                          -> PyResult<Option<(fetched::Fetched, Bound<'py, PyList>, Option<Bound<'py, PyList>>)>> {
        self.known(endpoint)?;
        let judge = &self.judge;
        let writer = reasons.map(Bound::get);
        // each batch's topic, as the record's `xgate-source-address` (one str for all of its records)
        let topics = batches.iter().map(|(topic, ..)| PyString::new(py, topic)).collect::<Vec<_>>();
        let judged = py.detach(|| {
            let mut outcomes = Vec::new();
            let mut written = Vec::new();
            let fetched = fetched::Fetched::read(batches, |topic, partition, parsed, headers| {
                let mut record = Record::empty();
                parsed.fill(topic, partition, headers, &mut record);
                let outcome = judge.judge(endpoint, &record);
                if let Some(writer) = writer {
                    written.push(match &outcome {
                        Outcome::Nonconformant(closest, violations) => {
                            writer.write(*closest, violations, topic, partition, parsed.offset)
                        }
                        _ => None,
                    });
                }
                outcomes.push(outcome);
            })?;
            Some((fetched, outcomes, written))
        });
        let Some((fetched, outcomes, written)) = judged else { return Ok(None) };
        let out = PyList::empty(py);
        for outcome in outcomes {
            out.append(self.result(py, outcome)?)?;
        }
        let headers = match writer {
            None => None,
            Some(writer) => {
                let listed = PyList::empty(py);
                for (record, one) in fetched.records.iter().zip(written) {
                    match one {
                        Some(one) => listed.append(writer.headers(py, one, &topics[record.batch])?)?,
                        None => listed.append(py.None())?,
                    }
                }
                Some(listed)
            }
        };
        Ok(Some((fetched, out, headers)))
    }

    /// Judge `rows` Kafka records given as Arrow columns (arrow.rs): `endpoints` holds each row's endpoint
    /// position as a little-endian int32 (-1: the Python judge decides). Returns `(conformant, others)`: an
    /// int32 per row, the definition a conformant row conforms to or -1, and `[(row, result)]` for every other
    /// row, its result as `judge_kafka` gives it.
    #[allow(clippy::too_many_arguments)]
    fn judge_arrow<'py>(&self, py: Python<'py>, rows: usize, endpoints: PyBackedBytes, topic: VariableBuffers,
                        partition: FixedBuffers, key: VariableBuffers, value: VariableBuffers,
                        headers: FixedBuffers, header_keys: VariableBuffers, header_values: VariableBuffers,
                        timestamp: FixedBuffers) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyList>)> {
        if endpoints.len() != rows * 4 {
            return Err(PyValueError::new_err("an endpoint position (int32) for each row"));
        }
        let columns = arrow::Columns {
            topic: variable(&topic),
            partition: fixed(&partition, 4),
            key: variable(&key),
            value: variable(&value),
            headers: arrow::Headers { validity: headers.0.as_deref(), offsets: &headers.1, offset: headers.2,
                                      keys: variable(&header_keys), values: variable(&header_values) },
            timestamp: fixed(&timestamp, 8),
        };
        let judge = &self.judge;
        let count = judge.endpoint_ids.len();
        let outcomes: Vec<Outcome> = py.detach(|| {
            endpoints.chunks_exact(4).enumerate().map(|(row, position)| {
                let position = i32::from_le_bytes([position[0], position[1], position[2], position[3]]);
                match (usize::try_from(position), columns.record(row)) {
                    (Ok(at), Some(record)) if at < count => judge.judge(at, &record),
                    _ => Outcome::Defer,
                }
            }).collect()
        });
        let mut conformant = Vec::with_capacity(rows * 4);
        let others = PyList::empty(py);
        for (row, outcome) in outcomes.into_iter().enumerate() {
            let number: i32 = match outcome {
                Outcome::Conformant(d) => i32::try_from(d).map_err(|_| PyValueError::new_err("too many definitions"))?,
                other => {
                    others.append((row, self.result(py, other)?))?;
                    -1
                }
            };
            conformant.extend_from_slice(&number.to_le_bytes());
        }
        Ok((PyBytes::new(py, &conformant), others))
    }
}

/// An Arrow binary or string column's buffers as the Python side sends them: (validity, offsets, data, offset).
type VariableBuffers = (Option<PyBackedBytes>, PyBackedBytes, PyBackedBytes, usize);
/// A fixed-width integer column's: (validity, data, offset).
type FixedBuffers = (Option<PyBackedBytes>, PyBackedBytes, usize);

fn variable(buffers: &VariableBuffers) -> arrow::Variable<'_> {
    arrow::Variable { validity: buffers.0.as_deref(), offsets: &buffers.1, data: &buffers.2, offset: buffers.3 }
}

fn fixed(buffers: &FixedBuffers, width: usize) -> arrow::Fixed<'_> {
    arrow::Fixed { validity: buffers.0.as_deref(), data: &buffers.1, offset: buffers.2, width }
}

/// `xgate check`'s judge of recorded lines (check.rs), over one Core, with the tables the Python side
/// writes once (gateway/check.py `native_checker`).
#[pyclass(frozen, module = "xgate_core")]
struct Checker {
    core: Py<Core>,
    tables: check::Tables,
    default_endpoint: Option<usize>,
    kafka: Vec<bool>,
    threads: usize,
}

#[pymethods]
impl Checker {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(core: Py<Core>, default_endpoint: Option<usize>, kafka: Vec<bool>, conformant_lines: Vec<String>,
           heads: Vec<String>, rule_names: Vec<String>, constants: Vec<Option<String>>, threads: usize)
           -> PyResult<Checker> {
        let definitions = core.get().judge.definition_count();
        if conformant_lines.len() != definitions || heads.len() != definitions + 1 {
            return Err(PyValueError::new_err("a conformant line for each definition and a head for each, plus one"));
        }
        let tables = check::Tables { conformant_lines, heads,
                                     violations: reasons::ViolationText { rule_names, constants } };
        Ok(Checker { core, tables, default_endpoint, kafka, threads })
    }

    /// Judge a chunk of recorded lines: `(segments, deferred, (conformant, nonconformant, unmatched, rules))`,
    /// the output being segments[0] + verdict(deferred[0]) + segments[1] + ...; with `write` false, counts only.
    #[allow(clippy::type_complexity)]
    fn check<'py>(&self, py: Python<'py>, chunk: PyBackedBytes, write: bool)
                  -> PyResult<(Vec<Bound<'py, PyBytes>>, Vec<Bound<'py, PyBytes>>, (Vec<u64>, Vec<u64>, u64, Vec<u64>))> {
        let judge = &self.core.get().judge;
        let defaults = recorded::Defaults { endpoint: self.default_endpoint, ids: &judge.endpoint_ids, kafka: &self.kafka };
        let checked = py.detach(|| check::check(judge, &defaults, &self.tables, &chunk, write, self.threads));
        let segments = checked.segments.iter().map(|s| PyBytes::new(py, s.as_bytes())).collect();
        let deferred = checked.deferred.iter().map(|d| PyBytes::new(py, d)).collect();
        let c = checked.counts;
        Ok((segments, deferred, (c.conformant, c.nonconformant, c.unmatched, c.rules)))
    }
}

impl Core {
    /// An endpoint position the plan has, or the KeyError a caller gets for one it does not.
    fn known(&self, endpoint: usize) -> PyResult<()> {
        if endpoint >= self.judge.endpoint_ids.len() {
            return Err(PyKeyError::new_err(endpoint));
        }
        Ok(())
    }

    /// One message's result as Python gets it (the module docs say its shape).
    fn result<'py>(&self, py: Python<'py>, outcome: Outcome) -> PyResult<Bound<'py, PyAny>> {
        Ok(match outcome {
            Outcome::Conformant(d) => d.into_pyobject(py)?.into_any(),
            Outcome::Defer => py.None().into_bound(py),
            Outcome::Nonconformant(d, violations) => {
                let found = violations.into_iter().map(|v| self.violation(py, v)).collect::<PyResult<Vec<_>>>()?;
                (d, PyList::new(py, found)?).into_pyobject(py)?.into_any()
            }
        })
    }

    fn violation<'py>(&self, py: Python<'py>, v: Violation) -> PyResult<Bound<'py, PyTuple>> {
        let expected: Bound<'py, PyAny> = match v.expected {
            Expected::Str(text) => text.into_pyobject(py)?.into_any(),
            Expected::Const(index) => self.constants[index].bind(py).clone(),
        };
        let actual: Bound<'py, PyAny> = match v.actual {
            Actual::Null => py.None().into_bound(py),
            Actual::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
            Actual::Int(i) => i.into_pyobject(py)?.into_any(),
            Actual::Float(f) => f.into_pyobject(py)?.into_any(),
            Actual::Str(s) => s.into_pyobject(py)?.into_any(),
        };
        PyTuple::new(py, [v.path.into_pyobject(py)?.into_any(), (v.rule as u8).into_pyobject(py)?.into_any(),
                          expected, actual, v.message.into_pyobject(py)?.into_any()])
    }
}

/// Kafka's default partitioner's hash of a record key (murmur.rs).
#[pyfunction]
fn murmur2(key: &[u8]) -> u32 {
    murmur::murmur2(key)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Core>()?;
    m.add_function(wrap_pyfunction!(murmur2, m)?)?;
    m.add_class::<batch_writer::BatchWriter>()?;
    m.add_function(wrap_pyfunction!(batch_writer::partition_records, m)?)?;
    m.add_class::<fetched::Fetched>()?;
    m.add_function(wrap_pyfunction!(fetched::split_batches, m)?)?;
    m.add_class::<Checker>()?;
    m.add_class::<reasons::ReasonWriter>()?;
    m.add("PLAN_VERSION", plan::PLAN_VERSION)?;
    Ok(())
}
