#![no_main]
//! Model directories: the input is `[len(meta) u16 LE][len(config) u16 LE][meta][config][weights]`
//! (lengths clamped to what is there), written as meta.json, config.json and model.safetensors;
//! loading never panics, and a model that loads has finite weights of consistent shapes and runs
//! inference.

use cardinal::engine::{Engine, WEIGHTS_FILE};
use cardinal::data::CsrMatrix;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let len = |at: usize| {
        data.get(at..at + 2)
            .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]) as usize)
    };
    let (lm, lc) = (len(0), len(2));
    let rest = data.get(4..).unwrap_or(&[]);
    let meta = &rest[..lm.min(rest.len())];
    let rest = &rest[meta.len()..];
    let config = &rest[..lc.min(rest.len())];
    let weights = &rest[config.len()..];
    let dir = std::env::temp_dir().join(format!("cardinal-fuzz-ckpt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in [
        // The file names are the model folder's format (docs/DESIGN.md).
        ("meta.json", meta),
        ("config.json", config),
        (WEIGHTS_FILE, weights),
    ] {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    let engine = Engine::new(Default::default());
    if let Ok((model, meta)) = engine.load(&dir) {
        model.params.visit(|name, t, _| {
            assert!(t.iter().all(|v| v.is_finite()), "{name} has a non-finite weight")
        });
        assert_eq!(model.n_labels(), meta.n_labels);
        // Small enough models run one prediction on an empty row.
        if model.n_features() * model.n_labels() < 1 << 22 {
            let mut x = CsrMatrix::new(model.n_features());
            x.push_row(&[], &[]);
            let _ = engine.predict(&model, &x);
        }
    }
});
