//! A model save committed as one unit. Its three files (`config.json`, `meta.json`, the
//! weights) are staged and synced under temporary names; then a journal naming them is
//! written atomically: that write is the commit. The files are renamed into place and the
//! journal removed. A save killed before the journal leaves the old model whole; one killed
//! after it leaves the new model whole, because readers (`Snapshot::read_current`) take a file from its
//! staged name while the journal names it and it is still there, and the next save first
//! finishes the renames ([`recover`]).

use std::path::Path;

use crate::{read_model_file_if_any, write_atomic, Problem, Result, Staged, StoreError};

/// The journal of a model save whose files are not all renamed into place yet.
pub const SAVE_JOURNAL: &str = ".cardinal-save.json";

/// The journal: each staged file's name and the name it is renamed to, both in the folder.
pub type Journal = Vec<(String, String)>;

/// A plain file name of the folder (no separator, not `.` or `..`): a journal is untrusted.
fn plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\'])
}

fn read_journal(dir: &Path) -> Result<Journal> {
    let path = dir.join(SAVE_JOURNAL);
    let Some(bytes) = read_model_file_if_any(&path)? else {
        return Ok(Vec::new());
    };
    parse_journal(&path, &bytes)
}

/// The journal read from `path` as `bytes`.
pub fn parse_journal(path: &Path, bytes: &[u8]) -> Result<Journal> {
    let journal: Journal = serde_json::from_slice(bytes)
        .map_err(|e| StoreError::refused(path, Problem::BadJournal(crate::json_problem(&e))))?;
    if journal
        .iter()
        .any(|(a, b)| !plain_name(a) || !plain_name(b))
    {
        return Err(StoreError::refused(path, Problem::JournalOutsideFolder));
    }
    Ok(journal)
}

/// The path the model folder `dir`'s file `name` is read from (as `cardinal`'s
/// snapshot reader reads it; for tests): its staged file while a
/// committed save's journal names one that is still there, else the file itself.
pub fn current(dir: &Path, name: &str) -> Result<std::path::PathBuf> {
    for (staged, target) in read_journal(dir)? {
        if target == name && dir.join(&staged).is_file() {
            return Ok(dir.join(staged));
        }
    }
    Ok(dir.join(name))
}

/// Finishes an interrupted save of `dir` (renames what its journal names, then removes the
/// journal). Call with the folder locked, before writing into it.
pub fn recover(dir: &Path) -> Result<()> {
    let journal = read_journal(dir)?;
    for (staged, target) in &journal {
        let from = dir.join(staged);
        if from.is_file() {
            std::fs::rename(&from, dir.join(target)).map_err(|e| StoreError::io(&from, e))?;
        }
    }
    if !journal.is_empty() {
        finish(dir)?;
    }
    Ok(())
}

/// Removes the journal and makes that durable.
fn finish(dir: &Path) -> Result<()> {
    let path = dir.join(SAVE_JOURNAL);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(StoreError::io(&path, e)),
    }
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Writes the journal of `files`, staged in `dir`: the commit point of the save ([`commit_all`]
/// writes it; for tests that stop a save after it).
pub fn write_journal(dir: &Path, files: &[&Staged]) -> Result<()> {
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let journal: Journal = files
        .iter()
        .filter_map(|s| Some((name(&s.tmp)?, name(&s.path)?)))
        .collect();
    let json = serde_json::to_string(&journal).expect("serialisable");
    write_atomic(&dir.join(SAVE_JOURNAL), json.as_bytes())
}

/// Commits the files staged in `dir` as one unit (see the module docs).
pub fn commit_all(dir: &Path, files: Vec<Staged>) -> Result<()> {
    write_journal(dir, &files.iter().collect::<Vec<_>>())?;
    for f in files {
        f.commit()?;
    }
    finish(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage;

    const FILES: [&str; 3] = ["config.json", "meta.json", "model.safetensors"];

    fn read_all(dir: &Path) -> Vec<String> {
        FILES
            .iter()
            .map(|f| std::fs::read_to_string(current(dir, f).unwrap()).unwrap())
            .collect()
    }

    fn staged(dir: &Path, version: &str) -> Vec<Staged> {
        FILES
            .iter()
            .map(|f| {
                let text = format!("{version} {f}");
                stage(&dir.join(f), |tmp| std::fs::write(tmp, text)).unwrap()
            })
            .collect()
    }

    /// A save killed before its journal leaves the old model; killed after it, between any
    /// two renames, it leaves the new one: never a mix.
    #[test]
    fn a_save_killed_at_any_rename_leaves_one_whole_model() {
        let dir = std::env::temp_dir().join(format!("cardinal-commit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let old: Vec<String> = FILES.iter().map(|f| format!("old {f}")).collect();
        let new: Vec<String> = FILES.iter().map(|f| format!("new {f}")).collect();
        commit_all(&dir, staged(&dir, "old")).unwrap();
        assert_eq!(read_all(&dir), old);
        // Killed after staging, before the journal: the staged files stay as litter.
        std::mem::forget(staged(&dir, "new"));
        assert_eq!(read_all(&dir), old);
        for renamed in 0..=FILES.len() {
            commit_all(&dir, staged(&dir, "old")).unwrap();
            let files = staged(&dir, "new");
            write_journal(&dir, &files.iter().collect::<Vec<_>>()).unwrap();
            let mut files = files.into_iter();
            for f in files.by_ref().take(renamed) {
                f.commit().unwrap();
            }
            files.for_each(std::mem::forget);
            assert_eq!(read_all(&dir), new, "killed after {renamed} renames");
            // The next save (or recovery) finishes the renames.
            recover(&dir).unwrap();
            assert!(!dir.join(SAVE_JOURNAL).exists());
            let plain: Vec<String> = FILES
                .iter()
                .map(|f| std::fs::read_to_string(dir.join(f)).unwrap())
                .collect();
            assert_eq!(plain, new);
        }
        // A journal naming a file elsewhere is refused.
        std::fs::write(dir.join(SAVE_JOURNAL), r#"[["../x", "meta.json"]]"#).unwrap();
        assert!(current(&dir, "meta.json").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
