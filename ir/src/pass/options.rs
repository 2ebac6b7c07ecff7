//! Typed pass options: `name{key=value other=value}` in a pipeline.
//!
//! A pass declares its options ([`PassOptionInfo`]: a key, an [`OptionKind`], a default); when a
//! pipeline is built, the options written for it are checked against those declarations and
//! parsed into [`OptionValue`]s, and the pass is created from the result ([`PassOptions`]). So a
//! pass never sees an unknown key or a value of the wrong type:
//! - an unknown key is an error that names the valid ones, and the closest of them when one is
//!   close enough to be a misspelling (`did you mean 'max-iterations'?`);
//! - a key given twice is an error;
//! - a value that does not parse as the option's kind is an error that says what was expected
//!   (with the closest choice of an enumeration);
//! - a declared default that does not parse is reported the same way (a bug in the pass).
//!
//! Reading an option the pass did not declare, or as another kind than declared, is a bug in the
//! pass: the typed getters panic with a message that names the option.

use std::collections::BTreeMap;

/// The type of an option's value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OptionKind {
    /// `true` / `false` (a bare key means `true`).
    Bool,
    /// A non-negative integer.
    Unsigned,
    /// An integer.
    Integer,
    /// Any text.
    String,
    /// One of the listed words.
    Enum(&'static [&'static str]),
}

impl OptionKind {
    /// What a value of this kind looks like, for error messages.
    fn expected(self) -> String {
        match self {
            OptionKind::Bool => "true or false".to_string(),
            OptionKind::Unsigned => "a non-negative integer".to_string(),
            OptionKind::Integer => "an integer".to_string(),
            OptionKind::String => "any text".to_string(),
            OptionKind::Enum(choices) => format!("one of: {}", choices.join(", ")),
        }
    }

    /// Parses `text` as a value of this kind.
    fn parse(self, text: &str) -> Option<OptionValue> {
        match self {
            OptionKind::Bool => match text {
                "true" => Some(OptionValue::Bool(true)),
                "false" => Some(OptionValue::Bool(false)),
                _ => None,
            },
            OptionKind::Unsigned => text.parse().ok().map(OptionValue::Unsigned),
            OptionKind::Integer => text.parse().ok().map(OptionValue::Integer),
            OptionKind::String => Some(OptionValue::String(text.to_string())),
            OptionKind::Enum(choices) => choices.iter().find(|&&c| c == text).map(|&c| OptionValue::Enum(c)),
        }
    }
}

/// An option a pass accepts.
#[derive(Copy, Clone, Debug)]
pub struct PassOptionInfo {
    /// Its key.
    pub name: &'static str,
    /// Its type.
    pub kind: OptionKind,
    /// Its value when not given.
    pub default: &'static str,
    /// One line for `--help`.
    pub help: &'static str,
}

/// The value of an option, of its declared kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptionValue {
    /// Of an [`OptionKind::Bool`] option.
    Bool(bool),
    /// Of an [`OptionKind::Unsigned`] option.
    Unsigned(u64),
    /// Of an [`OptionKind::Integer`] option.
    Integer(i64),
    /// Of an [`OptionKind::String`] option.
    String(String),
    /// Of an [`OptionKind::Enum`] option: one of its choices.
    Enum(&'static str),
}

impl std::fmt::Display for OptionValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptionValue::Bool(value) => write!(f, "{value}"),
            OptionValue::Unsigned(value) => write!(f, "{value}"),
            OptionValue::Integer(value) => write!(f, "{value}"),
            OptionValue::String(text) => f.write_str(text),
            OptionValue::Enum(choice) => f.write_str(choice),
        }
    }
}

/// The option values a pass is created with, validated against its [`PassOptionInfo`]s; every
/// declared option has a value of its kind (given or default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassOptions {
    /// By key: the value as written (or the default), and parsed.
    values: BTreeMap<&'static str, (String, OptionValue)>,
}

