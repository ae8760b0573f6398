//! Byte-level line reading and tokenising shared by the readers: no per-token allocation.

use std::io::BufRead;

use super::error::{show, DataError, ParseErrorKind, Result};

/// Reads lines into one reused buffer, tracking the 1-based line number.
pub(crate) struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    pub line_no: usize,
    /// Whether the current line was terminated by `\n` (false for a last line cut at EOF).
    pub terminated: bool,
    /// Length of the last line read (kept after the end of input, for [`Self::eof`]).
    last_len: usize,
}

impl<R: BufRead> Lines<R> {
    pub(super) fn new(reader: R) -> Self {
        Self {
            reader,
            buf: Vec::with_capacity(4096),
            line_no: 0,
            terminated: true,
            last_len: 0,
        }
    }

    /// 1-based line and column of the end of input (after [`Self::advance`] returned `false`):
    /// the start of the line after the last, or the end of an unterminated last line.
    pub(super) fn eof(&self) -> (usize, usize) {
        if self.terminated {
            (self.line_no + 1, 1)
        } else {
            (self.line_no, self.last_len + 1)
        }
    }

    /// Advances to the next line; `false` at end of input. The line excludes `\n` and a final `\r`.
    pub(super) fn advance(&mut self) -> Result<bool> {
        self.buf.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(DataError::io)?;
        if n == 0 {
            return Ok(false);
        }
        self.line_no += 1;
        self.terminated = self.buf.last() == Some(&b'\n');
        if self.terminated {
            self.buf.pop();
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        // A UTF-8 byte order mark (Windows editors) is not part of the first line.
        if self.line_no == 1 && self.buf.starts_with(b"\xEF\xBB\xBF") {
            self.buf.drain(..3);
        }
        self.last_len = self.buf.len();
        Ok(true)
    }

    pub(super) fn line(&self) -> &[u8] {
        &self.buf
    }

    /// A cursor over the current line.
    pub(super) fn cursor(&self) -> Cur<'_> {
        Cur {
            s: &self.buf,
            pos: 0,
            line: self.line_no,
            terminated: self.terminated,
        }
    }
}

/// Whether a line is blank or holds only whitespace.
pub(crate) fn is_blank(s: &[u8]) -> bool {
    s.iter().all(|b| b.is_ascii_whitespace())
}

/// A position in one line.
#[derive(Clone, Copy)]
pub(crate) struct Cur<'a> {
    pub s: &'a [u8],
    pub pos: usize,
    pub line: usize,
    pub terminated: bool,
}

impl<'a> Cur<'a> {
    #[inline]
    pub(super) fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    #[inline]
    pub(super) fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    #[inline]
    pub(super) fn skip_ws(&mut self) {
        while let Some(b) = self.peek() {
            if b == b' ' || b == b'\t' {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    /// 1-based byte column of the current position.
    #[inline]
    pub(super) fn col(&self) -> usize {
        self.pos + 1
    }

    pub(super) fn err_at(&self, pos: usize, kind: ParseErrorKind) -> DataError {
        DataError::parse(self.line, pos + 1, kind)
    }

    pub(super) fn err(&self, kind: ParseErrorKind) -> DataError {
        self.err_at(self.pos, kind)
    }

    /// Error for a missing item: "end of file" on an unterminated last line, else what was found.
    pub(super) fn expected(&self, expected: &'static str) -> DataError {
        if self.at_end() && !self.terminated {
            return self.err(ParseErrorKind::UnexpectedEof { expected });
        }
        let end = self.s[self.pos..]
            .iter()
            .position(|b| b.is_ascii_whitespace() || matches!(b, b',' | b'}' | b'{'))
            .map_or(self.s.len(), |k| self.pos + k.max(1));
        self.err(ParseErrorKind::Expected {
            expected,
            found: show(&self.s[self.pos..end]),
        })
    }

    /// Consumes `b` or fails with "expected `what`".
    pub(super) fn expect(&mut self, b: u8, what: &'static str) -> Result<()> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    /// Parses an unsigned decimal integer (at least one digit).
    pub(super) fn uint(&mut self, what: &'static str) -> Result<u64> {
        let start = self.pos;
        let mut v: u64 = 0;
        while let Some(b) = self.peek() {
            if !b.is_ascii_digit() {
                break;
            }
            v = match v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(b - b'0')))
            {
                Some(v) => v,
                None => {
                    return Err(self.err_at(
                        start,
                        ParseErrorKind::Expected {
                            expected: what,
                            found: "an integer that overflows 64 bits".into(),
                        },
                    ))
                }
            };
            self.pos += 1;
        }
        if self.pos == start {
            return Err(self.expected(what));
        }
        Ok(v)
    }

    /// Takes bytes up to (not including) whitespace or any of `stops`.
    pub(super) fn word(&mut self, stops: &[u8]) -> &'a [u8] {
        let start = self.pos;
        while let Some(b) = self.peek() {
            if b == b' ' || b == b'\t' || stops.contains(&b) {
                break;
            }
            self.pos += 1;
        }
        &self.s[start..self.pos]
    }

    /// Reads a name or value: `'...'` or `"..."` with backslash escapes, else a bare word ending at
    /// whitespace or one of `stops`. Unescaped text goes to `out` (cleared first).
    pub(super) fn name_into(
        &mut self,
        stops: &[u8],
        out: &mut Vec<u8>,
        what: &'static str,
    ) -> Result<()> {
        out.clear();
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => {
                let start = self.pos;
                self.pos += 1;
                loop {
                    match self.peek() {
                        None => {
                            return Err(self.err_at(
                                start,
                                ParseErrorKind::Expected {
                                    expected: "a closing quote",
                                    found: "end of line".into(),
                                },
                            ))
                        }
                        Some(b'\\') => {
                            self.pos += 1;
                            let e = self
                                .peek()
                                .ok_or_else(|| self.expected("an escaped character"))?;
                            out.push(match e {
                                b'n' => b'\n',
                                b't' => b'\t',
                                b'r' => b'\r',
                                other => other,
                            });
                            self.pos += 1;
                        }
                        Some(b) if b == q => {
                            self.pos += 1;
                            return Ok(());
                        }
                        Some(b) => {
                            out.push(b);
                            self.pos += 1;
                        }
                    }
                }
            }
            _ => {
                let w = self.word(stops);
                if w.is_empty() {
                    return Err(self.expected(what));
                }
                out.extend_from_slice(w);
                Ok(())
            }
        }
    }

    /// Fails unless only whitespace or a `%`/`#` comment (per `comment`) remains.
    pub(super) fn expect_end(&mut self, comment: u8) -> Result<()> {
        self.skip_ws();
        match self.peek() {
            None => Ok(()),
            Some(b) if b == comment => Ok(()),
            Some(_) => Err(self.expected("end of line")),
        }
    }
}

/// Parses a finite number from bytes without allocating; `0` and `1` take a fast path.
#[inline]
pub(crate) fn parse_f32(tok: &[u8]) -> Option<f32> {
    match tok {
        b"1" => Some(1.0),
        b"0" => Some(0.0),
        _ => {
            let v: f32 = std::str::from_utf8(tok).ok()?.parse().ok()?;
            v.is_finite().then_some(v)
        }
    }
}
