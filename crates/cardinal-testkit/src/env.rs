//! What some tests need from the machine: the shared data folder and a headless browser.
//!
//! Without them a test cannot check anything, so on a developer's machine it says so and
//! returns; under CI, which provides both, their absence is a broken setup and the test fails
//! instead of passing without having checked anything.

use std::path::{Path, PathBuf};

/// Whether this is a CI run: `CI` set to anything non-empty other than `0` or `false` (any
/// case).
pub fn in_ci() -> bool {
    ci_value(std::env::var_os("CI").as_deref().and_then(|v| v.to_str()))
}

/// [`in_ci`] for a given value of `CI`.
fn ci_value(v: Option<&str>) -> bool {
    match v.map(str::trim) {
        None | Some("") => false,
        Some(v) => !(v == "0" || v.eq_ignore_ascii_case("false")),
    }
}

/// `found`, or, when it is `None`: a panic naming `what` and `how` under CI, else a note on
/// standard error and `None` (the caller returns without checking).
pub fn required<T>(found: Option<T>, what: &str, how: &str) -> Option<T> {
    if found.is_none() {
        if in_ci() {
            panic!("{what} not found, and CI is set: {how}");
        }
        eprintln!("note: {what} not found; not checked here ({how})");
    }
    found
}

/// The root of the checkout (this crate lives in `crates/cardinal-testkit`).
fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where the shared data folder is looked for: `CARDINAL_SHARED_DATA` when set, else
/// `shared/data` in the checkout and beside it. A candidate counts when it holds `bibtex/`.
fn find_shared_data() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CARDINAL_SHARED_DATA") {
        return Some(PathBuf::from(p)).filter(|p| p.is_dir());
    }
    let root = checkout();
    [root.join("shared/data"), root.join("../shared/data")]
        .into_iter()
        .find(|p| p.join("bibtex").is_dir())
}

/// The shared data folder (the MULAN files of the development suite, see its `SUITE.md`):
/// `CARDINAL_SHARED_DATA` when set, else `shared/data` in or beside the checkout. When it is
/// missing, panics under CI ([`in_ci`]), and otherwise prints a note and returns `None`.
pub fn shared_data() -> Option<PathBuf> {
    required(
        find_shared_data(),
        "the shared data folder",
        "set CARDINAL_SHARED_DATA, or put shared/data in or beside the checkout",
    )
}

/// The first of `names` that is a file in one of the folders of `path` (a `PATH` value).
fn on_path(path: &std::ffi::OsStr, names: &[&str]) -> Option<PathBuf> {
    names
        .iter()
        .flat_map(|name| std::env::split_paths(path).map(move |d| d.join(name)))
        .find(|p| p.is_file())
}

/// A Chromium binary on `PATH` (`chromium`, `chromium-browser` or `google-chrome`). When there
/// is none, panics under CI ([`in_ci`]), and otherwise prints a note and returns `None`.
pub fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|p| on_path(&p, &["chromium", "chromium-browser", "google-chrome"]));
    required(
        found,
        "a Chromium binary on PATH",
        "install the `chromium` package, as .ci/run does",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_is_any_value_but_empty_zero_or_false() {
        for v in ["true", "1", "yes", "TRUE"] {
            assert!(ci_value(Some(v)), "{v}");
        }
        for v in [
            None,
            Some(""),
            Some("0"),
            Some("false"),
            Some("False"),
            Some(" "),
        ] {
            assert!(!ci_value(v), "{v:?}");
        }
    }

    #[test]
    fn what_is_found_comes_back() {
        assert_eq!(required(Some(3), "x", "y"), Some(3));
    }

    #[test]
    fn a_binary_is_found_in_a_path_folder() {
        let dir = tempdir();
        std::fs::write(dir.join("chromium-browser"), b"").unwrap();
        let path = std::env::join_paths([dir.join("none"), dir.clone()]).unwrap();
        assert_eq!(
            on_path(&path, &["chromium", "chromium-browser"]),
            Some(dir.join("chromium-browser"))
        );
        assert_eq!(on_path(&path, &["chromium"]), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A fresh folder of this test process.
    fn tempdir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("cardinal-testkit-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