impl PassOptions {
    /// Checks `given` against `declared` and fills in defaults. The error says what is wrong
    /// (see the module documentation).
    pub fn validate(declared: &[PassOptionInfo], given: &[(String, String)]) -> Result<PassOptions, String> {
        let mut values = BTreeMap::new();
        for info in declared {
            let value = info.kind.parse(info.default).ok_or_else(|| {
                format!(
                    "the pass declares an invalid default '{}' for option '{}': expected {}",
                    info.default,
                    info.name,
                    info.kind.expected()
                )
            })?;
            values.insert(info.name, (info.default.to_string(), value));
        }
        let mut seen: Vec<&str> = Vec::new();
        for (key, text) in given {
            let Some(info) = declared.iter().find(|i| i.name == key) else {
                return Err(unknown_option(declared, key));
            };
            if seen.contains(&info.name) {
                return Err(format!("option '{key}' is given more than once"));
            }
            seen.push(info.name);
            let value = info.kind.parse(text).ok_or_else(|| invalid_value(info, text))?;
            values.insert(info.name, (text.clone(), value));
        }
        Ok(PassOptions { values })
    }

    /// The value of a declared option. Panics if the pass did not declare it.
    pub fn value(&self, name: &str) -> &OptionValue {
        match self.values.get(name) {
            Some((_, value)) => value,
            None => panic!("the pass reads option '{name}', which it does not declare"),
        }
    }

    /// The text of a declared option, as written or as its default. Panics if the pass did not
    /// declare it.
    pub fn get(&self, name: &str) -> &str {
        match self.values.get(name) {
            Some((text, _)) => text,
            None => panic!("the pass reads option '{name}', which it does not declare"),
        }
    }

    /// A boolean option. Panics if the pass did not declare it as [`OptionKind::Bool`].
    pub fn get_bool(&self, name: &str) -> bool {
        match self.value(name) {
            OptionValue::Bool(value) => *value,
            other => wrong_kind(name, "bool", other),
        }
    }

    /// An unsigned option. Panics if the pass did not declare it as [`OptionKind::Unsigned`].
    pub fn get_unsigned(&self, name: &str) -> u64 {
        match self.value(name) {
            OptionValue::Unsigned(value) => *value,
            other => wrong_kind(name, "unsigned", other),
        }
    }

    /// An integer option. Panics if the pass did not declare it as [`OptionKind::Integer`].
    pub fn get_integer(&self, name: &str) -> i64 {
        match self.value(name) {
            OptionValue::Integer(value) => *value,
            other => wrong_kind(name, "integer", other),
        }
    }

    /// `key=value` pairs in key order, as a pipeline shows them.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(key, (text, _))| (*key, text.as_str()))
    }
}

fn wrong_kind(name: &str, kind: &str, value: &OptionValue) -> ! {
    panic!("the pass reads option '{name}' as {kind}, but declares it otherwise (its value is {value:?})")
}

/// The error for an unknown key: the valid keys, and the closest one if it is close.
fn unknown_option(declared: &[PassOptionInfo], key: &str) -> String {
    let known: Vec<&str> = declared.iter().map(|i| i.name).collect();
    if known.is_empty() {
        return format!("unknown option '{key}': the pass takes no options");
    }
    let mut message = format!("unknown option '{key}' (expected one of: {})", known.join(", "));
    if let Some(close) = closest_match(key, &known) {
        message.push_str(&format!("; did you mean '{close}'?"));
    }
    message
}

fn invalid_value(info: &PassOptionInfo, text: &str) -> String {
    let mut message = format!("invalid value '{text}' for option '{}': expected {}", info.name, info.kind.expected());
    if let OptionKind::Enum(choices) = info.kind {
        if let Some(close) = closest_match(text, choices) {
            message.push_str(&format!("; did you mean '{close}'?"));
        }
    }
    message
}

/// The candidate nearest to `given` by edit distance, if it is near enough to be a misspelling:
/// at most a third of `given`'s length (rounded up) edits away, as LLVM's option parser does.
/// Ties go to the earlier candidate.
pub(crate) fn closest_match<'a>(given: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let limit = given.chars().count().div_ceil(3);
    candidates
        .iter()
        .map(|&candidate| (edit_distance(given, candidate), candidate))
        .filter(|&(distance, _)| distance <= limit)
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| candidate)
}

