//! A small parser for Python literals: the subset of `ast.literal_eval` that Sapling presets and
//! tree-gen parameter modules use (dicts, tuples, lists, strings, ints, floats, `True`, `False`,
//! `None`, unary signs on numbers, implicit string concatenation, `#` comments).
//!
//! It is written for untrusted input: nesting depth and the number of values are capped, the
//! input is read once from left to right, and every error carries the line and column.

use std::fmt;

/// Deepest nesting of containers accepted.
pub const MAX_DEPTH: usize = 32;
/// Most values (of any kind, containers included) one parse may produce.
pub const MAX_VALUES: usize = 100_000;

/// A Python literal value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Tuple(Vec<Value>),
    List(Vec<Value>),
    /// Key/value pairs in source order (duplicates kept; [`Value::dict_get`] takes the last).
    Dict(Vec<(Value, Value)>),
}

impl Value {
    /// The Python type name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Tuple(_) => "tuple",
            Value::List(_) => "list",
            Value::Dict(_) => "dict",
        }
    }

    /// A number as f64 (ints and floats; not bools).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            _ => None,
        }
    }

    /// The items of a tuple or list.
    pub fn as_seq(&self) -> Option<&[Value]> {
        match self {
            Value::Tuple(v) | Value::List(v) => Some(v),
            _ => None,
        }
    }

    /// The value of a string key in a dict (the last one, as in Python).
    pub fn dict_get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Dict(pairs) => pairs
                .iter()
                .rev()
                .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    /// Python's `repr` style (floats use Rust's shortest round-trip form).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn seq(f: &mut fmt::Formatter<'_>, items: &[Value], open: &str, close: &str) -> fmt::Result {
            f.write_str(open)?;
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{v}")?;
            }
            if open == "(" && items.len() == 1 {
                f.write_str(",")?;
            }
            f.write_str(close)
        }
        match self {
            Value::None => f.write_str("None"),
            Value::Bool(true) => f.write_str("True"),
            Value::Bool(false) => f.write_str("False"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => {
                if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e16 {
                    write!(f, "{x:.1}")
                } else {
                    write!(f, "{x}")
                }
            }
            Value::Str(s) => {
                f.write_str("'")?;
                for c in s.chars() {
                    match c {
                        '\\' => f.write_str("\\\\")?,
                        '\'' => f.write_str("\\'")?,
                        '\n' => f.write_str("\\n")?,
                        '\r' => f.write_str("\\r")?,
                        '\t' => f.write_str("\\t")?,
                        c if (c as u32) < 0x20 || c as u32 == 0x7f => write!(f, "\\x{:02x}", c as u32)?,
                        c => write!(f, "{c}")?,
                    }
                }
                f.write_str("'")
            }
            Value::Tuple(v) => seq(f, v, "(", ")"),
            Value::List(v) => seq(f, v, "[", "]"),
            Value::Dict(pairs) => {
                f.write_str("{")?;
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

/// A syntax error with its 1-based line and column.
#[derive(Clone, Debug, PartialEq)]
pub struct PyError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for PyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
    }
}

/// A cursor over Python source text.
pub struct Parser<'a> {
    src: &'a str,
    pos: usize,
    values: usize,
}

impl<'a> Parser<'a> {
    pub fn new(src: &'a str) -> Parser<'a> {
        Parser { src, pos: 0, values: 0 }
    }

    /// Byte offset of the cursor.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The text not yet read.
    pub fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    /// An error at the cursor.
    pub fn error(&self, message: impl Into<String>) -> PyError {
        self.error_at(self.pos, message)
    }

    /// An error at a byte offset.
    pub fn error_at(&self, pos: usize, message: impl Into<String>) -> PyError {
        let before = &self.src[..pos.min(self.src.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        PyError {
            line,
            column,
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Skips spaces, tabs, newlines, backslash line continuations and `#` comments.
    pub fn skip_ws(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\n' | '\r' | '\x0c') => {
                    self.pos += 1;
                }
                Some('\\') if self.rest()[1..].starts_with('\n') || self.rest()[1..].starts_with("\r\n") => {
                    self.pos += 1;
                }
                Some('#') => {
                    let rest = self.rest();
                    self.pos += rest.find('\n').unwrap_or(rest.len());
                }
                _ => return,
            }
        }
    }

    /// Skips spaces, tabs and comments on the current line only (not the newline).
    pub fn skip_line_ws(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\x0c') => self.pos += 1,
                Some('#') => {
                    let rest = self.rest();
                    self.pos += rest.find('\n').unwrap_or(rest.len());
                }
                _ => return,
            }
        }
    }

