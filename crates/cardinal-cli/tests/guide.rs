//! The user guide (`docs/guide`) cannot rot: its table of contents lists every page and every
//! page is in it, every `sh` block of every page runs here (in a copy of the guide's example
//! data, with this build's `cardinal` first on `PATH`) and succeeds, every `sh fails` block
//! fails, and the configuration reference's generated table is the code's.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::tmpdir;

fn guide() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/guide")
}

/// The fenced blocks of `page`: (info string, body, 1-based line of the fence).
fn blocks(page: &str) -> Vec<(String, String, usize)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String, usize)> = None;
    for (i, line) in page.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_string(), String::new(), i + 1)),
            (Some(_), Some(_)) => out.push(open.take().expect("open")),
            (Some((_, body, _)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "an unclosed code block");
    out
}

/// The pages the table of contents links, in its order.
fn pages() -> Vec<String> {
    let summary = std::fs::read_to_string(guide().join("src/SUMMARY.md")).unwrap();
    summary
        .split("](")
        .skip(1)
        .map(|s| s.split(')').next().unwrap().to_string())
        .collect()
}

#[test]
fn the_table_of_contents_lists_every_page_and_only_pages_that_exist() {
    let listed = pages();
    let mut on_disk: Vec<String> = std::fs::read_dir(guide().join("src"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md") && n != "SUMMARY.md")
        .collect();
    on_disk.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, on_disk);
    // Links between pages lead to pages.
    for page in &listed {
        let text = std::fs::read_to_string(guide().join("src").join(page)).unwrap();
        for target in text
            .split("](")
            .skip(1)
            .map(|s| s.split(')').next().unwrap())
        {
            let file = target.split('#').next().unwrap();
            if file.is_empty() || file.starts_with("http") {
                continue;
            }
            assert!(
                guide().join("src").join(file).exists(),
                "{page}: a link to {target}, which does not exist"
            );
        }
    }
}

/// Runs the shell blocks of `page` in order, in one working folder.
fn run_page(page: &str) {
    let text = std::fs::read_to_string(guide().join("src").join(page)).unwrap();
    let work = tmpdir(&format!("guide-{}", page.trim_end_matches(".md")));
    for entry in std::fs::read_dir(guide().join("data")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), work.join(entry.file_name())).unwrap();
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_cardinal")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (info, body, line) in blocks(&text) {
        let must_fail = match info.as_str() {
            "sh" => false,
            "sh fails" => true,
            _ => continue,
        };
        let o = Command::new("bash")
            .args(["-euo", "pipefail", "-c", &body])
            .current_dir(&*work)
            .env("PATH", &path)
            .env_remove("CARDINAL_DATA")
            .output()
            .unwrap();
        let said = format!(
            "{page}:{line}:\n{body}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        if must_fail {
            assert!(!o.status.success(), "the block should fail: {said}");
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains("error"),
                "a failure without an error message: {said}"
            );
            assert!(!err.contains("panicked"), "{said}");
        } else {
            assert!(o.status.success(), "the block failed: {said}");
        }
    }
}

#[test]
fn every_shell_block_of_the_guide_runs() {
    for page in pages() {
        run_page(&page);
    }
}

/// The configuration reference's table: every field of a configuration with its value in
/// `predict` and in `paper`, from the configuration types.
fn presets_table() -> String {
    fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    flatten(&key, v, out);
                }
            }
            other => out.push((prefix.to_string(), other.to_string())),
        }
    }
    let json = |c: &cardinal::config::Config| serde_json::to_value(c).unwrap();
    let (mut predict, mut paper) = (Vec::new(), Vec::new());
    flatten(
        "",
        &json(&cardinal::config::Config::predict()),
        &mut predict,
    );
    flatten("", &json(&cardinal::config::Config::paper()), &mut paper);
    let mut keys: Vec<String> = predict
        .iter()
        .chain(&paper)
        .map(|(k, _)| k.clone())
        .collect();
    keys.sort();
    keys.dedup();
    let value = |list: &[(String, String)], k: &str| {
        list.iter()
            .find(|(key, _)| key == k)
            .map_or("(not set)".to_string(), |(_, v)| format!("`{v}`"))
    };
    let mut table = String::from("| field | `predict` | `paper` |\n| --- | --- | --- |\n");
    for k in keys {
        table.push_str(&format!(
            "| `{k}` | {} | {} |\n",
            value(&predict, &k),
            value(&paper, &k)
        ));
    }
    table
}

#[test]
fn the_configuration_reference_is_generated_from_the_code() {
    let path = guide().join("src/configuration.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (start, end) = ("<!-- generated: presets -->\n", "<!-- end: presets -->");
    let a = text.find(start).expect("the start marker") + start.len();
    let b = text.find(end).expect("the end marker");
    let table = presets_table();
    if std::env::var_os("CARDINAL_BLESS_GUIDE").is_some() {
        let new = format!("{}{table}{}", &text[..a], &text[b..]);
        std::fs::write(&path, new).unwrap();
        return;
    }
    assert_eq!(
        &text[a..b],
        table,
        "the configuration reference is out of date: CARDINAL_BLESS_GUIDE=1 cargo test -p \
         cardinal-cli --test guide"
    );
}
