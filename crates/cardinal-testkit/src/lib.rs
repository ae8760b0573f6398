//! Test-only helpers shared by the cardinal crates' tests: the proptest settings the fuzz suites
//! of `cardinal-data` (the readers) and `cardinal` (saved models) run under and the mutations
//! they apply to a valid file; a seeded random stream ([`Lcg`]) and a small dataset of a given
//! shape ([`toy`]); and the shared data folder and browser that some tests need, which fail
//! the test under CI when missing ([`shared_data`], [`chromium`]). A dev-dependency only;
//! nothing of the product depends on it.
//!
//! Each fuzz suite adds its own mutations (token swaps for text formats, safetensors headers
//! and tensor bytes for models) around the shared [`Edit`]s, and its own dictionary of tokens
//! worth inserting.

#![warn(missing_docs)]

use proptest::prelude::*;
use proptest::sample::Index;

mod env;
mod rng;
mod toy;

pub use env::{chromium, in_ci, required, shared_data};
pub use rng::{lcg, Lcg};
pub use toy::{toy, Toy};

/// The proptest settings of a fuzz suite: `default_cases` cases per target, or
/// `CARDINAL_FUZZ_CASES` when set; no persistence file (findings become named regression
/// tests instead).
pub fn fuzz_config(default_cases: u32) -> ProptestConfig {
    let cases = std::env::var("CARDINAL_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_cases);
    ProptestConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    }
}

/// A byte- or line-level change of a file; indices are taken modulo what is there.
#[derive(Debug, Clone)]
pub enum Edit {
    /// Cuts the file at a position.
    Truncate(Index),
    /// Removes one line.
    DeleteLine(Index),
    /// Repeats one line.
    DuplicateLine(Index),
    /// Exchanges two lines.
    SwapLines(Index, Index),
    /// Flips one bit of one byte.
    FlipBit(Index, u8),
    /// Overwrites one byte.
    SetByte(Index, u8),
    /// Removes a run of bytes of the given length (clamped at the end).
    DeleteRange(Index, u8),
    /// Inserts a dictionary token at a position.
    Insert(Index, Index),
    /// Replaces the k-th run of ASCII digits with a dictionary token.
    ReplaceNumber(Index, Index),
}

/// Every [`Edit`], equally likely; a [`Edit::DeleteRange`] removes fewer than `max_delete`
/// bytes.
pub fn edit(max_delete: u8) -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<Index>().prop_map(Edit::Truncate),
        any::<Index>().prop_map(Edit::DeleteLine),
        any::<Index>().prop_map(Edit::DuplicateLine),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
        (any::<Index>(), 0u8..8).prop_map(|(a, b)| Edit::FlipBit(a, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(a, b)| Edit::SetByte(a, b)),
        (any::<Index>(), 1u8..max_delete).prop_map(|(a, b)| Edit::DeleteRange(a, b)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Edit::Insert(a, b)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Edit::ReplaceNumber(a, b)),
    ]
}

