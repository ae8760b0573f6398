//! MULAN label XML: `<labels xmlns="http://mulan.sourceforge.net/labels"><label name="..."/>...`.
//!
//! Hierarchical files nest `<label>` elements; every `<label>` at any depth is a label (MULAN
//! stores parents as attributes too), flattened in document order (a parent before its
//! children). Other elements are ignored; namespaces are not checked.

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

use super::error::{DataError, ParseErrorKind, Result};

/// Reads the label names from a MULAN XML label file, in document order.
pub fn read_label_xml<R: Read>(mut reader: R) -> Result<Vec<String>> {
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes).map_err(DataError::io)?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        // Locate the first invalid byte (column in characters, as roxmltree counts).
        let valid = &bytes[..e.valid_up_to()];
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        // The prefix is valid UTF-8 by construction.
        let col = String::from_utf8_lossy(&valid[line_start..])
            .chars()
            .count()
            + 1;
        DataError::parse(
            line,
            col,
            ParseErrorKind::Expected {
                expected: "UTF-8 text",
                found: format!("the byte 0x{:02X}", bytes[e.valid_up_to()]),
            },
        )
    })?;
    parse_label_xml(text)
}

/// Like [`read_label_xml`] for a path (plain or gzip); errors carry the path.
pub fn read_label_xml_path(path: &Path) -> Result<Vec<String>> {
    super::read_file(path, read_label_xml)
}

/// Parses the label names from the XML text.
pub fn parse_label_xml(text: &str) -> Result<Vec<String>> {
    let doc = roxmltree::Document::parse(text).map_err(|e| {
        let p = e.pos();
        DataError::parse(
            p.row as usize,
            p.col as usize,
            ParseErrorKind::Xml { source: e },
        )
    })?;
    let at = |node: roxmltree::Node<'_, '_>, kind: ParseErrorKind| {
        let p = doc.text_pos_at(node.range().start);
        DataError::parse(p.row as usize, p.col as usize, kind)
    };
    let root = doc.root_element();
    if root.tag_name().name() != "labels" {
        return Err(at(
            root,
            ParseErrorKind::XmlRoot {
                found: root.tag_name().name().to_string(),
            },
        ));
    }
    let mut names = Vec::new();
    let mut seen = HashSet::new();
    for node in root
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "label")
    {
        let Some(name) = node.attribute("name") else {
            return Err(at(node, ParseErrorKind::XmlUnnamedLabel));
        };
        if !seen.insert(name) {
            return Err(at(
                node,
                ParseErrorKind::XmlDuplicateLabel {
                    name: name.to_string(),
                },
            ));
        }
        names.push(name.to_string());
    }
    if names.is_empty() {
        return Err(at(root, ParseErrorKind::XmlNoLabels));
    }
    Ok(names)
}
