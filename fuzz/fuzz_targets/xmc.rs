#![no_main]
//! Extreme Classification Repository format: never a panic; a dataset that parses is well formed.

use cardinal_data::data::{read_xmc, IndexBase};
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
    if let Ok(d) = read_xmc(body, base) {
        common::check(&d);
    }
});