/// The Levenshtein distance between two strings (insertions, deletions and substitutions of
/// characters).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const DECLARED: &[PassOptionInfo] = &[
        PassOptionInfo { name: "max-iterations", kind: OptionKind::Unsigned, default: "10", help: "" },
        PassOptionInfo { name: "max-num-rewrites", kind: OptionKind::Integer, default: "-1", help: "" },
        PassOptionInfo { name: "fold", kind: OptionKind::Bool, default: "true", help: "" },
        PassOptionInfo { name: "label", kind: OptionKind::String, default: "seen", help: "" },
        PassOptionInfo {
            name: "order",
            kind: OptionKind::Enum(&["pre-order", "post-order"]),
            default: "pre-order",
            help: "",
        },
    ];

    fn given(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn values_are_parsed_to_their_kind_and_defaults_fill_the_rest() {
        let options = PassOptions::validate(
            DECLARED,
            &given(&[("max-iterations", "3"), ("fold", "false"), ("order", "post-order")]),
        )
        .unwrap();
        assert_eq!(options.get_unsigned("max-iterations"), 3);
        assert_eq!(options.get_integer("max-num-rewrites"), -1);
        assert!(!options.get_bool("fold"));
        assert_eq!(options.get("label"), "seen");
        assert_eq!(options.value("order"), &OptionValue::Enum("post-order"));
        let entries: Vec<String> = options.entries().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            entries,
            ["fold=false", "label=seen", "max-iterations=3", "max-num-rewrites=-1", "order=post-order"]
        );
    }

    #[test]
    fn an_unknown_option_names_the_valid_ones_and_a_close_one() {
        let error = PassOptions::validate(DECLARED, &given(&[("max-iteratons", "3")])).unwrap_err();
        assert_eq!(
            error,
            "unknown option 'max-iteratons' (expected one of: max-iterations, max-num-rewrites, fold, label, \
             order); did you mean 'max-iterations'?"
        );
        let error = PassOptions::validate(DECLARED, &given(&[("Fold", "true")])).unwrap_err();
        assert!(error.ends_with("did you mean 'fold'?"), "{error}");
        let error = PassOptions::validate(DECLARED, &given(&[("no-such-option", "1")])).unwrap_err();
        assert_eq!(
            error,
            "unknown option 'no-such-option' (expected one of: max-iterations, max-num-rewrites, fold, label, order)"
        );
        let error = PassOptions::validate(&[], &given(&[("fold", "true")])).unwrap_err();
        assert_eq!(error, "unknown option 'fold': the pass takes no options");
    }

    #[test]
    fn ill_typed_and_repeated_values_are_errors() {
        let error = PassOptions::validate(DECLARED, &given(&[("max-iterations", "-3")])).unwrap_err();
        assert_eq!(error, "invalid value '-3' for option 'max-iterations': expected a non-negative integer");
        let error = PassOptions::validate(DECLARED, &given(&[("fold", "yes")])).unwrap_err();
        assert_eq!(error, "invalid value 'yes' for option 'fold': expected true or false");
        let error = PassOptions::validate(DECLARED, &given(&[("order", "postorder")])).unwrap_err();
        assert_eq!(
            error,
            "invalid value 'postorder' for option 'order': expected one of: pre-order, post-order; did you mean \
             'post-order'?"
        );
        let error = PassOptions::validate(DECLARED, &given(&[("fold", "true"), ("fold", "false")])).unwrap_err();
        assert_eq!(error, "option 'fold' is given more than once");
    }

    #[test]
    fn an_invalid_default_is_reported() {
        let declared = [PassOptionInfo { name: "limit", kind: OptionKind::Unsigned, default: "many", help: "" }];
        let error = PassOptions::validate(&declared, &[]).unwrap_err();
        assert_eq!(
            error,
            "the pass declares an invalid default 'many' for option 'limit': expected a non-negative integer"
        );
    }

    #[test]
    #[should_panic(expected = "the pass reads option 'fold' as unsigned")]
    fn reading_an_option_as_another_kind_panics() {
        PassOptions::validate(DECLARED, &[]).unwrap().get_unsigned("fold");
    }

    #[test]
    #[should_panic(expected = "the pass reads option 'flod', which it does not declare")]
    fn reading_an_undeclared_option_panics() {
        PassOptions::validate(DECLARED, &[]).unwrap().get_bool("flod");
    }

    #[test]
    fn edit_distances_and_close_matches() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("max-iteratons", "max-iterations"), 1);
        assert_eq!(closest_match("regionsimplify", &["fold", "region-simplify"]), Some("region-simplify"));
        // "fod" is one edit from both: the first wins.
        assert_eq!(closest_match("fod", &["fold", "for"]), Some("fold"));
        assert_eq!(closest_match("colour", &["label"]), None);
        assert_eq!(closest_match("no-such-option", &["max-iterations", "max-num-rewrites", "region-simplify"]), None);
    }
}
