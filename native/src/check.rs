//! `xgate check`'s loop over a chunk of recorded lines (gateway/check.py `check_stream` is the caller and the
//! reference): each line read (recorded.rs), judged, its verdict line written as orjson writes
//! `Verdict.as_dict()`, and counted, the chunk's halves on two threads. A line this side does not read or
//! whose verdict it cannot write is handed back, in place, for the Python side to judge and write.
//!
//! Lines split as Python's text mode splits them (universal newlines: `\n`, `\r\n` and `\r` end a line); an
//! empty line is blank and gives nothing. A line that is only other whitespace is handed back (Python's
//! `str.isspace` decides it).

use crate::judge::Core as Judge;
use crate::reasons::ViolationText;
use crate::recorded::{read_kafka, Defaults};
use crate::tape;
use crate::verdict::{Outcome, Violation};

/// What the Python side writes once and the lines here repeat: each a piece of orjson text.
pub struct Tables {
    /// the whole line of a message conforming to each definition
    pub conformant_lines: Vec<String>,
    /// `{"verdict":"nonconformant","messagegroupid":...,"messageid":...,"violations":[` for each definition,
    /// then one naming none
    pub heads: Vec<String>,
    /// how each violation is written
    pub violations: ViolationText,
}

/// How many verdicts of each kind a chunk gave (gateway/check.py `Summary` is built from them).
#[derive(Default)]
pub struct Counts {
    pub conformant: Vec<u64>,
    /// nonconformant, by the closest definition
    pub nonconformant: Vec<u64>,
    /// nonconformant naming no definition
    pub unmatched: u64,
    /// violations by rule number
    pub rules: Vec<u64>,
}

impl Counts {
    fn new(definitions: usize, rules: usize) -> Counts {
        Counts { conformant: vec![0; definitions], nonconformant: vec![0; definitions], unmatched: 0, rules: vec![0; rules] }
    }

    fn add(&mut self, other: &Counts) {
        for (mine, theirs) in [(&mut self.conformant, &other.conformant), (&mut self.nonconformant, &other.nonconformant),
                               (&mut self.rules, &other.rules)] {
            mine.iter_mut().zip(theirs).for_each(|(a, b)| *a += b);
        }
        self.unmatched += other.unmatched;
    }
}

/// A chunk's output: the written text in `segments`, with each handed-back line between two of them.
pub struct Checked {
    pub segments: Vec<String>,
    /// the handed-back lines, each with `\n` where its line ended (as Python's text mode reads it)
    pub deferred: Vec<Vec<u8>>,
    pub counts: Counts,
}

impl Checked {
    fn append(&mut self, mut later: Checked) {
        let first = later.segments.remove(0);
        self.segments.last_mut().expect("a part has a segment").push_str(&first);
        self.segments.extend(later.segments);
        self.deferred.extend(later.deferred);
        self.counts.add(&later.counts);
    }
}

/// Below this many bytes a chunk is judged on one thread (a thread costs more than it saves).
const SPLIT_BYTES: usize = 64 * 1024;

pub fn check(judge: &Judge, defaults: &Defaults, tables: &Tables, chunk: &[u8], write: bool, threads: usize) -> Checked {
    let parts = split(chunk, threads.max(1));
    std::thread::scope(|scope| {
        let later: Vec<_> = parts[1..].iter()
            .map(|part| scope.spawn(move || check_part(judge, defaults, tables, part, write)))
            .collect();
        let mut checked = check_part(judge, defaults, tables, parts[0], write);
        for handle in later {
            checked.append(handle.join().expect("a judging thread does not panic"));
        }
        checked
    })
}

/// The chunk in `count` parts of about equal size, each ending where a line ends.
fn split(chunk: &[u8], count: usize) -> Vec<&[u8]> {
    if count == 1 || chunk.len() < SPLIT_BYTES {
        return vec![chunk];
    }
    let mut parts = Vec::with_capacity(count);
    let mut rest = chunk;
    for left in (2..=count).rev() {
        let aim = rest.len() / left;
        let Some(end) = memchr::memchr(b'\n', &rest[aim..]).map(|at| aim + at + 1) else { break };
        parts.push(&rest[..end]);
        rest = &rest[end..];
    }
    parts.push(rest);
    parts
}

fn check_part(judge: &Judge, defaults: &Defaults, tables: &Tables, part: &[u8], write: bool) -> Checked {
    let mut counts = Counts::new(tables.conformant_lines.len(), tables.violations.rule_names.len());
    let mut out = String::with_capacity(if write { part.len() / 2 } else { 0 });
    let mut segments = Vec::new();
    let mut deferred = Vec::new();
    let mut at = 0;
    while at < part.len() {
        let (line, next, ended) = match memchr::memchr2(b'\n', b'\r', &part[at..]) {
            Some(found) => {
                let end = at + found;
                let crlf = part[end] == b'\r' && part.get(end + 1) == Some(&b'\n');
                (&part[at..end], end + 1 + usize::from(crlf), true)
            }
            None => (&part[at..], part.len(), false),
        };
        at = next;
        if line.is_empty() {
            continue;
        }
        if !judge_line(judge, defaults, tables, line, write, &mut out, &mut counts) {
            segments.push(std::mem::take(&mut out));
            let mut handed = line.to_vec();
            if ended {
                handed.push(b'\n');
            }
            deferred.push(handed);
        }
    }
    segments.push(out);
    Checked { segments, deferred, counts }
}

/// One line judged, written and counted; false (nothing written or counted) when Python must do it.
fn judge_line(judge: &Judge, defaults: &Defaults, tables: &Tables, line: &[u8], write: bool, out: &mut String,
              counts: &mut Counts) -> bool {
    let Some(doc) = tape::parse(line) else { return false };
    let Some(recorded) = read_kafka(&doc, defaults) else { return false };
    match judge.judge(recorded.endpoint, &recorded.record) {
        Outcome::Defer => false,
        Outcome::Conformant(d) => {
            if write {
                out.push_str(&tables.conformant_lines[d]);
            }
            counts.conformant[d] += 1;
            true
        }
        Outcome::Nonconformant(closest, violations) => {
            let mark = out.len();
            if !write_nonconformant(out, tables, closest, &violations) {
                out.truncate(mark);
                return false;
            }
            if !write {
                out.truncate(mark);
            }
            match closest {
                Some(d) => counts.nonconformant[d] += 1,
                None => counts.unmatched += 1,
            }
            for v in &violations {
                counts.rules[v.rule as usize] += 1;
            }
            true
        }
    }
}

/// orjson's `Verdict.as_dict()` line for a nonconformant verdict; false where a value is one orjson does not
/// write (reasons.rs `ViolationText::write`).
fn write_nonconformant(out: &mut String, tables: &Tables, closest: Option<usize>, violations: &[Violation]) -> bool {
    out.push_str(&tables.heads[closest.unwrap_or(tables.heads.len() - 1)]);
    for (i, v) in violations.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if !tables.violations.write(out, v) {
            return false;
        }
    }
    out.push_str("]}\n");
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_end_where_lines_end() {
        let line = "x".repeat(999) + "\n";
        let chunk = line.repeat(200);
        let parts = split(chunk.as_bytes(), 2);
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| p.ends_with(b"\n")));
        assert_eq!(parts.concat(), chunk.as_bytes());
        assert_eq!(split(b"short\n", 2).len(), 1);
        // no line end past the middle: one part
        let one = "y".repeat(SPLIT_BYTES * 2);
        assert_eq!(split(one.as_bytes(), 2), vec![one.as_bytes()]);
    }
}
