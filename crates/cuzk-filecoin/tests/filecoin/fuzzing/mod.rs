//! What the fuzz tests share (`fuzz_decoders` here, `fuzz_requests` of cuzk-daemon): a proptest
//! runner with bounded cases and a printed seed, a panic catcher that says where the panic
//! was, and mutations of bytes and of JSON trees, each driven by proptest-made numbers (so a
//! failing case shrinks and replays) and described in words (so a failure names the change that
//! made it).
//!
//! Byte mutations flip, set, insert and remove bytes, truncate, and overwrite eight bytes with a
//! small or huge little-endian number (bincode's lengths and indices). JSON mutations replace a
//! value by one of another type, remove or duplicate it, empty or shorten an array or string,
//! nudge a number, or copy another subtree in its place: requests that still parse but are
//! shaped wrong, which is what reaches the code behind a decoder.
#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, Once, PoisonError};
use std::time::Instant;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::Value;

/// A case's outcome (`ok`, or the kind of refusal), tallied and printed; or why it fails the
/// property.
pub type Outcome = Result<String, TestCaseError>;

/// The cases a test runs: `CUZK_FUZZ_CASES`, or `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("CUZK_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// Runs `test` on [`cases`] inputs of `strategy`, seeded by `CUZK_TEST_SEED` as the other tests
/// are (printed under `name`), failing with the smallest input proptest finds. Nothing is
/// written to the source tree.
pub fn fuzz<S: Strategy>(name: &str, cases: u32, strategy: S, test: impl Fn(S::Value) -> Outcome)
where
    S::Value: std::fmt::Debug,
{
    let config = Config {
        cases: self::cases(cases),
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(cuzk_testkit::seed(name)),
        max_shrink_time: 60_000,
        ..Config::default()
    };
    let cases = config.cases;
    let mut runner = TestRunner::new(config);
    let outcomes = RefCell::new(BTreeMap::<String, u32>::new());
    let start = Instant::now();
    let result = runner.run(&strategy, |input| {
        let outcome = test(input)?;
        *outcomes.borrow_mut().entry(outcome).or_default() += 1;
        Ok(())
    });
    eprintln!(
        "{name}: {cases} cases in {:.1} s, outcomes (shrinking included): {:?}",
        start.elapsed().as_secs_f64(),
        outcomes.borrow()
    );
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
}

/// `run`'s value, or a failure saying where it panicked, with what, on the input `what`
/// describes.
pub fn no_panic<T>(what: &[String], run: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    record_panic_places();
    catch_unwind(AssertUnwindSafe(run)).map_err(|panic| {
        let message = panic_message(panic.as_ref());
        // The place of the latest panic with this message (tests run side by side, and the
        // panic may have been on one of rayon's threads).
        let at = PANICS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .rev()
            .find(|(m, _)| *m == message)
            .map_or_else(|| "an unknown place".to_owned(), |(_, at)| at.clone());
        TestCaseError::fail(format!("panicked at {at} ({message}) on {what:?}"))
    })
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic".to_owned())
}

/// The latest panics' messages and places.
static PANICS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Records where panics happen, besides the default report, so a failure says where.
fn record_panic_places() {
    static HOOKED: Once = Once::new();
    HOOKED.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let at = info
                .location()
                .map_or_else(String::new, ToString::to_string);
            let mut panics = PANICS.lock().unwrap_or_else(PoisonError::into_inner);
            if panics.len() >= 64 {
                panics.remove(0);
            }
            panics.push((panic_message(info.payload()), at));
            drop(panics);
            default(info);
        }));
    });
}

/// One mutation: where (`at`, modulo the places there are), what (`op`) and a number for it.
#[derive(Clone, Copy, Debug)]
pub struct Mutation {
    pub at: u64,
    pub op: u8,
    pub arg: u64,
}

/// One to `max` mutations.
pub fn mutations(max: usize) -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(
        (any::<u64>(), any::<u8>(), any::<u64>()).prop_map(|(at, op, arg)| Mutation {
            at,
            op,
            arg,
        }),
        1..=max,
    )
}

/// `bytes` with `mutations` applied in turn, and what each did.
pub fn mutate_bytes(bytes: &[u8], mutations: &[Mutation]) -> (Vec<u8>, Vec<String>) {
    let mut out = bytes.to_vec();
    let mut done = Vec::new();
    for m in mutations {
        let len = out.len();
        // A place in the bytes, or just past them.
        let pos = (m.at % (len as u64 + 1)) as usize;
        let byte = m.arg as u8;
        done.push(match m.op % 7 {
            0 if pos < len => {
                out[pos] ^= 1 << (m.arg % 8);
                format!("bit {} of byte {pos} flipped", m.arg % 8)
            }
            1 if pos < len => {
                out[pos] = byte;
                format!("byte {pos} set to {byte:#04x}")
            }
            2 => {
                out.insert(pos, byte);
                format!("{byte:#04x} inserted at {pos}")
            }
            3 if pos < len => {
                out.remove(pos);
                format!("byte {pos} removed")
            }
            4 => {
                out.truncate(pos);
                format!("truncated to {pos} bytes")
            }
            op @ (5 | 6) if pos + 8 <= len => {
                // Small numbers (lengths, counts) or huge ones.
                let value = if op == 5 {
                    m.arg % 80
                } else {
                    u64::MAX - m.arg % 4
                };
                out[pos..pos + 8].copy_from_slice(&value.to_le_bytes());
                format!("u64 {value} written at {pos}")
            }
            _ => {
                out.truncate(len / 2);
                format!("truncated to {} bytes", len / 2)
            }
        });
    }
    (out, done)
}

