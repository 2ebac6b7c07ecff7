//! Pipelines in MLIR's textual syntax:
//!
//! ```text
//! pipeline := element (',' element)*
//! element  := op-name '(' pipeline? ')'        a nested pass manager, run on each op of that
//!                                               name directly inside the current op
//!           | pass-name ('{' options '}')?
//! options  := (key ('=' value)?)*               separated by spaces; a bare key means true
//! ```
//!
//! Op names contain a dot (`compute.func`), pass names do not (`cse`). A value may be quoted
//! (`"a b"`) or braced (`{...}`) to hold spaces.

/// One element of a pipeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PipelineElement {
    /// A pass with its options as written.
    Pass {
        /// The registered name.
        name: String,
        /// `key=value` pairs in the order written.
        options: Vec<(String, String)>,
    },
    /// A nested pipeline run on ops named `op`.
    Nested {
        /// The op name.
        op: String,
        /// Its elements.
        elements: Vec<PipelineElement>,
    },
}

/// Parses a pipeline; the error says what is wrong and at which byte.
pub fn parse_pipeline(text: &str) -> Result<Vec<PipelineElement>, String> {
    let mut parser = PipelineParser { text, position: 0 };
    let elements = parser.list()?;
    parser.skip_spaces();
    if parser.position != text.len() {
        return Err(parser.error("unexpected text after the pipeline"));
    }
    Ok(elements)
}

/// Writes a pipeline back in the same syntax.
pub fn print_pipeline(elements: &[PipelineElement]) -> String {
    let mut out = String::new();
    for (i, element) in elements.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match element {
            PipelineElement::Pass { name, options } => {
                out.push_str(name);
                if !options.is_empty() {
                    let pairs: Vec<String> = options.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    out.push('{');
                    out.push_str(&pairs.join(" "));
                    out.push('}');
                }
            }
            PipelineElement::Nested { op, elements } => {
                out.push_str(op);
                out.push('(');
                out.push_str(&print_pipeline(elements));
                out.push(')');
            }
        }
    }
    out
}

struct PipelineParser<'a> {
    text: &'a str,
    position: usize,
}

impl PipelineParser<'_> {
    fn error(&self, message: &str) -> String {
        format!("invalid pass pipeline '{}': {message} at character {}", self.text, self.position + 1)
    }

    fn peek(&self) -> Option<char> {
        self.text[self.position..].chars().next()
    }

    fn skip_spaces(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.position += 1;
        }
    }

    fn name(&mut self) -> Result<String, String> {
        self.skip_spaces();
        let start = self.position;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '$')) {
            self.position += 1;
        }
        if start == self.position {
            return Err(self.error("expected a pass or op name"));
        }
        Ok(self.text[start..self.position].to_string())
    }

    fn list(&mut self) -> Result<Vec<PipelineElement>, String> {
        let mut elements = Vec::new();
        self.skip_spaces();
        if self.text.len() == self.position || self.peek() == Some(')') {
            return Ok(elements);
        }
        loop {
            elements.push(self.element()?);
            self.skip_spaces();
            if self.peek() != Some(',') {
                return Ok(elements);
            }
            self.position += 1;
        }
    }

    fn element(&mut self) -> Result<PipelineElement, String> {
        let name = self.name()?;
        self.skip_spaces();
        match self.peek() {
            Some('(') => {
                if !name.contains('.') {
                    return Err(self
                        .error(&format!("'{name}' is a pass name, not an op name: it cannot hold a nested pipeline")));
                }
                self.position += 1;
                let elements = self.list()?;
                self.skip_spaces();
                if self.peek() != Some(')') {
                    return Err(self.error("expected ')' to close the nested pipeline"));
                }
                self.position += 1;
                Ok(PipelineElement::Nested { op: name, elements })
            }
            Some('{') => {
                self.position += 1;
                let options = self.options()?;
                Ok(PipelineElement::Pass { name, options })
            }
            _ => Ok(PipelineElement::Pass { name, options: Vec::new() }),
        }
    }

    /// `key=value key2 ...}` (the `{` consumed).
    fn options(&mut self) -> Result<Vec<(String, String)>, String> {
        let mut options = Vec::new();
        loop {
            self.skip_spaces();
            match self.peek() {
                Some('}') => {
                    self.position += 1;
                    return Ok(options);
                }
                None => return Err(self.error("expected '}' to close the options")),
                _ => {}
            }
            let key = self.name()?;
            self.skip_spaces();
            let value = if self.peek() == Some('=') {
                self.position += 1;
                self.skip_spaces();
                self.value()?
            } else {
                "true".to_string()
            };
            options.push((key, value));
            self.skip_spaces();
            if self.peek() == Some(',') {
                self.position += 1;
            }
        }
    }

    fn value(&mut self) -> Result<String, String> {
        let start = self.position;
        match self.peek() {
            Some('"') => {
                self.position += 1;
                let end =
                    self.text[self.position..].find('"').ok_or_else(|| self.error("unterminated quoted value"))?;
                let value = self.text[self.position..self.position + end].to_string();
                self.position += end + 1;
                Ok(value)
            }
            Some('{') => {
                let mut depth = 0usize;
                while let Some(c) = self.peek() {
                    self.position += c.len_utf8();
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                return Ok(self.text[start + 1..self.position - 1].to_string());
                            }
                        }
                        _ => {}
                    }
                }
                Err(self.error("unbalanced '{' in an option value"))
            }
            _ => {
                while self.peek().is_some_and(|c| !c.is_whitespace() && !matches!(c, '}' | ',')) {
                    self.position += 1;
                }
                if start == self.position {
                    return Err(self.error("expected an option value"));
                }
                Ok(self.text[start..self.position].to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nested_pipelines_with_options() {
        let elements =
            parse_pipeline("builtin.module(compute.func(cse, canonicalize{max-iterations=5 fold}), dce)").unwrap();
        assert_eq!(
            print_pipeline(&elements),
            "builtin.module(compute.func(cse,canonicalize{max-iterations=5 fold=true}),dce)"
        );
    }

    #[test]
    fn reports_malformed_pipelines() {
        assert!(parse_pipeline("cse(dce)").unwrap_err().contains("is a pass name, not an op name"));
        assert!(parse_pipeline("builtin.module(cse").unwrap_err().contains("expected ')'"));
        assert!(parse_pipeline("cse{a=1").unwrap_err().contains("expected '}'"));
        assert!(parse_pipeline("cse,,dce").unwrap_err().contains("expected a pass or op name"));
    }

    #[test]
    fn quoted_and_braced_values_hold_spaces() {
        let elements = parse_pipeline(r#"p{a="x y" b={c=1 d=2}}"#).unwrap();
        let PipelineElement::Pass { options, .. } = &elements[0] else { panic!() };
        assert_eq!(options, &[("a".to_string(), "x y".to_string()), ("b".to_string(), "c=1 d=2".to_string())]);
    }
}