/// The lines of `text`, each with its line ending.
pub fn lines_of(text: &[u8]) -> Vec<Vec<u8>> {
    text.split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// Applies `e` to `text`, taking tokens from `dict`; [`Edit::ReplaceNumber`] looks for digits
/// only in `text[..numbers_end]` (e.g. the JSON header of a binary file). An edit that finds
/// nothing to change (no line, no byte, no number) leaves `text` as it is.
pub fn apply_edit(text: &mut Vec<u8>, e: &Edit, dict: &[&[u8]], numbers_end: usize) {
    let n = text.len();
    match e {
        Edit::Truncate(i) => text.truncate(i.index(n + 1)),
        Edit::DeleteLine(i) | Edit::DuplicateLine(i) | Edit::SwapLines(i, _) => {
            let mut lines = lines_of(text);
            if lines.is_empty() {
                return;
            }
            let a = i.index(lines.len());
            match e {
                Edit::DeleteLine(_) => {
                    lines.remove(a);
                }
                Edit::DuplicateLine(_) => {
                    let l = lines[a].clone();
                    lines.insert(a, l);
                }
                Edit::SwapLines(_, j) => {
                    let b = j.index(lines.len());
                    lines.swap(a, b);
                }
                _ => unreachable!(),
            }
            *text = lines.concat();
        }
        Edit::FlipBit(i, bit) if n > 0 => text[i.index(n)] ^= 1 << bit,
        Edit::SetByte(i, b) if n > 0 => text[i.index(n)] = *b,
        Edit::DeleteRange(i, len) if n > 0 => {
            let a = i.index(n);
            let b = (a + usize::from(*len)).min(n);
            text.drain(a..b);
        }
        Edit::Insert(i, t) => {
            let at = i.index(n + 1);
            let tok = dict[t.index(dict.len())];
            text.splice(at..at, tok.iter().copied());
        }
        Edit::ReplaceNumber(k, t) => {
            let end = numbers_end.min(n);
            let mut runs = Vec::new();
            let mut s = None;
            for (p, b) in text[..end].iter().enumerate() {
                match (b.is_ascii_digit(), s) {
                    (true, None) => s = Some(p),
                    (false, Some(a)) => {
                        runs.push((a, p));
                        s = None;
                    }
                    _ => {}
                }
            }
            if let Some(a) = s {
                runs.push((a, end));
            }
            if runs.is_empty() {
                return;
            }
            let (a, b) = runs[k.index(runs.len())];
            let tok = dict[t.index(dict.len())];
            text.splice(a..b, tok.iter().copied());
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    /// An `Index` that picks position `k` of a collection of `n` (an independent route: the
    /// index is searched for, not computed from proptest's mapping).
    fn index_of(k: usize, n: usize) -> Index {
        let mut runner = TestRunner::deterministic();
        loop {
            let i = any::<Index>().new_tree(&mut runner).unwrap().current();
            if i.index(n) == k {
                return i;
            }
        }
    }

    fn edited(text: &str, e: Edit, numbers_end: usize) -> String {
        let mut t = text.as_bytes().to_vec();
        apply_edit(&mut t, &e, &[b"X"], numbers_end);
        String::from_utf8(t).unwrap()
    }

    #[test]
    fn line_edits_keep_line_endings() {
        let t = "a\nb\r\nc";
        assert_eq!(edited(t, Edit::DeleteLine(index_of(1, 3)), 9), "a\nc");
        assert_eq!(
            edited(t, Edit::DuplicateLine(index_of(0, 3)), 9),
            "a\na\nb\r\nc"
        );
        let swap = Edit::SwapLines(index_of(0, 3), index_of(2, 3));
        assert_eq!(edited(t, swap, 9), "cb\r\na\n");
        assert_eq!(edited("", Edit::DeleteLine(index_of(0, 1)), 0), "");
    }

    #[test]
    fn byte_edits_stay_in_bounds() {
        assert_eq!(edited("abc", Edit::Truncate(index_of(1, 4)), 3), "a");
        assert_eq!(edited("abc", Edit::DeleteRange(index_of(2, 3), 9), 3), "ab");
        assert_eq!(edited("abc", Edit::FlipBit(index_of(0, 3), 0), 3), "`bc");
        assert_eq!(
            edited("abc", Edit::Insert(index_of(3, 4), index_of(0, 1)), 3),
            "abcX"
        );
        assert_eq!(edited("", Edit::SetByte(index_of(0, 1), b'z'), 0), "");
    }

    #[test]
    fn numbers_are_replaced_only_before_the_end_given() {
        let t = "a12b345";
        let second = Edit::ReplaceNumber(index_of(1, 2), index_of(0, 1));
        assert_eq!(edited(t, second.clone(), 7), "a12bX");
        // Only the first run lies before position 4: the only one that can be picked.
        let any_run = Edit::ReplaceNumber(index_of(1, 2), index_of(0, 1));
        assert_eq!(edited(t, any_run, 4), "aXb345");
        assert_eq!(edited(t, second, 1), t, "no digits before position 1");
    }
}
