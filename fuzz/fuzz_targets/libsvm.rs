#![no_main]
//! LIBSVM multi-label: never a panic; a dataset that parses is well formed.

use cardinal_data::data::{read_libsvm, IndexBase, SvmOptions};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let base = if pick & 1 == 0 {
        IndexBase::Zero
    } else {
        IndexBase::One
    };
    let mut opts = SvmOptions::new(base);
    if pick & 2 != 0 {
        opts.n_features = Some(1 + (pick as usize >> 2));
    }
    if let Ok(d) = read_libsvm(body, &opts) {
        common::check(&d);
    }
});
