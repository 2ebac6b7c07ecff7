//! Typed pass options: `name{key=value other=value}` in a pipeline.

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

/// The option values a pass is created with, validated against its [`PassOptionInfo`]s; every
/// declared option has a value (given or default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassOptions {
    values: BTreeMap<String, String>,
}

impl PassOptions {
    /// Checks `given` against `declared` and fills in defaults.
    pub fn validate(declared: &[PassOptionInfo], given: &[(String, String)]) -> Result<PassOptions, String> {
        let mut values = BTreeMap::new();
        for info in declared {
            values.insert(info.name.to_string(), info.default.to_string());
        }
        for (key, value) in given {
            let Some(info) = declared.iter().find(|i| i.name == key) else {
                let known: Vec<&str> = declared.iter().map(|i| i.name).collect();
                return Err(if known.is_empty() {
                    format!("unknown option '{key}': the pass takes no options")
                } else {
                    format!("unknown option '{key}' (expected one of: {})", known.join(", "))
                });
            };
            check_value(info, value)?;
            values.insert(key.clone(), value.clone());
        }
        Ok(PassOptions { values })
    }

    /// The text of an option.
    pub fn get(&self, name: &str) -> &str {
        self.values.get(name).map(String::as_str).unwrap_or("")
    }

    /// A boolean option.
    pub fn get_bool(&self, name: &str) -> bool {
        self.get(name) == "true"
    }

    /// An unsigned option.
    pub fn get_unsigned(&self, name: &str) -> u64 {
        self.get(name).parse().unwrap_or(0)
    }

    /// An integer option.
    pub fn get_integer(&self, name: &str) -> i64 {
        self.get(name).parse().unwrap_or(0)
    }

    /// `key=value` pairs in key order, as a pipeline shows them.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

fn check_value(info: &PassOptionInfo, value: &str) -> Result<(), String> {
    let ok = match info.kind {
        OptionKind::Bool => matches!(value, "true" | "false"),
        OptionKind::Unsigned => value.parse::<u64>().is_ok(),
        OptionKind::Integer => value.parse::<i64>().is_ok(),
        OptionKind::String => true,
        OptionKind::Enum(choices) => choices.contains(&value),
    };
    if ok {
        return Ok(());
    }
    let expected = match info.kind {
        OptionKind::Bool => "true or false".to_string(),
        OptionKind::Unsigned => "a non-negative integer".to_string(),
        OptionKind::Integer => "an integer".to_string(),
        OptionKind::String => unreachable!("strings are always valid"),
        OptionKind::Enum(choices) => format!("one of: {}", choices.join(", ")),
    };
    Err(format!("invalid value '{value}' for option '{}': expected {expected}", info.name))
}