/// JSON pointers (RFC 6901) to every node of `value`, in pre-order, and whether each is an
/// array or object.
fn nodes(value: &Value) -> Vec<(String, bool)> {
    fn walk(value: &Value, at: String, out: &mut Vec<(String, bool)>) {
        match value {
            Value::Array(items) => {
                out.push((at.clone(), true));
                for (i, item) in items.iter().enumerate() {
                    walk(item, format!("{at}/{i}"), out);
                }
            }
            Value::Object(map) => {
                out.push((at.clone(), true));
                for (key, item) in map {
                    let key = key.replace('~', "~0").replace('/', "~1");
                    walk(item, format!("{at}/{key}"), out);
                }
            }
            _ => out.push((at, false)),
        }
    }
    let mut out = Vec::new();
    walk(value, String::new(), &mut out);
    out
}

/// Removes the node at `pointer` from its parent; the root becomes null.
fn remove(root: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        *root = Value::Null;
        return;
    };
    match root.pointer_mut(parent) {
        Some(Value::Array(items)) => {
            if let Ok(i) = last.parse::<usize>() {
                if i < items.len() {
                    items.remove(i);
                }
            }
        }
        Some(Value::Object(map)) => {
            map.remove(&last.replace("~1", "/").replace("~0", "~"));
        }
        _ => {}
    }
}

/// `value` with `mutations` applied in turn, and what each did. Half of them pick among arrays
/// and objects only, where the shape of a request lives.
pub fn mutate_json(value: &Value, mutations: &[Mutation]) -> (Value, Vec<String>) {
    let mut root = value.clone();
    let mut done = Vec::new();
    for m in mutations {
        let all = nodes(&root);
        let containers: Vec<&(String, bool)> = all.iter().filter(|(_, c)| *c).collect();
        let (pointer, _) = if m.op & 0x80 != 0 && !containers.is_empty() {
            containers[(m.at % containers.len() as u64) as usize]
        } else {
            &all[(m.at % all.len() as u64) as usize]
        };
        let pointer = pointer.clone();
        let other = all[(m.arg % all.len() as u64) as usize].0.clone();
        let copied = root.pointer(&other).cloned().unwrap_or(Value::Null);
        let Some(node) = root.pointer_mut(&pointer) else {
            continue;
        };
        let what = match m.op % 13 {
            0 => {
                *node = Value::Null;
                "replaced by null".to_owned()
            }
            1 => {
                *node = Value::Bool(m.arg & 1 == 1);
                "replaced by a bool".to_owned()
            }
            2 => {
                *node = Value::from(m.arg);
                format!("replaced by {}", m.arg)
            }
            3 => {
                let n = -1 - (m.arg % 1000) as i64;
                *node = Value::from(n);
                format!("replaced by {n}")
            }
            4 => {
                *node = Value::from(m.arg as f64 / 3.0);
                "replaced by a fraction".to_owned()
            }
            5 => {
                let s = if m.arg & 1 == 0 {
                    String::new()
                } else {
                    m.arg.to_string()
                };
                *node = Value::String(s);
                "replaced by a string".to_owned()
            }
            6 => {
                *node = Value::Array(Vec::new());
                "replaced by []".to_owned()
            }
            7 => {
                *node = Value::Object(Default::default());
                "replaced by {}".to_owned()
            }
            8 => {
                remove(&mut root, &pointer);
                "removed".to_owned()
            }
            9 => match node {
                Value::Array(items) if !items.is_empty() => {
                    let i = (m.arg % items.len() as u64) as usize;
                    items.push(items[i].clone());
                    format!("element {i} appended again")
                }
                Value::Object(map) => {
                    map.insert(format!("fuzz{}", m.arg % 10), Value::Null);
                    "an unknown key added".to_owned()
                }
                other => {
                    *other = Value::Array(vec![other.take()]);
                    "wrapped in an array".to_owned()
                }
            },
            10 => match node {
                Value::Array(items) => {
                    let keep = (m.arg % (items.len() as u64 + 1)) as usize;
                    items.truncate(keep);
                    format!("shortened to {keep} elements")
                }
                Value::String(s) => {
                    let keep = (m.arg % (s.chars().count() as u64 + 1)) as usize;
                    *s = s.chars().take(keep).collect();
                    format!("shortened to {keep} characters")
                }
                Value::Number(n) => {
                    let nudged = n.as_u64().map_or(0, |n| n ^ (1 << (m.arg % 64)));
                    *node = Value::from(nudged);
                    format!("a bit of the number flipped: {nudged}")
                }
                _ => "left alone".to_owned(),
            },
            11 => {
                *node = copied;
                format!("replaced by a copy of {other:?}")
            }
            _ => match node {
                Value::String(s) if !s.is_empty() => {
                    let chars: Vec<char> = s.chars().collect();
                    let i = (m.arg % chars.len() as u64) as usize;
                    let with =
                        ['0', 'f', 'z', '=', '"', '\\', '\u{e9}', '+'][(m.arg >> 8) as usize % 8];
                    *s = chars[..i]
                        .iter()
                        .chain(std::iter::once(&with))
                        .chain(&chars[i + 1..])
                        .collect();
                    format!("character {i} set to {with:?}")
                }
                Value::Number(n) => {
                    let nudged = n.as_u64().map_or(1, |n| n.wrapping_add(1));
                    *node = Value::from(nudged);
                    format!("incremented to {nudged}")
                }
                _ => "left alone".to_owned(),
            },
        };
        done.push(format!("{pointer:?} {what}"));
    }
    (root, done)
}
