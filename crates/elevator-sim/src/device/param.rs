//! Named device-model parameters: what presets set and users override
//! (`--device hdd-7200,rpm=5400`), and what `elevator devices` lists.

use thiserror::Error;

/// A parameter's unit, for parsing and display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamUnit {
    /// A plain number.
    Count,
    /// Milliseconds (a value may be written `8.5`, `8.5ms`, `500us`).
    Millis,
    /// Microseconds (`75`, `75us`, `0.075ms`).
    Micros,
    /// Bytes (`4096`, `4k`, `64m`; powers of 1024).
    Bytes,
    /// Megabytes per second (10^6 bytes per second).
    MBps,
    /// Revolutions per minute.
    Rpm,
    /// 0 or 1 (`on`/`off`, `true`/`false` accepted).
    Bool,
}

impl ParamUnit {
    /// How the unit is written after a value.
    pub fn name(self) -> &'static str {
        match self {
            ParamUnit::Count => "",
            ParamUnit::Millis => "ms",
            ParamUnit::Micros => "us",
            ParamUnit::Bytes => "bytes",
            ParamUnit::MBps => "MB/s",
            ParamUnit::Rpm => "rpm",
            ParamUnit::Bool => "(0/1)",
        }
    }
}

/// A parameter with its current value, for listing.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamValue {
    /// Its name in `--device MODEL,name=value`.
    pub name: &'static str,
    /// Its value, in `unit`.
    pub value: f64,
    /// Unit.
    pub unit: ParamUnit,
    /// What it means, and where the preset's value comes from.
    pub help: &'static str,
}

/// A parameter that could not be set, or a set that cannot work together.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ParamError {
    /// No parameter of that name for this model.
    #[error("{model} has no parameter '{name}'{hint}; it has: {known}")]
    Unknown {
        /// The model.
        model: &'static str,
        /// The name given.
        name: String,
        /// `" (did you mean NAME?)"` when a known name is near, or empty.
        hint: String,
        /// The names that exist, comma-separated.
        known: String,
    },
    /// The text is not a value of the parameter's unit.
    #[error("{model}: {name}='{text}' is not a valid value ({why})")]
    BadValue {
        /// The model.
        model: &'static str,
        /// Parameter name.
        name: String,
        /// The text given.
        text: String,
        /// What was expected.
        why: String,
    },
    /// The value is outside what the model can take.
    #[error("{model}: {name}={value} is out of range: {why}")]
    OutOfRange {
        /// The model.
        model: &'static str,
        /// Parameter name.
        name: &'static str,
        /// The value given.
        value: f64,
        /// The allowed range or rule.
        why: String,
    },
}

/// Parse `text` as the value of `name`, one of a model's `params` (in its
/// unit); a name not among them is [`ParamError::Unknown`], listing them.
pub(crate) fn parse_listed(
    model: &'static str,
    params: &[ParamValue],
    name: &str,
    text: &str,
) -> Result<f64, ParamError> {
    let unit = params
        .iter()
        .find(|p| p.name == name)
        .map(|p| p.unit)
        .ok_or_else(|| super::null::unknown(model, name, params))?;
    parse_param(model, name, unit, text)
}

/// Parse `text` as a value of `unit` (returned in that unit).
pub fn parse_param(
    model: &'static str,
    name: &str,
    unit: ParamUnit,
    text: &str,
) -> Result<f64, ParamError> {
    let bad = |why: &str| ParamError::BadValue {
        model,
        name: name.to_string(),
        text: text.to_string(),
        why: why.to_string(),
    };
    let t = text.trim().to_ascii_lowercase();
    if unit == ParamUnit::Bool {
        return match t.as_str() {
            "0" | "off" | "false" | "no" => Ok(0.0),
            "1" | "on" | "true" | "yes" => Ok(1.0),
            _ => Err(bad("expected 0 or 1")),
        };
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| bad("expected a non-negative number"))?;
    if !n.is_finite() {
        return Err(bad("expected a finite number"));
    }
    let suffix = suffix.trim();
    let scale = match (unit, suffix) {
        (_, "") => 1.0,
        (ParamUnit::Millis, "ms") | (ParamUnit::Micros, "us") => 1.0,
        (ParamUnit::Millis, "us") => 1e-3,
        (ParamUnit::Millis, "s") => 1e3,
        (ParamUnit::Micros, "ms") => 1e3,
        (ParamUnit::Micros, "ns") => 1e-3,
        (ParamUnit::Bytes, "k" | "kb" | "kib") => 1024.0,
        (ParamUnit::Bytes, "m" | "mb" | "mib") => 1024.0 * 1024.0,
        (ParamUnit::Bytes, "g" | "gb" | "gib") => 1024.0 * 1024.0 * 1024.0,
        (ParamUnit::Bytes, "t" | "tb" | "tib") => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        (ParamUnit::MBps, "mb/s" | "mbps") | (ParamUnit::Rpm, "rpm") => 1.0,
        (ParamUnit::MBps, "gb/s") => 1000.0,
        _ => {
            return Err(bad(&format!(
                "unit suffix '{suffix}' does not fit {}",
                unit.name()
            )));
        }
    };
    Ok(n * scale)
}
