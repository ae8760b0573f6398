//! What a data file holds, told from its first lines rather than its name: an ARFF file saved
//! as `.txt`, or a CSV file, would otherwise be read as LIBSVM and refused at its first
//! character ("expected a label id, found `@relation`").

use std::path::Path;

use super::error::{DataError, Result};
use super::invalid::InvalidInput;
use super::lex::{is_blank, Lines};

/// The format a file's first data line shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniffed {
    /// `@relation`, `@attribute` or `@data` (after `%` comments): ARFF.
    Arff,
    /// Comma-separated values without a `:`, some of them not label ids (a header of names,
    /// or decimal numbers): CSV, which no reader of this crate reads.
    Csv,
    /// Anything else: LIBSVM or XMC, as the name says.
    Other,
}

/// Looks at the first line of `path` that is neither blank nor a comment.
pub(crate) fn sniff(path: &Path) -> Result<Sniffed> {
    super::read_file(path, |r| {
        let mut lines = Lines::new(r);
        while lines.advance()? {
            let line = lines.line();
            if is_blank(line) || matches!(line.first(), Some(b'%' | b'#')) {
                continue;
            }
            return Ok(of_line(line));
        }
        Ok(Sniffed::Other)
    })
}

/// What `line`, the first data line of a file, shows.
fn of_line(line: &[u8]) -> Sniffed {
    let text = String::from_utf8_lossy(line);
    let t = text.trim_start().to_ascii_lowercase();
    if ["@relation", "@attribute", "@data"]
        .iter()
        .any(|k| t.starts_with(k))
    {
        return Sniffed::Arff;
    }
    let first = t.split_whitespace().next().unwrap_or("");
    let label_ids = first
        .split(',')
        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if t.contains(',') && !t.contains(':') && !label_ids {
        return Sniffed::Csv;
    }
    Sniffed::Other
}

/// The refusal of the CSV file `path`.
pub(crate) fn csv_refused(path: &Path) -> DataError {
    InvalidInput::Csv {
        path: path.to_path_buf(),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_data_line_tells_the_format() {
        assert_eq!(of_line(b"@RELATION 'x: -C 2'"), Sniffed::Arff);
        assert_eq!(of_line(b"  @attribute a numeric"), Sniffed::Arff);
        assert_eq!(of_line(b"a,b,labels"), Sniffed::Csv);
        assert_eq!(of_line(b"0.5,1,2"), Sniffed::Csv);
        // LIBSVM: label lists are comma-separated ids, features have a `:`.
        assert_eq!(of_line(b"0,3 1:0.5 7:1"), Sniffed::Other);
        assert_eq!(of_line(b"1,2,3"), Sniffed::Other);
        assert_eq!(of_line(b" 1:0.5"), Sniffed::Other);
        assert_eq!(of_line(b"100 20 5"), Sniffed::Other);
    }
}
