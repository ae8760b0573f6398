//! Reading a configuration file: its size limit, what is not a file or not text, and a
//! byte-order mark.

use super::*;

/// A configuration file is read up to its limit and no further: `/dev/zero` ends in a
/// message naming the file and the limit, as do a folder and bytes that are not text.
#[cfg(unix)]
#[test]
fn a_configuration_file_is_read_within_its_limit() {
    let e = super::read_config_file(std::path::Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/dev/zero") && e.contains(&super::MAX_CONFIG_BYTES.to_string()),
        "{e}"
    );
    let d = std::env::temp_dir().join(format!("cardinal-cfgfile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let e = super::read_config_file(&d).unwrap_err().to_string();
    assert!(e.contains("is a folder"), "{e}");
    let bin = d.join("bin.json");
    std::fs::write(&bin, b"{\"a\": \xff}").unwrap();
    let e = super::read_config_file(&bin).unwrap_err().to_string();
    assert!(e.contains("bin.json") && e.contains("not UTF-8"), "{e}");
    let ok = d.join("ok.json");
    std::fs::write(&ok, b"{}").unwrap();
    assert_eq!(super::read_config_file(&ok).unwrap(), "{}");
    // A byte-order mark is not refused at "line 1, column 1": it is not part of the JSON.
    let bom = d.join("bom.json");
    std::fs::write(&bom, b"\xEF\xBB\xBF{\"seed\": 3}").unwrap();
    let text = super::read_config_file(&bom).unwrap();
    assert_eq!(text, "{\"seed\": 3}");
    assert_eq!(Config::resolve(None, Some(&text), None).unwrap().seed, 3);
    std::fs::remove_dir_all(&d).unwrap();
}
