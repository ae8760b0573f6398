//! Names of the hidden files and folders cardinal writes beside a destination before renaming
//! them into place (`.NAME.tmp-PID`, `.NAME.cardinal-replacement`). A name near the
//! filesystem's limit of 255 bytes would make them too long to create, so such a name is
//! shortened, with a hash of the whole name kept so that two long names never share one.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The longest name (in bytes) a Linux filesystem accepts.
const NAME_MAX: usize = 255;

/// `.{name}{suffix}` beside `path` (whose file name is `name`); when that is longer than a
/// file name may be, `name` is cut (at a character boundary) and followed by `~` and 16 hex
/// digits of its SHA-256. The same `path` always gives the same name.
pub fn hidden_sibling(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    path.with_file_name(hidden_name(&name, suffix))
}

fn hidden_name(name: &str, suffix: &str) -> String {
    let whole = format!(".{name}{suffix}");
    if whole.len() <= NAME_MAX {
        return whole;
    }
    let hash: String = Sha256::digest(name.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // `.` + cut + `~` + 16 hex digits + suffix.
    let room = NAME_MAX.saturating_sub(2 + hash.len() + suffix.len());
    let mut cut = room.min(name.len());
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(".{}~{hash}{suffix}", &name[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_kept_and_long_ones_fit_and_differ() {
        assert_eq!(hidden_name("run", ".tmp-7"), ".run.tmp-7");
        let suffix = ".cardinal-replacement";
        let fits = "r".repeat(NAME_MAX - 1 - suffix.len());
        assert_eq!(hidden_name(&fits, suffix), format!(".{fits}{suffix}"));
        for len in [fits.len() + 1, 240, 255] {
            let (a, b) = ("a".repeat(len), format!("{}b", "a".repeat(len - 1)));
            let (ha, hb) = (hidden_name(&a, suffix), hidden_name(&b, suffix));
            assert!(ha.len() <= NAME_MAX && hb.len() <= NAME_MAX, "{len}");
            assert!(ha.ends_with(suffix) && ha.starts_with(".aaa"), "{ha}");
            assert_ne!(ha, hb, "two long names share a sibling");
        }
        // Multi-byte characters are cut whole.
        let wide = "é".repeat(127);
        assert!(hidden_name(&wide, suffix).len() <= NAME_MAX);
    }
}