    /// Whether only whitespace and comments remain.
    pub fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.pos >= self.src.len()
    }

    /// Reads an identifier (ASCII letters, digits, `_`), if one starts here.
    pub fn ident(&mut self) -> Option<&'a str> {
        let rest = self.rest();
        let first = rest.chars().next()?;
        if !(first.is_ascii_alphabetic() || first == '_') {
            return None;
        }
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        self.pos += len;
        Some(&rest[..len])
    }

    /// Consumes `c` if it is next.
    pub fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn count_value(&mut self) -> Result<(), PyError> {
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(self.error(format!("more than {MAX_VALUES} values: too large for a tree spec")));
        }
        Ok(())
    }

    /// Parses one literal value (leading whitespace and comments skipped).
    pub fn value(&mut self) -> Result<Value, PyError> {
        self.value_at(0)
    }

    fn value_at(&mut self, depth: usize) -> Result<Value, PyError> {
        self.skip_ws();
        self.count_value()?;
        let start = self.pos;
        match self.peek() {
            None => Err(self.error("unexpected end of input: a value is missing")),
            Some('{') => {
                self.check_depth(depth)?;
                self.pos += 1;
                self.dict(depth + 1, start)
            }
            Some('[') => {
                self.check_depth(depth)?;
                self.pos += 1;
                let items = self.items(']', depth + 1, start)?;
                Ok(Value::List(items.0))
            }
            Some('(') => {
                self.check_depth(depth)?;
                self.pos += 1;
                let (items, trailing_comma) = self.items(')', depth + 1, start)?;
                if items.len() == 1 && !trailing_comma {
                    // A parenthesised value, not a tuple.
                    Ok(items.into_iter().next().unwrap_or(Value::None))
                } else {
                    Ok(Value::Tuple(items))
                }
            }
            Some('\'' | '"') => self.strings(),
            Some('-' | '+') => {
                let neg = self.bump() == Some('-');
                self.skip_ws();
                match self.peek() {
                    Some(c) if c.is_ascii_digit() || c == '.' => {}
                    _ => return Err(self.error("a sign must be followed by a number")),
                }
                match self.number()? {
                    Value::Int(i) => Ok(Value::Int(if neg { -i } else { i })),
                    Value::Float(x) => Ok(Value::Float(if neg { -x } else { x })),
                    _ => Err(self.error_at(start, "a sign must be followed by a number")),
                }
            }
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let word = self.ident().unwrap_or_default();
                match word {
                    "True" => Ok(Value::Bool(true)),
                    "False" => Ok(Value::Bool(false)),
                    "None" => Ok(Value::None),
                    // String prefixes: u'', r'' (bytes and f-strings are not literals we accept).
                    "u" | "U" | "r" | "R" if matches!(self.peek(), Some('\'' | '"')) => {
                        self.pos = start;
                        self.strings()
                    }
                    _ => Err(self.error_at(
                        start,
                        format!("'{word}' is not a literal (allowed: numbers, strings, True, False, None, dicts, lists, tuples)"),
                    )),
                }
            }
            Some(c) => Err(self.error(format!("unexpected character '{}'", c.escape_debug()))),
        }
    }

    fn check_depth(&self, depth: usize) -> Result<(), PyError> {
        if depth >= MAX_DEPTH {
            Err(self.error(format!("nesting deeper than {MAX_DEPTH} levels")))
        } else {
            Ok(())
        }
    }

    /// Items up to `close`; returns them and whether a trailing comma was present.
    fn items(&mut self, close: char, depth: usize, start: usize) -> Result<(Vec<Value>, bool), PyError> {
        let mut items = Vec::new();
        let mut trailing_comma = false;
        loop {
            self.skip_ws();
            if self.eat(close) {
                return Ok((items, trailing_comma));
            }
            if self.peek().is_none() {
                return Err(self.error_at(
                    start,
                    format!("unclosed '{}': input ends before '{close}'", open_of(close)),
                ));
            }
            items.push(self.value_at(depth)?);
            self.skip_ws();
            trailing_comma = false;
            if self.eat(',') {
                trailing_comma = true;
                continue;
            }
            if self.eat(close) {
                return Ok((items, trailing_comma));
            }
            return match self.peek() {
                None => Err(self.error_at(
                    start,
                    format!("unclosed '{}': input ends before '{close}'", open_of(close)),
                )),
                Some(c) => Err(self.error(format!("expected ',' or '{close}', found '{}'", c.escape_debug()))),
            };
        }
    }

    fn dict(&mut self, depth: usize, start: usize) -> Result<Value, PyError> {
        let mut pairs = Vec::new();
        loop {
            self.skip_ws();
            if self.eat('}') {
                return Ok(Value::Dict(pairs));
            }
            if self.peek().is_none() {
                return Err(self.error_at(start, "unclosed '{': input ends before '}'"));
            }
            let key_pos = self.pos;
            let key = self.value_at(depth)?;
            if matches!(key, Value::List(_) | Value::Dict(_)) {
                return Err(self.error_at(key_pos, format!("a {} cannot be a dict key", key.type_name())));
            }
            self.skip_ws();
            if !self.eat(':') {
                return match self.peek() {
                    None => Err(self.error_at(start, "unclosed '{': input ends before '}'")),
                    Some(',' | '}') => Err(self.error("expected ':' after a dict key (sets are not supported)")),
                    Some(c) => Err(self.error(format!("expected ':' after a dict key, found '{}'", c.escape_debug()))),
                };
            }
            let value = self.value_at(depth)?;
            pairs.push((key, value));
            self.skip_ws();
            if self.eat(',') {
                continue;
            }
            if self.eat('}') {
                return Ok(Value::Dict(pairs));
            }
            return match self.peek() {
                None => Err(self.error_at(start, "unclosed '{': input ends before '}'")),
                Some(c) => Err(self.error(format!("expected ',' or '}}', found '{}'", c.escape_debug()))),
            };
        }
    }

    /// One or more adjacent string literals (Python concatenates them).
    fn strings(&mut self) -> Result<Value, PyError> {
        let mut out = self.string()?;
        loop {
            let save = self.pos;
            self.skip_ws();
            let rest = self.rest();
            let next_is_string = rest.starts_with(['\'', '"'])
                || ((rest.starts_with(['u', 'U', 'r', 'R'])) && rest[1..].starts_with(['\'', '"']));
            if !next_is_string {
                self.pos = save;
                return Ok(Value::Str(out));
            }
            out.push_str(&self.string()?);
        }
    }

    /// One string literal, with an optional `u`/`r` prefix; triple quotes allowed.
    pub fn string(&mut self) -> Result<String, PyError> {
        let start = self.pos;
        let mut raw = false;
        if let Some(c @ ('u' | 'U' | 'r' | 'R')) = self.peek() {
            raw = matches!(c, 'r' | 'R');
            self.pos += 1;
        }
        let quote = match self.bump() {
            Some(q @ ('\'' | '"')) => q,
            _ => return Err(self.error_at(start, "expected a string")),
        };
        let triple = self.rest().starts_with(&format!("{quote}{quote}"));
        if triple {
            self.pos += 2;
        }
        let mut out = String::new();
        loop {
            let c = match self.bump() {
                Some(c) => c,
                None => return Err(self.error_at(start, "unterminated string: input ends inside it")),
            };
            if c == quote {
                if !triple {
                    return Ok(out);
                }
                if self.rest().starts_with(&format!("{quote}{quote}")) {
                    self.pos += 2;
                    return Ok(out);
                }
                out.push(c);
                continue;
            }
            if c == '\n' && !triple {
                return Err(self.error_at(start, "unterminated string: a line ends inside it"));
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let e = match self.bump() {
                Some(e) => e,
                None => return Err(self.error_at(start, "unterminated string: input ends inside it")),
            };
            if raw {
                out.push('\\');
                out.push(e);
                continue;
            }
            match e {
                '\n' => {}
                '\r' => {
                    self.eat('\n');
                }
                '\\' | '\'' | '"' => out.push(e),
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'a' => out.push('\x07'),
                'b' => out.push('\x08'),
                'f' => out.push('\x0c'),
                'v' => out.push('\x0b'),
                '0'..='7' => {
                    let mut v = e.to_digit(8).unwrap_or(0);
                    for _ in 0..2 {
                        match self.peek().and_then(|d| d.to_digit(8)) {
                            Some(d) => {
                                v = v * 8 + d;
                                self.pos += 1;
                            }
                            None => break,
                        }
                    }
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                }
                'x' => out.push(self.hex_escape(2)?),
                'u' => out.push(self.hex_escape(4)?),
                'U' => out.push(self.hex_escape(8)?),
                other => {
                    // Python keeps unknown escapes as written.
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }

    fn hex_escape(&mut self, digits: usize) -> Result<char, PyError> {
        let at = self.pos;
        let rest = self.rest();
        if rest.len() < digits || !rest.is_char_boundary(digits) {
            return Err(self.error_at(at, format!("an escape needs {digits} hex digits")));
        }
        let hex = &rest[..digits];
        let v = u32::from_str_radix(hex, 16)
            .ok()
            .filter(|_| hex.chars().all(|c| c.is_ascii_hexdigit()));
        match v.and_then(char::from_u32) {
            Some(c) => {
                self.pos += digits;
                Ok(c)
            }
            None => Err(self.error_at(
                at,
                format!("invalid escape: '{hex}' is not {digits} hex digits of a character"),
            )),
        }
    }

    /// An unsigned int or float literal.
    fn number(&mut self) -> Result<Value, PyError> {
        let start = self.pos;
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
            .unwrap_or(rest.len());
        // An exponent sign belongs to the number: 1e-5, 2.5E+3.
        let mut len = len;
        let bytes = rest.as_bytes();
        while len < bytes.len()
            && (bytes[len] == b'-' || bytes[len] == b'+')
            && len > 0
            && (bytes[len - 1] == b'e' || bytes[len - 1] == b'E')
            && !rest[..len].starts_with("0x")
            && !rest[..len].starts_with("0X")
        {
            let more = rest[len + 1..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
                .unwrap_or(rest.len() - len - 1);
            len += 1 + more;
        }
        let word = &rest[..len];
        self.pos += len;
        let bad = |p: &Parser<'_>| p.error_at(start, format!("'{word}' is not a valid number"));
        if word.starts_with('_') || word.ends_with('_') || word.contains("__") {
            return Err(bad(self));
        }
        let clean: String = word.chars().filter(|&c| c != '_').collect();
        let lower = clean.to_ascii_lowercase();
        for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
            if let Some(digits) = lower.strip_prefix(prefix) {
                return match i64::from_str_radix(digits, radix) {
                    Ok(v) if !digits.is_empty() && !digits.starts_with(['+', '-']) => Ok(Value::Int(v)),
                    Err(e) if matches!(e.kind(), std::num::IntErrorKind::PosOverflow) => {
                        Err(self.error_at(start, format!("integer {word} is too large (limit {})", i64::MAX)))
                    }
                    _ => Err(bad(self)),
                };
            }
        }
        if lower.bytes().all(|b| b.is_ascii_digit()) {
            if lower.len() > 1 && lower.starts_with('0') && lower.bytes().any(|b| b != b'0') {
                return Err(self.error_at(start, format!("'{word}': leading zeros are not allowed in an int")));
            }
            return match lower.parse::<i64>() {
                Ok(v) => Ok(Value::Int(v)),
                Err(_) => Err(self.error_at(start, format!("integer {word} is too large (limit {})", i64::MAX))),
            };
        }
        // A float: digits with one '.', and/or an exponent.
        let (mantissa, exponent) = match lower.find('e') {
            Some(i) => (&lower[..i], Some(&lower[i + 1..])),
            None => (&lower[..], None),
        };
        let mantissa_ok = !mantissa.is_empty()
            && mantissa.bytes().filter(|&b| b == b'.').count() <= 1
            && mantissa.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            && mantissa.bytes().any(|b| b.is_ascii_digit());
        let exponent_ok = exponent.is_none_or(|e| {
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
        });
        if !mantissa_ok || !exponent_ok {
            return Err(bad(self));
        }
        match lower.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Value::Float(v)),
            // Python reads 1e400 as inf; no parameter may be infinite.
            Ok(_) => Err(self.error_at(
                start,
                format!("'{word}' is beyond the largest float (it would be read as infinity); allowed: finite numbers"),
            )),
            Err(_) => Err(bad(self)),
        }
    }
}

fn open_of(close: char) -> char {
    match close {
        ']' => '[',
        ')' => '(',
        _ => '{',
    }
}

/// Parses text that holds exactly one literal (surrounding whitespace and comments allowed).
pub fn parse_literal(src: &str) -> Result<Value, PyError> {
    let mut p = Parser::new(src);
    let v = p.value()?;
    if !p.at_end() {
        return Err(p.error("unexpected text after the value"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars() {
        assert_eq!(parse_literal("True").unwrap(), Value::Bool(true));
        assert_eq!(parse_literal(" None ").unwrap(), Value::None);
        assert_eq!(parse_literal("-0").unwrap(), Value::Int(0));
        assert_eq!(parse_literal("-12").unwrap(), Value::Int(-12));
        assert_eq!(parse_literal("1_000").unwrap(), Value::Int(1000));
        assert_eq!(parse_literal("0x1f").unwrap(), Value::Int(31));
        assert_eq!(parse_literal("2.5e-3").unwrap(), Value::Float(2.5e-3));
        assert_eq!(parse_literal("1E+2").unwrap(), Value::Float(100.0));
        assert_eq!(parse_literal("5.").unwrap(), Value::Float(5.0));
        assert_eq!(parse_literal(".5").unwrap(), Value::Float(0.5));
        let neg_zero = parse_literal("-0.0").unwrap();
        assert!(matches!(neg_zero, Value::Float(z) if z == 0.0 && z.is_sign_negative()));
        assert_eq!(
            parse_literal("0.20000000298023224").unwrap(),
            Value::Float(0.20000000298023224)
        );
    }

    #[test]
    fn strings() {
        assert_eq!(parse_literal("'a\\'b'").unwrap(), Value::Str("a'b".into()));
        assert_eq!(parse_literal("\"x\\ny\"").unwrap(), Value::Str("x\ny".into()));
        assert_eq!(parse_literal("'a' \"b\"").unwrap(), Value::Str("ab".into()));
        assert_eq!(parse_literal("'''a\n'b'''").unwrap(), Value::Str("a\n'b".into()));
        assert_eq!(parse_literal("r'\\d'").unwrap(), Value::Str("\\d".into()));
        assert_eq!(parse_literal("'\\x41\\u00e9'").unwrap(), Value::Str("Aé".into()));
    }

    #[test]
    fn containers() {
        let v = parse_literal("{'a': (1, 2.0), 'b': [True, None,], 'c': (3,), 'd': (4), 'a': 5}").unwrap();
        assert_eq!(v.dict_get("a"), Some(&Value::Int(5)));
        assert_eq!(
            v.dict_get("b"),
            Some(&Value::List(vec![Value::Bool(true), Value::None]))
        );
        assert_eq!(v.dict_get("c"), Some(&Value::Tuple(vec![Value::Int(3)])));
        assert_eq!(v.dict_get("d"), Some(&Value::Int(4)));
        assert_eq!(parse_literal("()").unwrap(), Value::Tuple(vec![]));
        let v = parse_literal("{\n  'x': 1, # comment\n  'y': [1,\n 2]\n}").unwrap();
        assert_eq!(v.dict_get("y"), Some(&Value::List(vec![Value::Int(1), Value::Int(2)])));
    }

    #[test]
    fn errors_carry_positions() {
        let e = parse_literal("{'a': 1,\n 'b': }").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(parse_literal("{'a': (1, 2").unwrap_err().message.contains("unclosed"));
        assert!(parse_literal("'abc").unwrap_err().message.contains("unterminated"));
        assert!(parse_literal("{1, 2}").unwrap_err().message.contains("sets"));
        assert!(parse_literal("007").is_err());
        assert!(parse_literal("1.2.3").is_err());
        assert!(parse_literal("99999999999999999999")
            .unwrap_err()
            .message
            .contains("too large"));
        assert!(parse_literal("foo").is_err());
        assert!(parse_literal("{'a': 1} x").is_err());
        assert!(parse_literal("- 'a'").is_err());
    }

    #[test]
    fn limits() {
        let deep = "[".repeat(MAX_DEPTH + 5) + &"]".repeat(MAX_DEPTH + 5);
        assert!(parse_literal(&deep).unwrap_err().message.contains("nesting"));
        let many = format!("[{}]", "0,".repeat(MAX_VALUES + 1));
        assert!(parse_literal(&many).unwrap_err().message.contains("values"));
    }

    #[test]
    fn display_is_python_like() {
        let v = parse_literal("{'a': (1.0, 2.5), 'b': 'it''s', 'c': (1,)}").unwrap();
        assert_eq!(v.to_string(), "{'a': (1.0, 2.5), 'b': 'its', 'c': (1,)}");
    }
}
