//! Writing a safetensors file. `safetensors::serialize_to_file` writes through a temporary
//! file of its own, created with mode 0600 (so weights ended up unreadable to the group while
//! every other file of a model folder had the umask's mode) and left behind, under a name
//! cardinal does not know, by a crash. Here the file is written where the caller says, created
//! as every other file is; its header is the crate's own (`safetensors::tensor::Metadata`, with
//! the tensors in the crate's order: by dtype, then name), so the bytes are those
//! `serialize_to_file` wrote, and the data streams to the file without a copy in memory.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use safetensors::tensor::{Metadata, TensorInfo, TensorView, View};

/// Writes `views` as the safetensors file `path` (created with the umask's mode), with
/// `info` as its `__metadata__`, byte for byte as `safetensors::serialize` would lay it out.
pub fn write_tensor_file<S: AsRef<str>>(
    path: &Path,
    views: &[(S, TensorView)],
    info: &HashMap<String, String>,
) -> std::io::Result<()> {
    // The crate's order: descending dtype, then name.
    let mut order: Vec<&(S, TensorView)> = views.iter().collect();
    order.sort_by(|(a, x), (b, y)| y.dtype().cmp(&x.dtype()).then(a.as_ref().cmp(b.as_ref())));
    let mut offset = 0usize;
    let mut entries = Vec::with_capacity(order.len());
    for (name, view) in &order {
        let end = offset + view.data_len();
        entries.push((
            name.as_ref().to_string(),
            TensorInfo {
                dtype: view.dtype(),
                shape: view.shape().to_vec(),
                data_offsets: (offset, end),
            },
        ));
        offset = end;
    }
    let metadata = Metadata::new(Some(info.clone()), entries).map_err(std::io::Error::other)?;
    let mut head = serde_json::to_vec(&metadata).map_err(std::io::Error::other)?;
    head.resize(head.len().next_multiple_of(8), b' ');
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    out.write_all(&(head.len() as u64).to_le_bytes())?;
    out.write_all(&head)?;
    for (_, view) in order {
        out.write_all(view.data().as_ref())?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use safetensors::tensor::Dtype;
    use safetensors::SafeTensors;

    /// The file reads back with `safetensors`, and is created with the umask's mode, as
    /// `std::fs::write` creates a file.
    #[cfg(unix)]
    #[test]
    fn tensor_files_read_back_and_get_the_umasks_mode() {
        use std::os::unix::fs::PermissionsExt;
        let d = std::env::temp_dir().join(format!("cardinal-tensorfile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let (a, b) = (vec![1u8; 12], vec![2u8; 8]);
        let views = vec![
            ("b", TensorView::new(Dtype::F32, vec![3], &a).unwrap()),
            ("a", TensorView::new(Dtype::F64, vec![1, 1], &b).unwrap()),
        ];
        let info = HashMap::from([("format".to_string(), "test".to_string())]);
        let p = d.join("w.safetensors");
        write_tensor_file(&p, &views, &info).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        let st = SafeTensors::deserialize(&bytes).unwrap();
        assert_eq!(st.tensor("b").unwrap().data(), &a[..]);
        assert_eq!(st.tensor("a").unwrap().shape(), &[1, 1]);
        std::fs::write(d.join("plain"), b"").unwrap();
        let mode = |n: &str| std::fs::metadata(d.join(n)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode("w.safetensors"), mode("plain"));
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            2,
            "no file left behind"
        );
        // The bytes the crate's own serialiser gives.
        let by_crate = safetensors::serialize(views.iter().cloned(), Some(info)).unwrap();
        assert_eq!(bytes, by_crate);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
