#![no_main]
//! MULAN label XML: never a panic; names that parse are distinct.

use cardinal_data::data::read_label_xml;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(names) = read_label_xml(data) {
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "duplicate label names accepted");
    }
});
