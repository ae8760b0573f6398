#![no_main]
//! MULAN ARFF: never a panic; a dataset that parses is well formed.

use cardinal_data::data::{read_arff, LabelSpec};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    // The first byte picks how labels are identified, the rest is the file.
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let spec = match pick % 3 {
        0 => LabelSpec::Last(1 + (pick as usize / 3) % 4),
        1 => LabelSpec::First(1 + (pick as usize / 3) % 4),
        _ => LabelSpec::Names(vec!["a".into(), "b c".into(), "y1".into()]),
    };
    if let Ok(d) = read_arff(body, &spec) {
        common::check(&d);
    }
});
